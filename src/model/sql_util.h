// The repositories' SQL helpers live in store (shared with the warehouse
// stores); model code names them sql::.
#pragma once

#include "store/sql.h"

namespace sluice::model {
namespace sql = ::sluice::store::sql;
}  // namespace sluice::model
