// The repositories' SQL helpers live in store (shared with the warehouse
// stores); api code names them sql::.
#pragma once

#include "store/sql.h"

namespace sluice::api {
namespace sql = ::sluice::store::sql;
}  // namespace sluice::api
