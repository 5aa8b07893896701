// What changed in a table's columns between two Relation messages of the
// same relation (or the snapshot's catalog read and the stream's first
// Relation message). pgoutput sends a relation's columns in attnum order
// without their attnums, dropped columns left out, so a rename is told from
// a drop plus an add by position: among the columns both lists name, a
// column only the old list names and one only the new list names, at the
// same place between the same neighbours, are one column renamed. (A
// column dropped and another added at that very place, with no row change
// between, reads as a rename; the target ends the same either way: a new
// column added, the old one kept.)
#pragma once

#include <string>
#include <vector>

#include "connectors/change_event.h"
#include "connectors/postgres/type_widening.h"

namespace sluice::connectors::postgres {

struct ColumnChange {
  enum class Kind {
    kAdded,
    kDropped,
    kRenamed,      // old_name -> column
    kWidened,      // old_type -> new_type, every old value fits (IsSafeWidening)
    kTypeChanged,  // old_type -> new_type, values may not fit the old type
  };
  Kind kind = Kind::kAdded;
  std::string column;    // the column's name (its new name for kRenamed)
  std::string old_name;  // kRenamed only
  ColumnType old_type;   // kWidened, kTypeChanged (and kDropped: its type)
  ColumnType new_type;   // kAdded, kWidened, kTypeChanged
  bool operator==(const ColumnChange&) const = default;
};

const char* ColumnChangeKindName(ColumnChange::Kind kind);

// The column changes from `before` to `after`, in the order of `after`
// (drops last). A renamed column whose type also changed gives kRenamed and
// then the type change under its new name. Changes of the key flag alone
// are not column changes.
std::vector<ColumnChange> DiffRelation(const std::vector<ColumnSchema>& before,
                                       const std::vector<ColumnSchema>& after);

}  // namespace sluice::connectors::postgres
