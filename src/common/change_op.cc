#include "common/change_op.h"

#include <array>
#include <string>

namespace sluice::common {

namespace {

struct Spelling {
  ChangeOp op;
  std::string_view name;
};

constexpr std::array<Spelling, 5> kSpellings{{
    {ChangeOp::kCreate, "create"},
    {ChangeOp::kUpdate, "update"},
    {ChangeOp::kDelete, "delete"},
    {ChangeOp::kRead, "read"},
    {ChangeOp::kTruncate, "truncate"},
}};

}  // namespace

std::string_view Name(ChangeOp op) {
  for (const auto& s : kSpellings)
    if (s.op == op) return s.name;
  return "?";  // only a value cast from outside the enum gets here
}

Result<ChangeOp> ChangeOpFromLetter(std::string_view letter) {
  for (const auto& s : kSpellings)
    if (letter.size() == 1 && letter[0] == Letter(s.op)) return s.op;
  return InvalidArgument("unknown op '" + std::string(letter) + "'");
}

Result<ChangeOp> ChangeOpFromName(std::string_view name) {
  for (const auto& s : kSpellings)
    if (name == s.name) return s.op;
  return InvalidArgument("unknown op name '" + std::string(name) + "'");
}

}  // namespace sluice::common
