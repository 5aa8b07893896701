#include "secrets/key_ring.h"

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

namespace sluice::secrets {
namespace {

common::Result<std::string> HexToBytes(const std::string& hex) {
  std::string out(hex.size() / 2 + 1, '\0');
  size_t len = 0;
  if (sodium_hex2bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), hex.data(),
                     hex.size(), " \n\r\t", &len, nullptr) != 0) {
    return common::InvalidArgument("configuration key is not valid hex");
  }
  out.resize(len);
  if (out.size() != KeyRing::kKeyBytes) {
    return common::InvalidArgument("configuration key must be 32 bytes (64 hex characters)");
  }
  return out;
}

std::vector<std::string> Split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(text);
  while (std::getline(in, cur, sep)) {
    auto first = cur.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) continue;
    out.push_back(cur.substr(first, cur.find_last_not_of(" \t\r\n") - first + 1));
  }
  return out;
}

}  // namespace

Key KeyRing::MakeKey(std::string bytes) {
  // The id names the key without revealing it: a hash of a labelled copy.
  std::string id = common::Sha256Hex("sluice-config-key-id:" + bytes).substr(0, 16);
  return Key{std::move(id), std::move(bytes)};
}

Key KeyRing::RandomKey() {
  std::string bytes(kKeyBytes, '\0');
  randombytes_buf(bytes.data(), bytes.size());
  return MakeKey(std::move(bytes));
}

common::Result<KeyRing> KeyRing::FromHex(const std::vector<std::string>& hex_keys) {
  if (sodium_init() < 0) return common::Internal("libsodium failed to initialise");
  if (hex_keys.empty()) return common::InvalidArgument("no configuration key given");
  std::vector<Key> keys;
  for (const auto& h : hex_keys) {
    auto bytes = HexToBytes(h);
    if (!bytes.ok()) return bytes.status();
    keys.push_back(MakeKey(std::move(*bytes)));
  }
  return KeyRing(std::move(keys));
}

const Key* KeyRing::Find(const std::string& id) const {
  for (const auto& k : keys_) {
    if (k.id == id) return &k;
  }
  return nullptr;
}

std::string KeyFilePath(const std::string& data_dir) { return data_dir + "/config.key"; }

common::Result<KeyRing> KeyRing::Load(const std::string& data_dir) {
  if (sodium_init() < 0) return common::Internal("libsodium failed to initialise");
  if (const char* env = std::getenv("SLUICE_CONFIG_KEY"); env != nullptr && *env != '\0') {
    auto ring = FromHex(Split(env, ','));
    if (!ring.ok()) return common::InvalidArgument("SLUICE_CONFIG_KEY: " + ring.status().message());
    return ring;
  }
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  if (ec) return common::Internal("cannot create " + data_dir + ": " + ec.message());
  const std::string path = KeyFilePath(data_dir);
  // O_EXCL: two first runs racing must not each write a different key.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd >= 0) {
    Key key = RandomKey();
    std::string hex = common::ToHex(key.bytes) + "\n";
    bool ok = ::write(fd, hex.data(), hex.size()) == static_cast<ssize_t>(hex.size());
    ::close(fd);
    if (!ok) return common::Internal("cannot write " + path);
    return KeyRing({key});
  }
  if (errno != EEXIST) {
    return common::Internal("cannot create " + path + ": " + std::strerror(errno));
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  auto ring = FromHex(Split(text.str(), '\n'));
  if (!ring.ok()) return common::InvalidArgument(path + ": " + ring.status().message());
  return ring;
}

common::Status WriteKeyFile(const std::string& path, const std::vector<Key>& keys) {
  std::string text;
  for (const auto& k : keys) text += common::ToHex(k.bytes) + "\n";
  const std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return common::Internal("cannot create " + tmp + ": " + std::strerror(errno));
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    return common::Internal("cannot write " + path);
  }
  return common::Status();
}

}  // namespace sluice::secrets
