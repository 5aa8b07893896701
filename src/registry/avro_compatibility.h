// Avro schema resolution (spec, "Schema Resolution") as a yes/no with
// reasons: can data written with one schema be read with another?
#pragma once

#include <string>
#include <vector>

#include "registry/avro_schema.h"

namespace sluice::registry::avro {

// Reasons `reader` cannot read data written with `writer`; empty if it can.
// The rules: a reader field missing from the writer needs a default; writer
// fields the reader lacks are skipped; int->long->float->double and
// string<->bytes promote; enum symbols the writer may send must exist in the
// reader unless the reader's enum has a default; every writer union branch
// must be readable by the reader; named types match by unqualified name or
// a reader alias; fixed sizes must agree.
std::vector<std::string> ReadIncompatibilities(const Schema& reader, const Schema& writer);

}  // namespace sluice::registry::avro
