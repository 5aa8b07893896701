// IP addresses and CIDR blocks, as the connect policy compares them. An
// IPv4-mapped IPv6 address (::ffff:a.b.c.d) is the IPv4 address it maps, so
// a rule written for one family holds for the other spelling.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

struct sockaddr;

namespace sluice::guard {

struct Address {
  bool v6 = false;
  std::array<std::uint8_t, 16> bytes{};  // IPv4: the first 4

  // A literal address ("10.0.0.1", "::1", "[::1]"); nullopt for anything else.
  static std::optional<Address> Parse(std::string_view text);
  // From getaddrinfo's answer (AF_INET / AF_INET6); nullopt for other families.
  static std::optional<Address> FromSockaddr(const sockaddr* sa);

  std::string ToString() const;
  int bits() const { return v6 ? 128 : 32; }
  bool IsLoopback() const;     // 127.0.0.0/8, ::1
  bool IsUnspecified() const;  // 0.0.0.0, ::
  friend bool operator==(const Address&, const Address&) = default;
};

struct Cidr {
  Address base;
  int prefix = 0;

  // "10.0.0.0/8", "fe80::/10", or one address ("10.1.2.3" is /32).
  static common::Result<Cidr> Parse(std::string_view text);
  bool Contains(const Address& a) const;
  std::string ToString() const;
};

// Loopback, unspecified, or an address of one of this host's interfaces:
// an address that reaches a server listening on this machine.
bool IsLocalAddress(const Address& a);

}  // namespace sluice::guard
