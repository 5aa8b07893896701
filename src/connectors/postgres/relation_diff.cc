#include "connectors/postgres/relation_diff.h"

#include <map>
#include <set>

namespace sluice::connectors::postgres {

const char* ColumnChangeKindName(ColumnChange::Kind kind) {
  switch (kind) {
    case ColumnChange::Kind::kAdded:
      return "added";
    case ColumnChange::Kind::kDropped:
      return "dropped";
    case ColumnChange::Kind::kRenamed:
      return "renamed";
    case ColumnChange::Kind::kWidened:
      return "widened";
    case ColumnChange::Kind::kTypeChanged:
      return "type_changed";
  }
  return "?";
}

namespace {

ColumnType TypeOf(const ColumnSchema& c) {
  // The stream names a type it was told of in a Type message, or a built-in
  // one; an unnamed type is told apart by its OID.
  return {c.type_name.empty() ? "oid " + std::to_string(c.type_oid) : c.type_name, c.type_modifier};
}

// Each column's place: how many columns both lists name come before it.
std::vector<std::size_t> Places(const std::vector<ColumnSchema>& columns,
                                const std::set<std::string>& common) {
  std::vector<std::size_t> out;
  std::size_t seen = 0;
  for (const auto& c : columns) {
    out.push_back(seen);
    if (common.count(c.name)) ++seen;
  }
  return out;
}

void TypeChange(const ColumnSchema& from, const ColumnSchema& to, std::vector<ColumnChange>& out) {
  // Same oid and modifier; names compared too where both sides have one
  // (a MySQL source's columns carry no oids, only PostgreSQL type names).
  bool same_name = from.type_name.empty() || to.type_name.empty() || from.type_name == to.type_name;
  if (from.type_oid == to.type_oid && same_name && from.type_modifier == to.type_modifier) return;
  ColumnChange c;
  c.column = to.name;
  c.old_type = TypeOf(from);
  c.new_type = TypeOf(to);
  c.kind = IsSafeWidening(c.old_type, c.new_type) ? ColumnChange::Kind::kWidened
                                                  : ColumnChange::Kind::kTypeChanged;
  out.push_back(std::move(c));
}

}  // namespace

std::vector<ColumnChange> DiffRelation(const std::vector<ColumnSchema>& before,
                                       const std::vector<ColumnSchema>& after) {
  std::map<std::string, const ColumnSchema*> old_by_name, new_by_name;
  for (const auto& c : before) old_by_name[c.name] = &c;
  for (const auto& c : after) new_by_name[c.name] = &c;
  std::set<std::string> common;
  for (const auto& c : after)
    if (old_by_name.count(c.name)) common.insert(c.name);
  auto old_places = Places(before, common), new_places = Places(after, common);

  // Columns only the old list names, by place, in order: the candidates a
  // new column at the same place was renamed from.
  std::map<std::size_t, std::vector<const ColumnSchema*>> gone;
  for (std::size_t i = 0; i < before.size(); ++i)
    if (!new_by_name.count(before[i].name)) gone[old_places[i]].push_back(&before[i]);

  std::vector<ColumnChange> out;
  for (std::size_t i = 0; i < after.size(); ++i) {
    const auto& c = after[i];
    if (auto it = old_by_name.find(c.name); it != old_by_name.end()) {
      TypeChange(*it->second, c, out);
      continue;
    }
    auto& candidates = gone[new_places[i]];
    if (!candidates.empty()) {
      const ColumnSchema* from = candidates.front();
      candidates.erase(candidates.begin());
      ColumnChange r;
      r.kind = ColumnChange::Kind::kRenamed;
      r.column = c.name;
      r.old_name = from->name;
      r.old_type = TypeOf(*from);
      r.new_type = TypeOf(c);
      out.push_back(std::move(r));
      TypeChange(*from, c, out);
      continue;
    }
    ColumnChange a;
    a.kind = ColumnChange::Kind::kAdded;
    a.column = c.name;
    a.new_type = TypeOf(c);
    out.push_back(std::move(a));
  }
  for (const auto& [place, left] : gone) {
    for (const auto* c : left) {
      ColumnChange d;
      d.kind = ColumnChange::Kind::kDropped;
      d.column = c->name;
      d.old_type = TypeOf(*c);
      out.push_back(std::move(d));
    }
  }
  return out;
}

}  // namespace sluice::connectors::postgres
