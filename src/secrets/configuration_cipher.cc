#include "secrets/configuration_cipher.h"

#include <sodium.h>

#include "common/hex.h"

namespace sluice::secrets {
namespace {

constexpr const char* kVersion = "v1";
// Binds ciphertexts to their purpose: an envelope is not valid anywhere else.
constexpr const char* kAad = "sluice-configuration-v1";

std::string ToB64(const std::string& bytes) {
  std::string out(sodium_base64_encoded_len(bytes.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bytes.data()),
                    bytes.size(), sodium_base64_VARIANT_ORIGINAL);
  out.resize(out.size() - 1);  // the terminating NUL
  return out;
}

common::Result<std::string> FromB64(const std::string& text) {
  std::string out(text.size(), '\0');
  size_t len = 0;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), text.data(),
                        text.size(), nullptr, &len, nullptr, sodium_base64_VARIANT_ORIGINAL) != 0) {
    return common::InvalidArgument("encrypted configuration is not valid base64");
  }
  out.resize(len);
  return out;
}

const unsigned char* U(const std::string& s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

}  // namespace

bool IsEnvelope(const nlohmann::json& stored) {
  return stored.is_object() && stored.size() == 4 && stored.value("enc", "") == kVersion &&
         stored.contains("kid") && stored.contains("nonce") && stored.contains("ct");
}

std::string EnvelopeKeyId(const nlohmann::json& stored) {
  return IsEnvelope(stored) ? stored["kid"].get<std::string>() : std::string();
}

nlohmann::json EncryptConfiguration(const nlohmann::json& plain, const KeyRing& ring) {
  const Key& key = ring.primary();
  std::string message = plain.dump();
  std::string nonce(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES, '\0');
  randombytes_buf(nonce.data(), nonce.size());
  std::string ct(message.size() + crypto_aead_xchacha20poly1305_ietf_ABYTES, '\0');
  unsigned long long ct_len = 0;
  std::string aad = std::string(kAad) + ":" + key.id;
  crypto_aead_xchacha20poly1305_ietf_encrypt(reinterpret_cast<unsigned char*>(ct.data()), &ct_len,
                                             U(message), message.size(), U(aad), aad.size(),
                                             nullptr, U(nonce), U(key.bytes));
  ct.resize(ct_len);
  return {{"enc", kVersion}, {"kid", key.id}, {"nonce", ToB64(nonce)}, {"ct", ToB64(ct)}};
}

common::Result<nlohmann::json> DecryptConfiguration(const nlohmann::json& stored,
                                                    const KeyRing& ring) {
  if (!IsEnvelope(stored)) return stored;
  if (!stored["kid"].is_string() || !stored["nonce"].is_string() || !stored["ct"].is_string()) {
    return common::InvalidArgument("malformed encrypted configuration");
  }
  const Key* key = ring.Find(stored["kid"].get<std::string>());
  if (key == nullptr) {
    return common::InvalidArgument("configuration encrypted under unknown key " +
                                   stored["kid"].get<std::string>());
  }
  auto nonce = FromB64(stored["nonce"].get<std::string>());
  if (!nonce.ok()) return nonce.status();
  auto ct = FromB64(stored["ct"].get<std::string>());
  if (!ct.ok()) return ct.status();
  if (nonce->size() != crypto_aead_xchacha20poly1305_ietf_NPUBBYTES ||
      ct->size() < crypto_aead_xchacha20poly1305_ietf_ABYTES) {
    return common::InvalidArgument("malformed encrypted configuration");
  }
  std::string plain(ct->size(), '\0');
  unsigned long long plain_len = 0;
  std::string aad = std::string(kAad) + ":" + key->id;
  if (crypto_aead_xchacha20poly1305_ietf_decrypt(reinterpret_cast<unsigned char*>(plain.data()),
                                                 &plain_len, nullptr, U(*ct), ct->size(), U(aad),
                                                 aad.size(), U(*nonce), U(key->bytes)) != 0) {
    return common::InvalidArgument("encrypted configuration failed authentication");
  }
  plain.resize(plain_len);
  auto j = nlohmann::json::parse(plain, nullptr, false);
  if (j.is_discarded()) return common::InvalidArgument("decrypted configuration is not JSON");
  return j;
}

common::Result<std::string> KeyedHash(const KeyRing& ring, const std::string& key_id,
                                      const std::string& payload) {
  const Key* key = key_id.empty() ? &ring.primary() : ring.Find(key_id);
  if (key == nullptr) return common::InvalidArgument("unknown key " + key_id);
  // A subkey, so the AEAD key is never used directly as a MAC key.
  unsigned char subkey[crypto_auth_hmacsha256_KEYBYTES];
  crypto_kdf_derive_from_key(subkey, sizeof subkey, 1, "sluihmac", U(key->bytes));
  unsigned char mac[crypto_auth_hmacsha256_BYTES];
  crypto_auth_hmacsha256_state st;
  crypto_auth_hmacsha256_init(&st, subkey, sizeof subkey);
  crypto_auth_hmacsha256_update(&st, U(payload), payload.size());
  crypto_auth_hmacsha256_final(&st, mac);
  sodium_memzero(subkey, sizeof subkey);
  return common::ToHex(std::string(reinterpret_cast<char*>(mac), sizeof mac));
}

}  // namespace sluice::secrets
