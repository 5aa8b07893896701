// TLS on Sluice's own listeners (`--tls-cert FILE --tls-key FILE`, PEM): the
// API, the schema registry and the broker. The files are checked when a
// process starts, so a missing, unreadable or mismatched one is a clear
// error then; messages name the file and OpenSSL's reason, never a byte of
// the key.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"

// OpenSSL's context type, declared as <openssl/types.h> does, so users of
// TlsFiles need not see OpenSSL.
typedef struct ssl_ctx_st SSL_CTX;  // NOLINT

namespace sluice::common {

struct TlsFiles {
  std::string cert_file;  // certificate chain, PEM; empty: plain TCP
  std::string key_file;   // its private key, PEM, not encrypted

  bool enabled() const { return !cert_file.empty() || !key_file.empty(); }
  // "https" or "http": how a client names this listener.
  const char* http_scheme() const { return enabled() ? "https" : "http"; }
};

struct SslCtxFree {
  void operator()(SSL_CTX* ctx) const;
};
using SslCtxPtr = std::unique_ptr<SSL_CTX, SslCtxFree>;

// Puts the certificate and key into `ctx` (TLS 1.2 or newer, no compression,
// no renegotiation) and checks that they belong together. Both files or
// neither: one without the other is InvalidArgument.
Status ConfigureServerTls(SSL_CTX* ctx, const TlsFiles& files);

// A fresh server context configured as above.
Result<SslCtxPtr> NewServerTlsContext(const TlsFiles& files);

// What ConfigureServerTls would say about these files (ok when disabled):
// the check a command runs before it starts anything.
Status CheckServerTls(const TlsFiles& files);

// OpenSSL's queued error reasons for this thread, "; "-joined, then cleared.
std::string TakeOpenSslErrors();

}  // namespace sluice::common
