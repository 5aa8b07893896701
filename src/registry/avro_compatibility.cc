#include "registry/avro_compatibility.h"

#include <fmt/format.h>

#include <set>
#include <utility>

namespace sluice::registry::avro {

namespace {

bool NameMatches(const Node& reader, const Node& writer) {
  if (reader.name == writer.name) return true;
  for (const auto& a : reader.aliases) {
    if (a == writer.full_name) return true;
    auto dot = a.rfind('.');
    if (dot != std::string::npos && a.substr(dot + 1) == writer.name) return true;
  }
  return false;
}

bool Promotes(Type writer, Type reader) {
  switch (writer) {
    case Type::kInt:
      return reader == Type::kLong || reader == Type::kFloat || reader == Type::kDouble;
    case Type::kLong:
      return reader == Type::kFloat || reader == Type::kDouble;
    case Type::kFloat:
      return reader == Type::kDouble;
    case Type::kString:
      return reader == Type::kBytes;
    case Type::kBytes:
      return reader == Type::kString;
    default:
      return false;
  }
}

class Checker {
 public:
  std::vector<std::string> Run(const Node& reader, const Node& writer) {
    Check(reader, writer, "");
    return std::move(out_);
  }

 private:
  void Add(std::string_view kind, const std::string& path, const std::string& what) {
    out_.push_back(fmt::format("{} at '{}': {}", kind, path.empty() ? "/" : path, what));
  }

  // True if reader can read writer, without recording reasons (for picking a
  // reader union branch). Shares the pairs in progress so recursion ends.
  bool Readable(const Node& reader, const Node& writer) const {
    Checker probe;
    probe.in_progress_ = in_progress_;
    probe.Check(reader, writer, "");
    return probe.out_.empty();
  }

  void Check(const Node& reader, const Node& writer, const std::string& path) {
    // Recursive named types: a pair already being compared is assumed fine;
    // any difference is reported where the comparison started.
    if (reader.is_named() && writer.is_named()) {
      if (!in_progress_.insert({&reader, &writer}).second) return;
    }
    if (writer.type == Type::kUnion) {
      for (size_t i = 0; i < writer.branches.size(); ++i) {
        const Node& wb = *writer.branches[i];
        if (reader.type == Type::kUnion) {
          bool any = false;
          for (const Node* rb : reader.branches) any = any || Readable(*rb, wb);
          if (!any) {
            Add("MISSING_UNION_BRANCH", path + "/" + std::to_string(i),
                fmt::format("the reader's union lacks a branch for writer type {}",
                            wb.is_named() ? wb.full_name : TypeName(wb.type)));
          }
        } else {
          Check(reader, wb, path + "/" + std::to_string(i));
        }
      }
      return;
    }
    if (reader.type == Type::kUnion) {
      for (const Node* rb : reader.branches) {
        if (Readable(*rb, writer)) return;
      }
      Add("MISSING_UNION_BRANCH", path,
          fmt::format("the reader's union has no branch for writer type {}",
                      writer.is_named() ? writer.full_name : TypeName(writer.type)));
      return;
    }
    if (reader.type != writer.type) {
      if (Promotes(writer.type, reader.type)) return;
      Add("TYPE_MISMATCH", path,
          fmt::format("reader type {} does not match writer type {}", TypeName(reader.type),
                      TypeName(writer.type)));
      return;
    }
    switch (reader.type) {
      case Type::kRecord:
        return CheckRecord(reader, writer, path);
      case Type::kEnum:
        if (!NameMatches(reader, writer)) return NameMismatch(reader, writer, path);
        if (!reader.enum_default) {
          std::set<std::string> have(reader.symbols.begin(), reader.symbols.end());
          std::vector<std::string> missing;
          for (const auto& s : writer.symbols) {
            if (!have.count(s)) missing.push_back(s);
          }
          if (!missing.empty()) {
            Add("MISSING_ENUM_SYMBOLS", path + "/symbols",
                fmt::format("the reader's enum {} lacks the writer's symbols [{}]",
                            reader.full_name, fmt::join(missing, ", ")));
          }
        }
        return;
      case Type::kFixed:
        if (!NameMatches(reader, writer)) return NameMismatch(reader, writer, path);
        if (reader.size != writer.size) {
          Add("FIXED_SIZE_MISMATCH", path + "/size",
              fmt::format("reader size {} differs from writer size {}", reader.size, writer.size));
        }
        return;
      case Type::kArray:
        return Check(*reader.items, *writer.items, path + "/items");
      case Type::kMap:
        return Check(*reader.values, *writer.values, path + "/values");
      default:
        return;  // same primitive
    }
  }

  void NameMismatch(const Node& reader, const Node& writer, const std::string& path) {
    Add("NAME_MISMATCH", path + "/name",
        fmt::format("reader name {} does not match writer name {}", reader.full_name,
                    writer.full_name));
  }

  void CheckRecord(const Node& reader, const Node& writer, const std::string& path) {
    if (!NameMatches(reader, writer)) return NameMismatch(reader, writer, path);
    for (size_t i = 0; i < reader.fields.size(); ++i) {
      const Field& rf = reader.fields[i];
      std::string fpath = path + "/fields/" + std::to_string(i);
      int wi = writer.FieldIndex(rf.name);
      for (size_t a = 0; wi < 0 && a < rf.aliases.size(); ++a)
        wi = writer.FieldIndex(rf.aliases[a]);
      if (wi < 0) {
        if (!rf.default_value) {
          Add("READER_FIELD_MISSING_DEFAULT_VALUE", fpath,
              fmt::format("reader field '{}' has no default value and is missing in the writer "
                          "schema",
                          rf.name));
        }
        continue;
      }
      Check(*rf.type, *writer.fields[wi].type, fpath + "/type");
    }
  }

  std::set<std::pair<const Node*, const Node*>> in_progress_;
  std::vector<std::string> out_;
};

}  // namespace

std::vector<std::string> ReadIncompatibilities(const Schema& reader, const Schema& writer) {
  return Checker().Run(reader.root(), writer.root());
}

}  // namespace sluice::registry::avro
