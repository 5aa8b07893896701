#include "guard/address.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

namespace sluice::guard {

namespace {

// ::ffff:a.b.c.d is a.b.c.d.
Address Normalized(Address a) {
  static const std::uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (a.v6 && std::memcmp(a.bytes.data(), kMapped, 12) == 0) {
    Address v4;
    std::memcpy(v4.bytes.data(), a.bytes.data() + 12, 4);
    return v4;
  }
  return a;
}

}  // namespace

std::optional<Address> Address::Parse(std::string_view text) {
  std::string s(text);
  if (s.size() >= 2 && s.front() == '[' && s.back() == ']') s = s.substr(1, s.size() - 2);
  Address a;
  if (inet_pton(AF_INET, s.c_str(), a.bytes.data()) == 1) return a;
  a.v6 = true;
  if (inet_pton(AF_INET6, s.c_str(), a.bytes.data()) == 1) return Normalized(a);
  return std::nullopt;
}

std::optional<Address> Address::FromSockaddr(const sockaddr* sa) {
  if (!sa) return std::nullopt;
  Address a;
  if (sa->sa_family == AF_INET) {
    std::memcpy(a.bytes.data(), &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, 4);
    return a;
  }
  if (sa->sa_family == AF_INET6) {
    a.v6 = true;
    std::memcpy(a.bytes.data(), &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, 16);
    return Normalized(a);
  }
  return std::nullopt;
}

std::string Address::ToString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(v6 ? AF_INET6 : AF_INET, bytes.data(), buf, sizeof buf);
  return buf;
}

bool Address::IsLoopback() const {
  if (!v6) return bytes[0] == 127;
  for (int i = 0; i < 15; ++i)
    if (bytes[i] != 0) return false;
  return bytes[15] == 1;
}

bool Address::IsUnspecified() const {
  for (int i = 0; i < (v6 ? 16 : 4); ++i)
    if (bytes[i] != 0) return false;
  return true;
}

common::Result<Cidr> Cidr::Parse(std::string_view text) {
  std::string s(text);
  auto slash = s.find('/');
  auto base = Address::Parse(s.substr(0, slash));
  if (!base) return common::InvalidArgument(fmt::format("{}: not an address or CIDR block", s));
  Cidr c{*base, base->bits()};
  if (slash != std::string::npos) {
    std::string bits = s.substr(slash + 1);
    if (bits.empty() || bits.size() > 3 ||
        bits.find_first_not_of("0123456789") != std::string::npos)
      return common::InvalidArgument(fmt::format("{}: the prefix length is not a number", s));
    c.prefix = std::stoi(bits);
    // A mapped IPv6 block (::ffff:10.0.0.0/104) counts the IPv4 bits only.
    if (!c.base.v6 && s.find(':') != std::string::npos) c.prefix -= 96;
    if (c.prefix < 0 || c.prefix > c.base.bits())
      return common::InvalidArgument(fmt::format("{}: prefix length out of range", s));
  }
  return c;
}

bool Cidr::Contains(const Address& a) const {
  if (a.v6 != base.v6) return false;
  int full = prefix / 8, rest = prefix % 8;
  if (std::memcmp(a.bytes.data(), base.bytes.data(), static_cast<std::size_t>(full)) != 0)
    return false;
  if (rest == 0) return true;
  std::uint8_t mask = static_cast<std::uint8_t>(0xff << (8 - rest));
  return (a.bytes[static_cast<std::size_t>(full)] & mask) ==
         (base.bytes[static_cast<std::size_t>(full)] & mask);
}

std::string Cidr::ToString() const { return fmt::format("{}/{}", base.ToString(), prefix); }

bool IsLocalAddress(const Address& a) {
  if (a.IsLoopback() || a.IsUnspecified()) return true;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool local = false;
  for (ifaddrs* i = list; i && !local; i = i->ifa_next) {
    auto own = Address::FromSockaddr(i->ifa_addr);
    local = own && *own == a;
  }
  freeifaddrs(list);
  return local;
}

}  // namespace sluice::guard
