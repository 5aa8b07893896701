// The warehouse stores' SQL helpers are the data-plane's own (store/sql.h);
// warehouse code names them sql::.
#pragma once

#include "store/sql.h"

namespace sluice::warehouse {
namespace sql = ::sluice::store::sql;
}  // namespace sluice::warehouse
