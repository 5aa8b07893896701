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

// data_dir: the process's data directory; the embedded cluster lives in
// data_dir/postgres and the data-plane database is named "sluice".
common::Result<std::unique_ptr<ProvisionedDatabase>> ProvisionDatabase(const std::string& data_dir);

}  // namespace sluice::store
