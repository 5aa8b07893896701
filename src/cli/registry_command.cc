// `sluice registry`: the Confluent-compatible schema registry on its own,
// over the database named by SLUICE_DATABASE_URL (or --database-url).
// Stops cleanly on SIGINT/SIGTERM.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "cli/command_registry.h"
#include "registry/server.h"
#include "store/database.h"

namespace {

struct RegistryFlags {
  std::string listen = "127.0.0.1:8081";
  std::string database_url;
};

int RunRegistry(const RegistryFlags& f) {
  auto colon = f.listen.rfind(':');
  int port = -1;
  if (colon != std::string::npos) port = std::atoi(f.listen.c_str() + colon + 1);
  if (colon == std::string::npos || colon == 0 || port < 0 || port > 65535) {
    std::fprintf(stderr, "sluice registry: --listen must be HOST:PORT\n");
    return 2;
  }
  std::string url = f.database_url;
  if (url.empty()) {
    const char* env = std::getenv("SLUICE_DATABASE_URL");
    if (env) url = env;
  }
  if (url.empty()) {
    std::fprintf(stderr, "sluice registry: set SLUICE_DATABASE_URL or --database-url\n");
    return 2;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  sluice::store::Database db(url);
  sluice::registry::RegistryServer server(db);
  std::string host = f.listen.substr(0, colon);
  if (auto st = server.Start(host, port); !st.ok()) {
    std::fprintf(stderr, "sluice registry: %s\n", st.ToString().c_str());
    return 1;
  }
  // Machine-readable line: callers passing port 0 read the bound port here.
  std::printf("registry listening on %s:%d\n", host.c_str(), server.port());
  std::fflush(stdout);
  // No secret key here, so no tokens to check: `sluice serve` and `sluice up`
  // run the registry behind the API's credentials (api/registry_gate.h).
  spdlog::warn("this registry checks no credentials; keep it on a trusted network");
  int sig = 0;
  sigwait(&set, &sig);
  server.Stop();
  return 0;
}

sluice::cli::RegisterCommand registry_registration([](CLI::App& root) {
  auto flags = std::make_shared<RegistryFlags>();
  auto* cmd = root.add_subcommand("registry", "Run the Confluent-compatible schema registry");
  cmd->add_option("--listen", flags->listen, "HOST:PORT (port 0 picks a free one)")
      ->capture_default_str();
  cmd->add_option("--database-url", flags->database_url,
                  "libpq URL of the data-plane database (default: $SLUICE_DATABASE_URL)");
  cmd->callback([flags] { sluice::cli::ExitCode() = RunRegistry(*flags); });
});

}  // namespace
