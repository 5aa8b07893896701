#include "store/provision.h"

#include <fmt/format.h>
#include <pqxx/pqxx>

#include "store/migrations.h"

namespace sluice::store {

common::Result<std::unique_ptr<ProvisionedDatabase>> ProvisionDatabase(
    const std::string& data_dir) {
  std::string url;
  std::unique_ptr<EmbeddedCluster> cluster;
  if (const char* env = std::getenv("SLUICE_DATABASE_URL"); env && *env) {
    url = env;
  } else {
    EmbeddedClusterOptions options;
    options.dir = data_dir + "/postgres";
    auto started = EmbeddedCluster::Start(options);
    if (!started.ok()) return started.status();
    cluster = std::move(started).value();
    try {
      pqxx::connection admin(cluster->Url("postgres"));
      pqxx::nontransaction tx(admin);
      if (tx.exec("SELECT 1 FROM pg_database WHERE datname = 'sluice'").empty()) {
        tx.exec("CREATE DATABASE sluice");
      }
    } catch (const std::exception& e) {
      return common::Unavailable(fmt::format("cannot create the sluice database: {}", e.what()));
    }
    url = cluster->Url("sluice");
  }
  auto migrated = Migrate(url);
  if (!migrated.ok()) return migrated.status();
  return std::make_unique<ProvisionedDatabase>(url, std::move(cluster));
}

}  // namespace sluice::store
