// The forward-only migrations compiled into this binary, in version order.
#pragma once

#include <string>
#include <vector>

namespace sluice::store {

struct Migration {
  int version;
  std::string name;
  std::string sql;
};

const std::vector<Migration>& EmbeddedMigrations();

}  // namespace sluice::store
