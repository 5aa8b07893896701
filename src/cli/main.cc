// sluice: one binary, one subcommand per process kind (up, serve, worker,
// broker, loader, db ...). Commands register themselves; see command_registry.h.
#include <spdlog/spdlog.h>

#include <exception>
#include <string>

#include "cli/command_registry.h"

namespace sluice::cli {

std::vector<CommandRegistrar>& Registrars() {
  static std::vector<CommandRegistrar> registrars;
  return registrars;
}

int& ExitCode() {
  static int code = 0;
  return code;
}

}  // namespace sluice::cli

int main(int argc, char** argv) {
  CLI::App app{"Sluice: change-data-capture from your databases into your targets"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("sluice ") + SLUICE_VERSION);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace|debug|info|warn|error")->capture_default_str();
  for (auto& registrar : sluice::cli::Registrars()) registrar(app);
  app.parse_complete_callback([&] { spdlog::set_level(spdlog::level::from_str(log_level)); });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  return sluice::cli::ExitCode();
}
