// A throwaway self-signed certificate for TLS tests, made with the openssl
// CLI: it names 127.0.0.1 and localhost, so clients that check the host
// (curl, librdkafka, Sluice's own) accept it with the certificate as CA.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace sluice::testing {

struct TestCert {
  std::string cert;  // PEM certificate, also the CA clients trust
  std::string key;   // its PEM private key
};

inline TestCert MakeSelfSignedCert(const std::filesystem::path& dir,
                                   const std::string& name = "server") {
  std::filesystem::create_directories(dir);
  TestCert c{(dir / (name + "-cert.pem")).string(), (dir / (name + "-key.pem")).string()};
  std::string cmd =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost "
      "-addext subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:127.0.0.1 -keyout '" +
      c.key + "' -out '" + c.cert + "' >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("openssl could not make a cert");
  return c;
}

// The whole of a file, for checking what a log does not contain.
inline std::string ReadAll(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

}  // namespace sluice::testing
