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
  rows_.push_back(Row{std::move(cells), std::move(name_prefix), std::move(name)});
}

void TextTable::Render(std::ostream& out, size_t width, bool ascii) const {
  std::vector<size_t> w(columns_.size(), 0);
  for (size_t c = 0; c < columns_.size(); ++c) {
    w[c] = DisplayWidth(columns_[c].header);
    for (const Row& r : rows_) w[c] = std::max(w[c], DisplayWidth(r.cells[c]));
  }
  std::vector<bool> shown(columns_.size(), true);
  auto used = [&] {
    size_t total = 0;
    for (size_t c = 0; c < columns_.size(); ++c)
      if (shown[c] && w[c] > 0) total += w[c] + kGap;
    return total;
  };
  if (width > 0) {
    size_t prefix = 0;
    for (const Row& r : rows_) prefix = std::max(prefix, DisplayWidth(r.prefix));
    const size_t need = std::min(prefix, kMaxPrefixBudget) + kMinNameWidth;
    for (;;) {
      if (used() + need <= width) break;
      size_t victim = columns_.size();
      for (size_t c = 0; c < columns_.size(); ++c)
        if (shown[c] && columns_[c].drop > 0 && (victim == columns_.size() || columns_[c].drop > columns_[victim].drop))
          victim = c;
      if (victim == columns_.size()) break;
      shown[victim] = false;
    }
  }
  const size_t name_width = width > 0 && width > used() ? width - used() : 0;  // 0: unlimited

  auto emit = [&](const std::vector<std::string>& cells, const std::string& prefix, const std::string& name) {
    std::string line;
    for (size_t c = 0; c < columns_.size(); ++c) {
      if (!shown[c] || w[c] == 0) continue;
      line += columns_[c].left ? PadRight(cells[c], w[c]) : PadLeft(cells[c], w[c]);
      line.append(kGap, ' ');
    }
    line += prefix;
    if (name_width > 0) {
      const size_t pw = DisplayWidth(prefix);
      const size_t avail = name_width > pw + 8 ? name_width - pw : 8;
      line += ElideMiddle(name, avail, ascii);
    } else {
      line += name;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << '\n';
  };
  std::vector<std::string> headers;
  bool any_header = !name_header_.empty();
  for (const Column& c : columns_) {
    headers.push_back(c.header);
    any_header |= !c.header.empty();
  }
  if (any_header) emit(headers, "", name_header_);
  for (const Row& r : rows_) emit(r.cells, r.prefix, r.name);
}

}  // namespace output
