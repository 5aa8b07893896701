// Where a server process gets its database: SLUICE_DATABASE_URL when set,
// otherwise an embedded cluster under the data directory. Either way the
// schema is migrated before the handle is returned.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "store/embedded_cluster.h"

namespace sluice::store {

class ProvisionedDatabase {
 public:
  ProvisionedDatabase(std::string url, std::unique_ptr<EmbeddedCluster> cluster)
      : url_(std::move(url)), cluster_(std::move(cluster)) {}

  const std::string& url() const { return url_; }
  // The embedded cluster, or nullptr when the database is external.
  EmbeddedCluster* cluster() const { return cluster_.get(); }

 private:
  std::string url_;
  std::unique_ptr<EmbeddedCluster> cluster_;  // stopped on destruction
};

// The role the data-plane connects to its embedded cluster as: owner of its
// database, not a superuser.
inline constexpr const char* kDataPlaneRole = "sluice";

// Makes `role` (made by EnsureRole) the owner of database `dbname`, creating
// it as needed, and of everything already in it; only the owner and the
// superuser may connect to it.
common::Status OwnDatabase(EmbeddedCluster& cluster, const std::string& role,
                           const std::string& dbname);

// data_dir: the process's data directory; the embedded cluster lives in
// data_dir/postgres and the data-plane database is named "sluice", owned by
// kDataPlaneRole.
common::Result<std::unique_ptr<ProvisionedDatabase>> ProvisionDatabase(const std::string& data_dir);

}  // namespace sluice::store
