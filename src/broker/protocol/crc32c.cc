#include "broker/protocol/crc32c.h"

#include <array>
#include <cstring>

namespace sluice::broker::protocol {

namespace {
// Slicing-by-8 tables of the reflected Castagnoli polynomial.
struct Tables {
  std::array<std::array<std::uint32_t, 256>, 8> t{};
  Tables() {
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[0][i] = c;
    }
    for (std::uint32_t i = 0; i < 256; ++i) {
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
    }
  }
};
const Tables& T() {
  static const Tables tables;
  return tables;
}

constexpr std::uint32_t kPoly = 0x82F63B78u;

// a * b modulo the polynomial, both in the reflected bit order of the CRC.
std::uint32_t MultModP(std::uint32_t a, std::uint32_t b) {
  std::uint32_t product = 0;
  for (std::uint32_t m = 1u << 31; m != 0; m >>= 1) {
    if (a & m) product ^= b;
    b = (b & 1) ? (b >> 1) ^ kPoly : b >> 1;
  }
  return product;
}

// x^(8 * bytes) modulo the polynomial: multiplying a CRC register by it
// gives the register after `bytes` zero bytes.
std::uint32_t ZeroBytesOperator(std::size_t bytes) {
  std::uint32_t result = 1u << 31;  // x^0
  std::uint32_t square = 1u << 30;  // x^1, squared on the way: x^(2^k)
  for (std::size_t bits = bytes * 8; bits != 0; bits >>= 1) {
    if (bits & 1) result = MultModP(square, result);
    square = MultModP(square, square);
  }
  return result;
}

#if defined(__x86_64__)
// SSE4.2's crc32 computes exactly CRC-32C (same polynomial, same bit order).
__attribute__((target("sse4.2"))) std::uint64_t Crc32Word(std::uint64_t c, const char* p) {
  std::uint64_t word;
  std::memcpy(&word, p, 8);  // unaligned load; the instruction reads little-endian
  return __builtin_ia32_crc32di(c, word);
}

// The crc32 instruction takes 3 cycles but can start one per cycle, so three
// independent streams over three adjacent blocks run about 3x faster than
// one; their registers are then joined (CRC is linear: the register after
// A+B is reg(A) advanced over |B| zero bytes, xor reg(B) started from zero).
constexpr std::size_t kStreamBlock = 8192;

__attribute__((target("sse4.2"))) std::uint32_t Crc32cHardware(std::string_view data,
                                                               std::uint32_t crc) {
  static const std::uint32_t kAdvanceBlock = ZeroBytesOperator(kStreamBlock);
  const char* p = data.data();
  std::size_t n = data.size();
  std::uint64_t c = ~crc;
  while (n >= 3 * kStreamBlock) {
    std::uint64_t c1 = 0, c2 = 0;
    for (std::size_t i = 0; i < kStreamBlock; i += 8) {
      c = Crc32Word(c, p + i);
      c1 = Crc32Word(c1, p + kStreamBlock + i);
      c2 = Crc32Word(c2, p + 2 * kStreamBlock + i);
    }
    c = MultModP(kAdvanceBlock, static_cast<std::uint32_t>(c)) ^ c1;
    c = MultModP(kAdvanceBlock, static_cast<std::uint32_t>(c)) ^ c2;
    p += 3 * kStreamBlock;
    n -= 3 * kStreamBlock;
  }
  while (n >= 8) {
    c = Crc32Word(c, p);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<std::uint32_t>(c);
  while (n--) c32 = __builtin_ia32_crc32qi(c32, static_cast<unsigned char>(*p++));
  return ~c32;
}

bool HaveHardwareCrc() {
  static const bool have = __builtin_cpu_supports("sse4.2");
  return have;
}
#endif
}  // namespace

std::uint32_t Crc32cSoftware(std::string_view data, std::uint32_t crc) {
  const auto& t = T().t;
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  std::size_t n = data.size();
  crc = ~crc;
  while (n >= 8) {
    std::uint32_t lo =
        crc ^ (static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
               (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24));
    crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
          t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
    p += 8;
    n -= 8;
  }
  while (n--) crc = t[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return ~crc;
}

std::uint32_t Crc32c(std::string_view data, std::uint32_t crc) {
#if defined(__x86_64__)
  if (HaveHardwareCrc()) return Crc32cHardware(data, crc);
#endif
  return Crc32cSoftware(data, crc);
}

}  // namespace sluice::broker::protocol
