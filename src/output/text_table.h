// TextTable: aligned terminal tables for reports.
//
// Value columns are right-aligned to their widest cell; the last column (a
// name, optionally behind a tree-drawing prefix) takes the rest of the
// terminal width and long names are elided in the middle, never the prefix.
// When names would get too narrow, headers are abbreviated first (the
// columns that have a short form), then value columns with a drop priority
// are removed, highest priority first (secondary metrics' exclusive values,
// then percentages), until the widest tree prefix plus a readable name
// fits. A readable name is 24 columns, or the widest name when all are
// narrower: a column is never dropped for room its rows do not need.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace output {

class TextTable {
 public:
  struct Column {
    std::string header;
    int drop = 0;       // 0: always shown; higher numbers are dropped first
    bool left = false;  // left-aligned (text) instead of right (numbers)
    std::string short_header = {};  // used when the table is too wide; empty: none
  };

  explicit TextTable(std::vector<Column> columns, std::string name_header)
      : columns_(std::move(columns)), name_header_(std::move(name_header)) {}

  void AddRow(std::vector<std::string> cells, std::string name_prefix, std::string name);
  // The same without taking the strings: once streaming, the row is written
  // at once and nothing is copied (a streamed tree's rows reuse buffers).
  void AddRowView(const std::vector<std::string>& cells, std::string_view name_prefix, std::string_view name);
  size_t rows() const { return rows_.size(); }

  // Writes the header and rows to fit `width` columns (0: no limit).
  void Render(std::ostream& out, size_t width, bool ascii) const;

  // Streaming, for tables too long to hold before their first line (a
  // 5·10^6-node tree took 10 s to start printing): after `after` rows the
  // layout is fixed and the header, those rows and every later one are
  // written as they are added. The widths are then the widest of the first
  // rows and `bounds` (per column the widest cell it can hold; the caller
  // knows its values' range), and names get room behind the widest prefix
  // a row can have, `max_prefix` columns (up to the prefix budget). A table
  // of at most `after` rows is laid out from all its rows, as by Render.
  // Finish() writes what is still held.
  void Stream(std::ostream& out, size_t width, bool ascii, size_t after, std::vector<size_t> bounds,
              size_t max_prefix);
  void Finish();

  // Once streaming has fixed the layout (after `after` rows): a row's line,
  // with its newline, appended to `out`, as AddRowView would write it. Const
  // and touching no shared state: threads may format rows of one table
  // into their own buffers, for the caller to write in order.
  bool LayoutFixed() const { return fixed_.has_value(); }
  void FormatRow(const std::vector<std::string>& cells, std::string_view prefix, std::string_view name,
                 std::string& out) const;

 private:
  struct Row {
    std::vector<std::string> cells;
    std::string prefix, name;
  };
  struct Layout {
    bool abbreviated = false;    // short headers
    std::vector<size_t> widths;  // per column; 0: empty column
    std::vector<bool> shown;
    size_t name_width = 0;       // 0: unlimited
  };
  // `bounds`: widest cells beyond the rows held (streaming); null: none.
  Layout Fit(size_t width, const std::vector<size_t>* bounds) const;
  void Emit(std::ostream& out, const Layout& layout, bool ascii, const std::vector<std::string>& cells,
            std::string_view prefix, std::string_view name) const;
  // The line Emit writes, appended to `line`.
  void AppendLine(std::string& line, const Layout& layout, bool ascii, const std::vector<std::string>& cells,
                  std::string_view prefix, std::string_view name) const;
  void EmitHeader(std::ostream& out, const Layout& layout, bool ascii) const;

  std::vector<Column> columns_;
  std::string name_header_;
  std::vector<Row> rows_;
  // Streaming state (Stream()).
  std::ostream* stream_ = nullptr;
  size_t stream_width_ = 0, stream_after_ = 0, stream_prefix_ = 0;
  bool stream_ascii_ = false;
  std::vector<size_t> stream_bounds_;
  std::optional<Layout> fixed_;  // set once rows are written as they come
  mutable std::string line_;     // Emit's line, its buffer kept between rows
};

// Tree-drawing prefixes: "├─ ", "└─ ", "│  ", "   " (or ASCII "|- ", "`- ", "|  ").
struct TreeGlyphs {
  const char* branch;
  const char* last;
  const char* pipe;
  const char* space;
};
const TreeGlyphs& Glyphs(bool ascii);

}  // namespace output
