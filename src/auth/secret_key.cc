#include "auth/secret_key.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/hex.h"

namespace sluice::auth {
namespace {

common::Result<std::string> FromHex(const std::string& hex) {
  std::string out(hex.size() / 2 + 1, '\0');
  size_t len = 0;
  if (sodium_hex2bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), hex.data(),
                     hex.size(), " \n\r\t", &len, nullptr) != 0) {
    return common::InvalidArgument("secret key is not valid hex");
  }
  out.resize(len);
  return out;
}

}  // namespace

common::Result<SecretKey> SecretKey::FromBytes(std::string bytes) {
  if (bytes.size() < 16) return common::InvalidArgument("secret key must be at least 16 bytes");
  return SecretKey(std::move(bytes));
}

SecretKey SecretKey::Random() {
  std::string bytes(kBytes, '\0');
  randombytes_buf(bytes.data(), bytes.size());
  return SecretKey(std::move(bytes));
}

common::Result<SecretKey> SecretKey::Load(const std::string& data_dir) {
  if (sodium_init() < 0) return common::Internal("libsodium failed to initialise");
  if (const char* env = std::getenv("SLUICE_SECRET_KEY"); env != nullptr && *env != '\0') {
    auto bytes = FromHex(env);
    if (!bytes.ok())
      return common::InvalidArgument("SLUICE_SECRET_KEY: " + bytes.status().message());
    return FromBytes(std::move(*bytes));
  }
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  if (ec) return common::Internal("cannot create " + data_dir + ": " + ec.message());
  const std::string path = data_dir + "/secret.key";
  // O_EXCL: two first runs racing must not each write a different key.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd >= 0) {
    SecretKey key = Random();
    std::string hex = common::ToHex(key.bytes()) + "\n";
    bool ok = ::write(fd, hex.data(), hex.size()) == static_cast<ssize_t>(hex.size());
    ::close(fd);
    if (!ok) return common::Internal("cannot write " + path);
    return key;
  }
  if (errno != EEXIST)
    return common::Internal("cannot create " + path + ": " + std::strerror(errno));
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  auto bytes = FromHex(text.str());
  if (!bytes.ok()) return common::InvalidArgument(path + ": " + bytes.status().message());
  return FromBytes(std::move(*bytes));
}

}  // namespace sluice::auth
