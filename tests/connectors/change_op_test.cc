#include "common/change_op.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice::common {
namespace {

constexpr ChangeOp kEveryOp[] = {ChangeOp::kCreate, ChangeOp::kUpdate, ChangeOp::kDelete,
                                 ChangeOp::kRead, ChangeOp::kTruncate};

TEST(ChangeOp, EveryOpRoundTripsThroughItsLetterAndItsName) {
  std::string letters;
  for (ChangeOp op : kEveryOp) {
    letters += Letter(op);
    auto from_letter = ChangeOpFromLetter(std::string(1, Letter(op)));
    ASSERT_TRUE(from_letter.ok()) << from_letter.status().message();
    EXPECT_EQ(*from_letter, op);
    auto from_name = ChangeOpFromName(Name(op));
    ASSERT_TRUE(from_name.ok()) << from_name.status().message();
    EXPECT_EQ(*from_name, op);
  }
  // The envelope's wire letters, which must never change.
  EXPECT_EQ(letters, "cudrt");
  EXPECT_EQ(Name(ChangeOp::kUpdate), "update");
}

TEST(ChangeOp, ABadLetterOrNameIsRefusedInTheDecodersWords) {
  for (const char* bad : {"x", "m", "", "cc", "C", "update"}) {
    auto op = ChangeOpFromLetter(bad);
    ASSERT_FALSE(op.ok()) << bad;
    EXPECT_EQ(op.status().code(), Code::kInvalidArgument);
    EXPECT_EQ(op.status().message(), std::string("unknown op '") + bad + "'");
  }
  for (const char* bad : {"u", "Update", "insert", ""})
    EXPECT_FALSE(ChangeOpFromName(bad).ok()) << bad;
}

TEST(ChangeOp, OnlyCreateUpdateAndReadWriteARow) {
  EXPECT_TRUE(WritesRow(ChangeOp::kCreate));
  EXPECT_TRUE(WritesRow(ChangeOp::kUpdate));
  EXPECT_TRUE(WritesRow(ChangeOp::kRead));
  EXPECT_FALSE(WritesRow(ChangeOp::kDelete));
  EXPECT_FALSE(WritesRow(ChangeOp::kTruncate));
}

}  // namespace
}  // namespace sluice::common
