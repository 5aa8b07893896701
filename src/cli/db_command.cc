// `sluice db migrate` and `sluice db cluster start|stop`.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>

#include "cli/command_registry.h"
#include "store/embedded_cluster.h"
#include "store/migrations.h"

namespace {

// One clear line on stderr and a non-zero exit: what scripts and people read.
void Fail(const sluice::common::Status& status) {
  std::fprintf(stderr, "sluice: %s\n", status.message().c_str());
  sluice::cli::ExitCode() = 1;
}

sluice::cli::RegisterCommand db_registration([](CLI::App& root) {
  auto* db = root.add_subcommand("db", "Manage the data-plane database");
  db->require_subcommand(1);

  auto* migrate = db->add_subcommand("migrate", "Apply pending migrations to SLUICE_DATABASE_URL");
  migrate->callback([] {
    const char* url = std::getenv("SLUICE_DATABASE_URL");
    if (!url || !*url) {
      Fail(sluice::common::InvalidArgument("SLUICE_DATABASE_URL is not set"));
      return;
    }
    auto report = sluice::store::Migrate(url);
    if (!report.ok()) return Fail(report.status());
    if (report->from_version == report->to_version) {
      fmt::print("database schema is up to date (version {})\n", report->to_version);
    } else {
      fmt::print("migrated database schema from version {} to {}\n", report->from_version,
                 report->to_version);
    }
  });

  auto* cluster = db->add_subcommand("cluster", "Run an embedded PostgreSQL cluster");
  cluster->require_subcommand(1);
  auto dir = std::make_shared<std::string>("./var/postgres");
  auto port = std::make_shared<int>(0);
  auto fast = std::make_shared<bool>(false);
  auto fresh = std::make_shared<bool>(false);
  auto* start = cluster->add_subcommand("start", "Initialise (first time) and start a cluster");
  start->add_option("--data-dir", *dir, "Cluster directory")->capture_default_str();
  start->add_option("--port", *port, "TCP port on 127.0.0.1 (0 picks a free one)");
  start->add_flag("--no-fsync", *fast, "Trade crash safety for speed (tests only)");
  start->add_flag("--fresh", *fresh, "Stop and delete any cluster already in the directory");
  start->callback([=] {
    if (*fresh) {
      auto stopped = sluice::store::EmbeddedCluster::StopDir(*dir);
      if (!stopped.ok()) return Fail(stopped);
      std::error_code ec;
      std::filesystem::remove_all(*dir, ec);
    }
    sluice::store::EmbeddedClusterOptions options;
    options.dir = *dir;
    options.port = *port;
    options.durable = !*fast;
    auto started = sluice::store::EmbeddedCluster::Start(options);
    if (!started.ok()) return Fail(started.status());
    // The caller owns the cluster's lifetime from here on: `cluster stop`.
    started.value()->Detach();
    fmt::print("{}\n", started.value()->Url("postgres"));
  });
  auto* stop = cluster->add_subcommand("stop", "Stop a cluster started with `cluster start`");
  stop->add_option("--data-dir", *dir, "Cluster directory")->capture_default_str();
  stop->callback([=] {
    auto status = sluice::store::EmbeddedCluster::StopDir(*dir);
    if (!status.ok()) Fail(status);
  });
});

}  // namespace
