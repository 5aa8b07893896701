#include "store/spec_model.h"

#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace sluice::testing {

namespace {

std::string Trim(std::string s) {
  auto b = s.find_first_not_of(" \t.");
  auto e = s.find_last_not_of(" \t.");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Splits on "; " outside parentheses (reasons in parentheses contain ';').
std::vector<std::string> SplitTopLevel(const std::string& s) {
  std::vector<std::string> parts;
  int depth = 0;
  std::string cur;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ';' && depth == 0) {
      parts.push_back(Trim(cur));
      cur.clear();
      continue;
    }
    cur.push_back(c);
  }
  if (!Trim(cur).empty()) parts.push_back(Trim(cur));
  return parts;
}

// Sections of a "References: ... Unique together: ... Indexed on: ..." line.
std::map<std::string, std::string> Sections(const std::string& line) {
  static const std::regex kHeads(R"((References|Unique together|Indexed on): )");
  std::map<std::string, std::string> out;
  std::vector<std::pair<std::string, std::size_t>> marks;
  for (auto it = std::sregex_iterator(line.begin(), line.end(), kHeads);
       it != std::sregex_iterator(); ++it) {
    marks.emplace_back((*it)[1].str(), static_cast<std::size_t>(it->position() + it->length()));
  }
  for (std::size_t i = 0; i < marks.size(); ++i) {
    std::size_t end = line.size();
    if (i + 1 < marks.size()) end = line.find(marks[i + 1].first + ": ", marks[i].second);
    out[marks[i].first] = Trim(line.substr(marks[i].second, end - marks[i].second));
  }
  return out;
}

std::vector<std::string> ParenGroups(const std::string& s, std::vector<bool>* unique) {
  // "(a, b); unique (c); (lower(name))"
  std::vector<std::string> out;
  for (const auto& part : SplitTopLevel(s)) {
    bool is_unique = part.rfind("unique", 0) == 0;
    auto open = part.find('(');
    auto close = part.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    out.push_back(part.substr(open + 1, close - open - 1));
    if (unique) unique->push_back(is_unique);
  }
  return out;
}

}  // namespace

std::string SpecPath() {
  const char* src = std::getenv("SLUICE_SOURCE_DIR");
  return std::string(src ? src : ".") + "/../shared/spec/data-plane-data-model.txt";
}

std::map<std::string, SpecTable> LoadSpec(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read the spec at " + path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);

  static const std::regex kTableHeading(R"(^`([a-z_]+)`$)");
  static const std::regex kColumn(
      R"(^`([a-z_]+)`\t`([A-Z]+(\(\d+\))?)`\t(required|optional)\t(.*)$)");
  static const std::regex kReference(
      R"(^([a-z_]+) → ([a-z_]+)\.([a-z_]+)(, ON DELETE (CASCADE|SET NULL|RESTRICT))?( \(no foreign key.*\))?$)");

  std::map<std::string, SpecTable> tables;
  SpecTable* current = nullptr;
  bool in_table = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto& line = lines[i];
    std::smatch m;
    if (std::regex_match(line, m, kTableHeading) && i + 3 < lines.size()) {
      // A heading is a table when a column header follows its description.
      bool has_header = false;
      for (std::size_t j = i + 1; j < std::min(lines.size(), i + 6); ++j)
        if (lines[j].rfind("Column\tType\tNull", 0) == 0) has_header = true;
      if (has_header) {
        current = &tables[m[1].str()];
        current->name = m[1].str();
        in_table = true;
        continue;
      }
    }
    if (!in_table || !current) continue;
    if (std::regex_match(line, m, kColumn)) {
      current->columns.push_back({m[1].str(), m[2].str(), m[4].str() == "required", m[5].str()});
      continue;
    }
    if (line.rfind("References: ", 0) == 0 || line.rfind("Unique together: ", 0) == 0 ||
        line.rfind("Indexed on: ", 0) == 0) {
      auto sections = Sections(line);
      for (const auto& ref : SplitTopLevel(sections["References"])) {
        std::smatch rm;
        std::string text = Trim(ref);
        if (!std::regex_match(text, rm, kReference))
          throw std::runtime_error("unparsed reference in " + current->name + ": " + text);
        current->references.push_back(
            {rm[1].str(), rm[2].str(), rm[3].str(), !rm[6].matched, rm[5].str()});
      }
      std::vector<bool> unique;
      auto groups = ParenGroups(sections["Indexed on"], &unique);
      for (std::size_t g = 0; g < groups.size(); ++g)
        current->indexes.push_back({groups[g], unique[g]});
      for (const auto& cols : ParenGroups(sections["Unique together"], nullptr))
        current->unique_together.push_back(cols);
      in_table = false;
    }
  }
  return tables;
}

}  // namespace sluice::testing
