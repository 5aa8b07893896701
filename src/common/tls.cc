#include "common/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

namespace sluice::common {

namespace {

// An encrypted key must fail, not prompt on the terminal for a passphrase.
int NoPassphrase(char*, int, int, void*) { return 0; }

// Whether `path` can be opened for reading; the reason when not. Nothing of
// the content is read into a message.
Status Readable(const char* flag, const std::string& path) {
  std::ifstream in(path);
  if (!in)
    return InvalidArgument(fmt::format("{} {}: cannot read: {}", flag, path, std::strerror(errno)));
  return {};
}

}  // namespace

void SslCtxFree::operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }

std::string TakeOpenSslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(e);
    std::string text = reason ? reason : fmt::format("OpenSSL error {:#x}", e);
    if (out.find(text) != std::string::npos) continue;
    if (!out.empty()) out += "; ";
    out += text;
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

Status ConfigureServerTls(SSL_CTX* ctx, const TlsFiles& files) {
  if (files.cert_file.empty()) return InvalidArgument("--tls-key needs --tls-cert");
  if (files.key_file.empty()) return InvalidArgument("--tls-cert needs --tls-key");
  SLUICE_RETURN_IF_ERROR(Readable("--tls-cert", files.cert_file));
  SLUICE_RETURN_IF_ERROR(Readable("--tls-key", files.key_file));
  ERR_clear_error();
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(
      ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_default_passwd_cb(ctx, NoPassphrase);
  if (SSL_CTX_use_certificate_chain_file(ctx, files.cert_file.c_str()) != 1) {
    return InvalidArgument(fmt::format("--tls-cert {}: not a usable PEM certificate ({})",
                                       files.cert_file, TakeOpenSslErrors()));
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, files.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    return InvalidArgument(
        fmt::format("--tls-key {}: not a usable unencrypted PEM private key for {} ({})",
                    files.key_file, files.cert_file, TakeOpenSslErrors()));
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return InvalidArgument(fmt::format("--tls-key {} does not match --tls-cert {} ({})",
                                       files.key_file, files.cert_file, TakeOpenSslErrors()));
  }
  return {};
}

Result<SslCtxPtr> NewServerTlsContext(const TlsFiles& files) {
  SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx) return Internal("TLS: " + TakeOpenSslErrors());
  SLUICE_RETURN_IF_ERROR(ConfigureServerTls(ctx.get(), files));
  return ctx;
}

Status CheckServerTls(const TlsFiles& files) {
  if (!files.enabled()) return {};
  auto ctx = NewServerTlsContext(files);
  return ctx.ok() ? Status() : ctx.status();
}

}  // namespace sluice::common
