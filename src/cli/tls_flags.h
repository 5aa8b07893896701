// --tls-cert / --tls-key, shared by `serve`, `up` and `broker`: PEM files
// that turn the listeners to TLS. Both or neither; one alone is a usage error.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "common/tls.h"

namespace sluice::cli {

// `listeners` says in the help what turns to TLS.
void AddTlsFlags(CLI::App& cmd, common::TlsFiles& files, const std::string& listeners);

}  // namespace sluice::cli
