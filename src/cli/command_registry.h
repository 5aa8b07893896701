// Each subcommand lives in its own src/cli/<name>_command.cc and registers
// itself here, so adding a command never edits main.cc.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <vector>

namespace sluice::cli {

using CommandRegistrar = std::function<void(CLI::App& root)>;

std::vector<CommandRegistrar>& Registrars();

struct RegisterCommand {
  explicit RegisterCommand(CommandRegistrar r) { Registrars().push_back(std::move(r)); }
};

// Exit code a command sets for main() to return; CLI11 callbacks return void.
int& ExitCode();

}  // namespace sluice::cli
