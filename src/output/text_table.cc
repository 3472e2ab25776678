#include "output/text_table.h"

#include <algorithm>

#include "output/format.h"

namespace output {

namespace {
constexpr size_t kGap = 2;         // spaces between columns
constexpr size_t kMinNameWidth = 24;   // columns for a name behind its prefix
constexpr size_t kMaxPrefixBudget = 30;  // deeper prefixes do not cost more columns
}  // namespace

const TreeGlyphs& Glyphs(bool ascii) {
  static const TreeGlyphs unicode{"├─ ", "└─ ", "│  ", "   "};
  static const TreeGlyphs plain{"|- ", "`- ", "|  ", "   "};
  return ascii ? plain : unicode;
}

void TextTable::AddRow(std::vector<std::string> cells, std::string name_prefix, std::string name) {
  cells.resize(columns_.size());
  if (fixed_) {
    Emit(*stream_, *fixed_, stream_ascii_, cells, name_prefix, name);
    return;
  }
  rows_.push_back(Row{std::move(cells), std::move(name_prefix), std::move(name)});
  if (stream_ != nullptr && rows_.size() > stream_after_) {
    fixed_ = Fit(stream_width_, &stream_bounds_);
    EmitHeader(*stream_, *fixed_, stream_ascii_);
    for (const Row& r : rows_) Emit(*stream_, *fixed_, stream_ascii_, r.cells, r.prefix, r.name);
    rows_.clear();
    rows_.shrink_to_fit();
  }
}

void TextTable::AddRowView(const std::vector<std::string>& cells, std::string_view name_prefix, std::string_view name) {
  if (fixed_ && cells.size() >= columns_.size()) return Emit(*stream_, *fixed_, stream_ascii_, cells, name_prefix, name);
  AddRow(std::vector<std::string>(cells), std::string(name_prefix), std::string(name));
}

void TextTable::Stream(std::ostream& out, size_t width, bool ascii, size_t after, std::vector<size_t> bounds,
                       size_t max_prefix) {
  stream_ = &out;
  stream_width_ = width;
  stream_ascii_ = ascii;
  stream_after_ = after;
  stream_prefix_ = max_prefix;
  stream_bounds_ = std::move(bounds);
  stream_bounds_.resize(columns_.size(), 0);
}

void TextTable::Finish() {
  if (stream_ != nullptr && !fixed_) Render(*stream_, stream_width_, stream_ascii_);
  stream_ = nullptr;
}

TextTable::Layout TextTable::Fit(size_t width, const std::vector<size_t>* bounds) const {
  Layout l;
  auto header = [&](const Column& c) -> const std::string& {
    return l.abbreviated && !c.short_header.empty() ? c.short_header : c.header;
  };
  l.widths.assign(columns_.size(), 0);
  auto measure = [&] {
    for (size_t c = 0; c < columns_.size(); ++c) {
      l.widths[c] = std::max(DisplayWidth(header(columns_[c])), bounds ? (*bounds)[c] : 0);
      for (const Row& r : rows_) l.widths[c] = std::max(l.widths[c], DisplayWidth(r.cells[c]));
    }
  };
  measure();
  l.shown.assign(columns_.size(), true);
  auto used = [&] {
    size_t total = 0;
    for (size_t c = 0; c < columns_.size(); ++c)
      if (l.shown[c] && l.widths[c] > 0) total += l.widths[c] + kGap;
    return total;
  };
  if (width > 0) {
    size_t prefix = 0, widest = DisplayWidth(name_header_);
    for (const Row& r : rows_) {
      const size_t pw = DisplayWidth(r.prefix);
      prefix = std::max(prefix, pw);
      widest = std::max(widest, pw + DisplayWidth(r.name));
    }
    // Rows still to come may be deeper and longer: room for the deepest.
    const size_t need = bounds ? std::min(std::max(prefix, stream_prefix_), kMaxPrefixBudget) + kMinNameWidth
                               : std::min(std::min(prefix, kMaxPrefixBudget) + kMinNameWidth, widest);
    for (;;) {
      if (used() + need <= width) break;
      if (!l.abbreviated) {
        l.abbreviated = true;
        measure();
        continue;
      }
      size_t victim = columns_.size();
      for (size_t c = 0; c < columns_.size(); ++c)
        if (l.shown[c] && columns_[c].drop > 0 &&
            (victim == columns_.size() || columns_[c].drop > columns_[victim].drop))
          victim = c;
      if (victim == columns_.size()) break;
      l.shown[victim] = false;
    }
  }
  l.name_width = width > 0 && width > used() ? width - used() : 0;
  return l;
}

void TextTable::Emit(std::ostream& out, const Layout& l, bool ascii, const std::vector<std::string>& cells,
                     std::string_view prefix, std::string_view name) const {
  // One line buffer kept between rows: a streamed tree writes hundreds of
  // thousands.
  line_.clear();
  AppendLine(line_, l, ascii, cells, prefix, name);
  out.write(line_.data(), static_cast<std::streamsize>(line_.size()));
}

void TextTable::FormatRow(const std::vector<std::string>& cells, std::string_view prefix, std::string_view name,
                          std::string& out) const {
  if (!fixed_) return;
  if (cells.size() >= columns_.size()) return AppendLine(out, *fixed_, stream_ascii_, cells, prefix, name);
  std::vector<std::string> padded(cells);  // fewer cells than columns: the rest blank
  padded.resize(columns_.size());
  AppendLine(out, *fixed_, stream_ascii_, padded, prefix, name);
}

void TextTable::AppendLine(std::string& line, const Layout& l, bool ascii, const std::vector<std::string>& cells,
                           std::string_view prefix, std::string_view name) const {
  // Padding is appended in place (no padded copy per cell).
  const size_t line_start = line.size();
  for (size_t c = 0; c < columns_.size(); ++c) {
    if (!l.shown[c] || l.widths[c] == 0) continue;
    const size_t w = DisplayWidth(cells[c]);
    const size_t pad = w < l.widths[c] ? l.widths[c] - w : 0;
    if (!columns_[c].left) line.append(pad, ' ');
    line += cells[c];
    if (columns_[c].left) line.append(pad, ' ');
    line.append(kGap, ' ');
  }
  line += prefix;
  if (l.name_width > 0) {
    const size_t pw = DisplayWidth(prefix);
    const size_t avail = l.name_width > pw + 8 ? l.name_width - pw : 8;
    if (DisplayWidth(name) <= avail) line += name;
    else line += ElideMiddle(name, avail, ascii);
  } else {
    line += name;
  }
  while (line.size() > line_start && line.back() == ' ') line.pop_back();
  line += '\n';
}

void TextTable::EmitHeader(std::ostream& out, const Layout& l, bool ascii) const {
  std::vector<std::string> headers;
  bool any_header = !name_header_.empty();
  for (const Column& c : columns_) {
    headers.push_back(l.abbreviated && !c.short_header.empty() ? c.short_header : c.header);
    any_header |= !c.header.empty();
  }
  if (any_header) Emit(out, l, ascii, headers, "", name_header_);
}

void TextTable::Render(std::ostream& out, size_t width, bool ascii) const {
  const Layout l = Fit(width, nullptr);
  EmitHeader(out, l, ascii);
  for (const Row& r : rows_) Emit(out, l, ascii, r.cells, r.prefix, r.name);
}

}  // namespace output
