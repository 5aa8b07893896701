// The spool of a streamed transaction: what goes in comes out, in order,
// whether it stayed in memory or went to its temporary file, records larger
// than a read chunk included.
#include "connectors/postgres/transaction_spool.h"

#include <gtest/gtest.h>

#include <vector>

namespace sluice::connectors::postgres {
namespace {

std::vector<std::pair<Lsn, std::string>> All(TransactionSpool& spool) {
  std::vector<std::pair<Lsn, std::string>> out;
  auto st = spool.ForEach([&](Lsn lsn, std::string_view bytes) {
    out.emplace_back(lsn, std::string(bytes));
    return common::Status::Ok();
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

TEST(TransactionSpool, ASmallTransactionStaysInMemory) {
  TransactionSpool spool(::testing::TempDir(), 1 << 20);
  ASSERT_TRUE(spool.Append(1, "a").ok());
  ASSERT_TRUE(spool.Append(2, std::string("b\0c", 3)).ok());
  EXPECT_EQ(spool.spilled_bytes(), 0u);
  auto all = All(spool);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0], (std::pair<Lsn, std::string>{1, "a"}));
  EXPECT_EQ(all[1], (std::pair<Lsn, std::string>{2, std::string("b\0c", 3)}));
}

TEST(TransactionSpool, PastItsMemoryItGoesToAFileAndComesBackInOrder) {
  TransactionSpool spool(::testing::TempDir(), 4096);
  const int n = 200000;  // ~4 MB: several read chunks, records cut at their ends
  for (int i = 0; i < n; ++i)
    ASSERT_TRUE(spool.Append(static_cast<Lsn>(i), "message-" + std::to_string(i)).ok());
  EXPECT_GT(spool.spilled_bytes(), 3u << 20);
  EXPECT_EQ(spool.messages(), static_cast<std::uint64_t>(n));
  int next = 0;
  auto st = spool.ForEach([&](Lsn lsn, std::string_view bytes) {
    EXPECT_EQ(lsn, static_cast<Lsn>(next));
    EXPECT_EQ(bytes, "message-" + std::to_string(next));
    ++next;
    return common::Status::Ok();
  });
  EXPECT_TRUE(st.ok());
  EXPECT_EQ(next, n);
  // It can be read again (nothing is consumed).
  EXPECT_EQ(All(spool).size(), static_cast<std::size_t>(n));
}

TEST(TransactionSpool, ARecordLargerThanAReadChunkComesBackWhole) {
  TransactionSpool spool(::testing::TempDir(), 1024);
  std::string big(3 << 20, 'x');
  big[12345] = 'y';
  ASSERT_TRUE(spool.Append(1, "before").ok());
  ASSERT_TRUE(spool.Append(2, big).ok());
  ASSERT_TRUE(spool.Append(3, "after").ok());  // stays in memory
  auto all = All(spool);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].second, "before");
  EXPECT_EQ(all[1].second, big);
  EXPECT_EQ(all[2].second, "after");
}

TEST(TransactionSpool, AnErrorFromTheCallerStopsTheReading) {
  TransactionSpool spool(::testing::TempDir(), 16);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(spool.Append(1, "m").ok());
  int seen = 0;
  auto st = spool.ForEach([&](Lsn, std::string_view) {
    return ++seen == 10 ? common::Unavailable("stop") : common::Status::Ok();
  });
  EXPECT_EQ(st.message(), "stop");
  EXPECT_EQ(seen, 10);
}

TEST(TransactionSpool, AnUnwritableDirectoryIsAnErrorNotACrash) {
  TransactionSpool spool("/nonexistent/sluice-spool", 16);
  auto st = spool.Append(1, "a message longer than sixteen bytes");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("/nonexistent/sluice-spool"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace sluice::connectors::postgres
