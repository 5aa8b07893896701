#include "auth/token.h"

#include <sodium.h>

#include <cstring>

#include <nlohmann/json.hpp>

namespace sluice::auth {
namespace {

constexpr std::string_view kPrefix = "slu1.";

std::string Base64Url(std::string_view bytes) {
  const int variant = sodium_base64_VARIANT_URLSAFE_NO_PADDING;
  std::string out(sodium_base64_ENCODED_LEN(bytes.size(), variant), '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bytes.data()),
                    bytes.size(), variant);
  out.resize(std::strlen(out.c_str()));
  return out;
}

std::optional<std::string> FromBase64Url(std::string_view text) {
  std::string out(text.size(), '\0');
  size_t len = 0;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), text.data(),
                        text.size(), nullptr, &len, nullptr,
                        sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0) {
    return std::nullopt;
  }
  out.resize(len);
  return out;
}

std::optional<TokenKind> ParseKind(const std::string& s) {
  if (s == "access") return TokenKind::kAccess;
  if (s == "refresh") return TokenKind::kRefresh;
  if (s == "service") return TokenKind::kService;
  if (s == "worker") return TokenKind::kWorker;
  if (s == "loader") return TokenKind::kLoader;
  return std::nullopt;
}

}  // namespace

std::string TokenDigest(std::string_view token) {
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(digest, reinterpret_cast<const unsigned char*>(token.data()), token.size());
  return std::string(reinterpret_cast<char*>(digest), sizeof digest);
}

const char* TokenKindName(TokenKind kind) {
  switch (kind) {
    case TokenKind::kAccess:
      return "access";
    case TokenKind::kRefresh:
      return "refresh";
    case TokenKind::kService:
      return "service";
    case TokenKind::kWorker:
      return "worker";
    case TokenKind::kLoader:
      return "loader";
  }
  return "access";
}

std::string TokenSigner::Mac(std::string_view message) const {
  unsigned char mac[crypto_auth_hmacsha256_BYTES];
  crypto_auth_hmacsha256_state st;
  crypto_auth_hmacsha256_init(&st, reinterpret_cast<const unsigned char*>(key_.bytes().data()),
                              key_.bytes().size());
  crypto_auth_hmacsha256_update(&st, reinterpret_cast<const unsigned char*>(message.data()),
                                message.size());
  crypto_auth_hmacsha256_final(&st, mac);
  return std::string(reinterpret_cast<char*>(mac), sizeof mac);
}

std::string TokenSigner::Sign(const TokenClaims& c) const {
  nlohmann::json j = {{"k", TokenKindName(c.kind)},
                      {"sub", c.user_id.ToString()},
                      {"iat", c.issued_at},
                      {"exp", c.expires_at}};
  if (c.service_account_id) j["sa"] = c.service_account_id->ToString();
  if (!c.name.empty()) j["name"] = c.name;
  if (c.connector_id) j["cid"] = c.connector_id->ToString();
  if (c.generation) j["gen"] = c.generation->ToString();
  if (c.session_id) j["sid"] = c.session_id->ToString();
  // A nonce keeps two tokens issued in the same second distinct.
  unsigned char nonce[8];
  randombytes_buf(nonce, sizeof nonce);
  j["n"] = Base64Url(std::string_view(reinterpret_cast<char*>(nonce), sizeof nonce));
  std::string signed_part = std::string(kPrefix) + Base64Url(j.dump());
  return signed_part + "." + Base64Url(Mac(signed_part));
}

common::Result<TokenClaims> TokenSigner::Verify(std::string_view token, std::int64_t now) const {
  const auto bad = common::Unauthenticated("invalid or expired token");
  if (token.substr(0, kPrefix.size()) != kPrefix) return bad;
  size_t dot = token.rfind('.');
  if (dot == std::string_view::npos || dot < kPrefix.size()) return bad;
  std::string_view signed_part = token.substr(0, dot);
  auto mac = FromBase64Url(token.substr(dot + 1));
  std::string expected = Mac(signed_part);
  if (!mac || mac->size() != expected.size() ||
      sodium_memcmp(mac->data(), expected.data(), expected.size()) != 0) {
    return bad;
  }
  auto payload = FromBase64Url(signed_part.substr(kPrefix.size()));
  if (!payload) return bad;
  auto j = nlohmann::json::parse(*payload, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return bad;
  try {
    TokenClaims c;
    auto kind = ParseKind(j.at("k").get<std::string>());
    auto sub = common::Uuid::Parse(j.at("sub").get<std::string>());
    if (!kind || !sub) return bad;
    c.kind = *kind;
    c.user_id = *sub;
    c.issued_at = j.at("iat").get<std::int64_t>();
    c.expires_at = j.at("exp").get<std::int64_t>();
    if (j.contains("sa")) {
      auto sa = common::Uuid::Parse(j["sa"].get<std::string>());
      if (!sa) return bad;
      c.service_account_id = *sa;
    }
    if (j.contains("name")) c.name = j["name"].get<std::string>();
    for (auto [key, field] : {std::pair{"cid", &c.connector_id}, std::pair{"gen", &c.generation},
                              std::pair{"sid", &c.session_id}}) {
      if (!j.contains(key)) continue;
      auto id = common::Uuid::Parse(j[key].get<std::string>());
      if (!id) return bad;
      *field = *id;
    }
    if (c.kind == TokenKind::kWorker && (!c.connector_id || !c.generation)) return bad;
    if (c.kind == TokenKind::kLoader && c.name.empty()) return bad;
    if (c.expires_at <= now) return bad;
    return c;
  } catch (const nlohmann::json::exception&) {
    return bad;
  }
}

}  // namespace sluice::auth
