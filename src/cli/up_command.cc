// `sluice up`: everything on one machine. An embedded PostgreSQL under the
// data dir (unless SLUICE_DATABASE_URL is set), the embedded broker, the
// API (and the schema registry), the orchestrator launching workers as
// local processes, and with --demo a pipeline with writes going on.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "api/bootstrap.h"
#include "cli/back_end.h"
#include "cli/broker_access.h"
#include "cli/command_registry.h"
#include "cli/connect_flags.h"
#include "cli/demo_pipeline.h"
#include "cli/tls_flags.h"
#include "common/net.h"
#include "common/subprocess.h"
#include "common/uuid.h"
#include "guard/connect_policy.h"
#include "kafka/client_config.h"
#include "runtime/process_supervisor.h"
#include "store/provision.h"

namespace {

struct UpFlags {
  std::string data_dir = "./var";
  std::string listen = "127.0.0.1:8080";
  std::string registry_listen = "127.0.0.1:8081";
  std::string broker_listen = "127.0.0.1:9092";
  std::string ui_dir;  // the built web UI; empty: found next to the binary
  bool demo = false;
  std::string demo_format = "json";  // the demo source's change events: json | avro
  int backfill_source_cap = 2;       // running backfill items per source connector
  int backfill_destination_cap = 2;  // ... and per destination connector
  // The broker's connection caps (`sluice broker --max-connections...`).
  int broker_max_connections = 4096;
  int broker_max_connections_per_address = 512;
  // The connect policy's operator lists (guard/connect_policy.h) and the
  // JSONL root (empty: <data-dir>/jsonl).
  std::vector<std::string> connect_allow, connect_deny;
  std::string jsonl_root;
  // --tls-cert/--tls-key: the API, the registry and the broker speak TLS.
  sluice::common::TlsFiles tls;
};

bool WaitForPort(const std::string& host, int port, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
    bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    close(fd);
    if (ok) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "sluice up: %s\n", what.c_str());
  return 1;
}

// The first login: SLUICE_SUPERUSER_* when given, else, while nobody could
// log in yet, admin@sluice.local with a generated password kept in
// <data-dir>/admin-password (0600), never printed.
void EnsureFirstLogin(sluice::store::Database& db, const std::string& data_dir) {
  if (std::getenv("SLUICE_SUPERUSER_EMAIL")) return;
  auto path = std::filesystem::path(data_dir) / "admin-password";
  if (std::filesystem::exists(path) || sluice::api::AnySuperuserExists(db)) return;
  std::string password = sluice::common::Uuid::V4().ToString();
  auto st = sluice::api::CreateSuperuser(db, "admin@sluice.local", password);
  if (!st.ok()) return;
  std::ofstream(path) << password << "\n";
  std::filesystem::permissions(
      path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  std::printf("first login: admin@sluice.local, password in %s\n", path.c_str());
}

int Up(const UpFlags& f) {
  std::string api_host, reg_host, broker_host;
  int api_port = 0, reg_port = 0, broker_port = 0;
  if (!sluice::common::SplitHostPort(f.listen, &api_host, &api_port) ||
      !sluice::common::SplitHostPort(f.registry_listen, &reg_host, &reg_port) ||
      !sluice::common::SplitHostPort(f.broker_listen, &broker_host, &broker_port))
    return Fail("--listen, --registry-listen and --broker-listen take HOST:PORT");
  if (auto st = sluice::common::CheckServerTls(f.tls); !st.ok()) {
    std::fprintf(stderr, "sluice up: %s\n", st.message().c_str());
    return 2;
  }
  // Sluice's own clients of these listeners (workers run elsewhere in the
  // tree) trust the certificate itself.
  const std::string ca_file =
      f.tls.enabled() ? std::filesystem::absolute(f.tls.cert_file).string() : std::string();
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  std::filesystem::create_directories(f.data_dir);
  if (auto st =
          sluice::cli::ApplyConnectFlags(f.connect_allow, f.connect_deny, f.jsonl_root, f.data_dir);
      !st.ok())
    return Fail(st.message());
  auto provisioned = sluice::store::ProvisionDatabase(f.data_dir);
  if (!provisioned.ok()) return Fail(provisioned.status().message());
  const auto& url = (*provisioned)->url();
  sluice::store::Database db(url, 8);

  // The broker is its own process, supervised like a worker. It admits only
  // the principals of its ACL file: the back end, and each worker launched
  // against it with a grant of its connector's own topics and groups. It
  // dies with this process, a SIGKILLed one too: an orphaned broker went on
  // serving (and committing offsets) beside the next `up`'s. It is forked on
  // this (the main) thread and restarted on the supervisor's, both alive as
  // long as this process is.
  sluice::runtime::SupervisorOptions supervised;
  supervised.die_with_parent = true;
  sluice::runtime::ProcessSupervisor services(supervised);
  std::filesystem::create_directories(std::filesystem::path(f.data_dir) / "broker");
  auto broker_access = sluice::cli::EmbeddedBrokerAccess::Create(
      std::filesystem::path(f.data_dir) / "broker-acl.json", f.broker_listen, ca_file);
  if (!broker_access.ok()) return Fail(broker_access.status().message());
  sluice::cli::InstallBrokerAccess(**broker_access);
  std::vector<std::string> broker_args = {sluice::common::SelfExecutablePath(),
                                          "broker",
                                          "--listen",
                                          f.broker_listen,
                                          "--data-dir",
                                          (std::filesystem::path(f.data_dir) / "broker").string(),
                                          "--acl-file",
                                          (*broker_access)->acl_file().string(),
                                          "--max-connections",
                                          std::to_string(f.broker_max_connections),
                                          "--max-connections-per-address",
                                          std::to_string(f.broker_max_connections_per_address)};
  if (f.tls.enabled()) {
    // Absolute: the broker may resolve paths from elsewhere.
    broker_args.insert(broker_args.end(),
                       {"--tls-cert", std::filesystem::absolute(f.tls.cert_file).string(),
                        "--tls-key", std::filesystem::absolute(f.tls.key_file).string()});
  }
  services.Ensure(
      "broker",
      {std::move(broker_args), {}, (std::filesystem::path(f.data_dir) / "broker.log").string()});
  if (!WaitForPort(broker_host, broker_port, std::chrono::seconds(20)))
    return Fail("the broker did not start; see " + f.data_dir + "/broker.log");
  std::printf("broker listening on %s%s\n", f.broker_listen.c_str(),
              f.tls.enabled() ? " (TLS)" : "");

  sluice::cli::BackEndOptions options;
  options.data_dir = f.data_dir;
  options.database_url = url;
  options.api_host = api_host;
  options.api_port = api_port;
  options.registry_host = reg_host;
  options.registry_port = reg_port;
  options.tls = f.tls;
  options.ui_dir = f.ui_dir;
  if (const char* token = std::getenv("SLUICE_METRICS_TOKEN")) options.api.metrics_token = token;
  options.backfill_source_cap = f.backfill_source_cap;
  options.backfill_destination_cap = f.backfill_destination_cap;
  // All-in-one runs the community license.
  options.license_failure_is_fatal = true;
  auto back_end = sluice::cli::BackEnd::Start(db, options);
  if (!back_end.ok()) return Fail(back_end.status().message());

  EnsureFirstLogin(db, f.data_dir);
  std::atomic<bool> stop{false};
  std::thread writer;
  if (f.demo) {
    auto* cluster = (*provisioned)->cluster();
    if (!cluster) return Fail("--demo needs the embedded PostgreSQL (unset SLUICE_DATABASE_URL)");
    auto demo =
        sluice::cli::SeedDemo(db, *cluster, (*back_end)->keys(), f.broker_listen, f.demo_format);
    if (!demo.ok()) return Fail(demo.status().message());
    writer = sluice::cli::StartDemoWriter(demo->source_url, stop);
    std::printf("demo pipeline %s: %s -> %s (table orders)\n", demo->pipeline_id.c_str(),
                demo->source_url.c_str(), demo->target_url.c_str());
  }
  std::printf("sluice is up; Ctrl-C stops it\n");
  std::fflush(stdout);

  int sig = 0;
  sigwait(&set, &sig);
  spdlog::info("up: signal {}, shutting down", sig);
  stop = true;
  if (writer.joinable()) writer.join();
  (*back_end)->Stop();
  return 0;  // workers, broker and the embedded cluster stop as their owners go
}

sluice::cli::RegisterCommand up_registration([](CLI::App& root) {
  auto f = std::make_shared<UpFlags>();
  auto* cmd = root.add_subcommand("up", "Run everything on this machine");
  cmd->add_option("--data-dir", f->data_dir, "Where the database, broker and workers keep state")
      ->capture_default_str();
  cmd->add_option("--listen", f->listen, "API HOST:PORT")->capture_default_str();
  cmd->add_option("--registry-listen", f->registry_listen, "Schema registry HOST:PORT")
      ->capture_default_str();
  cmd->add_option("--broker-listen", f->broker_listen, "Broker HOST:PORT")->capture_default_str();
  cmd->add_option("--ui-dir", f->ui_dir,
                  "Built web UI (ui/dist); default: $SLUICE_UI_DIR or next to the binary")
      ->envname("SLUICE_UI_DIR");
  cmd->add_flag("--demo", f->demo, "Create a demo pipeline with writes going on");
  cmd->add_option("--demo-format", f->demo_format,
                  "The demo source's change events: json, or avro through the schema registry")
      ->check(CLI::IsMember({"json", "avro"}))
      ->capture_default_str();
  cmd->add_option("--backfill-source-cap", f->backfill_source_cap,
                  "Backfill items loading at once per source connector")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--backfill-destination-cap", f->backfill_destination_cap,
                  "Backfill items loading at once per destination connector")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--broker-max-connections", f->broker_max_connections,
                  "Open broker connections at most (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--broker-max-connections-per-address", f->broker_max_connections_per_address,
                  "Open broker connections from one client address at most; workers all "
                  "connect from this machine's address (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sluice::cli::AddConnectFlags(*cmd, f->connect_allow, f->connect_deny, f->jsonl_root);
  sluice::cli::AddTlsFlags(*cmd, f->tls,
                           "the API/UI, the schema registry and the broker (SASL_SSL)");
  cmd->callback([f] { sluice::cli::ExitCode() = Up(*f); });
});

}  // namespace
