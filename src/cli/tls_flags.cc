#include "cli/tls_flags.h"

namespace sluice::cli {

void AddTlsFlags(CLI::App& cmd, common::TlsFiles& files, const std::string& listeners) {
  auto* cert = cmd.add_option(
      "--tls-cert", files.cert_file,
      "PEM certificate (chain): " + listeners + " speak TLS; Sluice's own clients trust this file");
  auto* key =
      cmd.add_option("--tls-key", files.key_file, "PEM private key of --tls-cert (unencrypted)");
  cert->needs(key);
  key->needs(cert);
}

}  // namespace sluice::cli
