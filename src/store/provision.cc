#include "store/provision.h"

#include <fmt/format.h>
#include <pqxx/pqxx>

#include "store/migrations.h"

namespace sluice::store {

namespace {

// Hands everything in the current database that an older Sluice created as
// the superuser to `role`. Tables before sequences: a sequence owned by a
// column follows its table and refuses to be moved on its own.
constexpr const char* kReassignToOwner = R"sql(
DO $$
DECLARE
  r record;
  owner name := current_setting('sluice.owner');
BEGIN
  FOR r IN SELECT nspname FROM pg_namespace
           WHERE nspname NOT LIKE 'pg\_%' AND nspname <> 'information_schema'
             AND nspowner <> (SELECT oid FROM pg_roles WHERE rolname = owner) LOOP
    EXECUTE format('ALTER SCHEMA %I OWNER TO %I', r.nspname, owner);
  END LOOP;
  FOR r IN SELECT n.nspname, c.relname, c.relkind FROM pg_class c
           JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname NOT LIKE 'pg\_%' AND n.nspname <> 'information_schema'
             AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
             AND c.relowner <> (SELECT oid FROM pg_roles WHERE rolname = owner) LOOP
    EXECUTE format('ALTER %s %I.%I OWNER TO %I',
                   CASE r.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
                                  WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END,
                   r.nspname, r.relname, owner);
  END LOOP;
  FOR r IN SELECT n.nspname, c.relname FROM pg_class c
           JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname NOT LIKE 'pg\_%' AND n.nspname <> 'information_schema'
             AND c.relkind = 'S'
             AND c.relowner <> (SELECT oid FROM pg_roles WHERE rolname = owner) LOOP
    EXECUTE format('ALTER SEQUENCE %I.%I OWNER TO %I', r.nspname, r.relname, owner);
  END LOOP;
  FOR r IN SELECT n.nspname, t.typname, t.typtype FROM pg_type t
           JOIN pg_namespace n ON n.oid = t.typnamespace
           WHERE n.nspname NOT LIKE 'pg\_%' AND n.nspname <> 'information_schema'
             AND t.typtype IN ('e', 'd')
             AND t.typowner <> (SELECT oid FROM pg_roles WHERE rolname = owner) LOOP
    EXECUTE format('ALTER %s %I.%I OWNER TO %I',
                   CASE r.typtype WHEN 'd' THEN 'DOMAIN' ELSE 'TYPE' END,
                   r.nspname, r.typname, owner);
  END LOOP;
  FOR r IN SELECT n.nspname, p.proname, pg_get_function_identity_arguments(p.oid) AS args
           FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
           WHERE n.nspname NOT LIKE 'pg\_%' AND n.nspname <> 'information_schema'
             AND p.proowner <> (SELECT oid FROM pg_roles WHERE rolname = owner) LOOP
    EXECUTE format('ALTER ROUTINE %I.%I(%s) OWNER TO %I', r.nspname, r.proname, r.args, owner);
  END LOOP;
END $$)sql";

}  // namespace

common::Status OwnDatabase(EmbeddedCluster& cluster, const std::string& role,
                           const std::string& dbname) {
  try {
    bool created = false;
    {
      pqxx::connection admin(cluster.Url("postgres"));
      pqxx::nontransaction tx(admin);
      auto found = tx.exec_params(
          "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = $1", dbname);
      if (found.empty()) {
        tx.exec(fmt::format("CREATE DATABASE {} OWNER {}", tx.quote_name(dbname),
                            tx.quote_name(role)));
        created = true;
      } else if (found[0][0].as<std::string>() != role) {
        tx.exec(fmt::format("ALTER DATABASE {} OWNER TO {}", tx.quote_name(dbname),
                            tx.quote_name(role)));
      }
      // Only its owner (and the superuser) may connect: no other role made
      // on this cluster, a demo role say, reaches it.
      tx.exec(fmt::format("REVOKE CONNECT, TEMPORARY ON DATABASE {} FROM PUBLIC",
                          tx.quote_name(dbname)));
      tx.exec("REVOKE CONNECT, TEMPORARY ON DATABASE postgres FROM PUBLIC");
    }
    if (!created) {
      pqxx::connection admin(cluster.Url(dbname));
      pqxx::nontransaction tx(admin);
      tx.exec_params("SELECT set_config('sluice.owner', $1, false)", role);
      tx.exec(kReassignToOwner);
    }
  } catch (const std::exception& e) {
    return common::Unavailable(
        fmt::format("cannot give database {} to role {}: {}", dbname, role, e.what()));
  }
  return common::Status::Ok();
}

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
    auto role = cluster->EnsureRole(kDataPlaneRole);
    if (!role.ok()) return role;
    auto owned = OwnDatabase(*cluster, kDataPlaneRole, "sluice");
    if (!owned.ok()) return owned;
    url = cluster->Url("sluice", kDataPlaneRole);
  }
  auto migrated = Migrate(url);
  if (!migrated.ok()) return migrated.status();
  return std::make_unique<ProvisionedDatabase>(url, std::move(cluster));
}

}  // namespace sluice::store
