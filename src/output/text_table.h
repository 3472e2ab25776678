// TextTable: aligned terminal tables for reports.
//
// Value columns are right-aligned to their widest cell; the last column (a
// name, optionally behind a tree-drawing prefix) takes the rest of the
// terminal width and long names are elided in the middle, never the prefix.
// When names would get too narrow, value columns with a drop priority are
// removed, highest priority first (secondary metrics' exclusive values, then
// percentages), until the widest tree prefix plus a readable name fits.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace output {

class TextTable {
 public:
  struct Column {
    std::string header;
    int drop = 0;       // 0: always shown; higher numbers are dropped first
    bool left = false;  // left-aligned (text) instead of right (numbers)
  };

  explicit TextTable(std::vector<Column> columns, std::string name_header)
      : columns_(std::move(columns)), name_header_(std::move(name_header)) {}

  void AddRow(std::vector<std::string> cells, std::string name_prefix, std::string name);
  size_t rows() const { return rows_.size(); }

  // Writes the header and rows to fit `width` columns (0: no limit).
  void Render(std::ostream& out, size_t width, bool ascii) const;

 private:
  struct Row {
    std::vector<std::string> cells;
    std::string prefix, name;
  };
  std::vector<Column> columns_;
  std::string name_header_;
  std::vector<Row> rows_;
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
