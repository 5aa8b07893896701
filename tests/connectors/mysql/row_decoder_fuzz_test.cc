// The row decoder over the fuzz corpus recorded from a real MariaDB
// (tests/reliability/corpus/mysql_rows/, framing in
// connectors/mysql/fuzz/rows_input.h), and over mutations of it: what the
// server wrote decodes; anything else is a clean error (a Status), never a
// crash or an exception. The libFuzzer target (mysql_rows_fuzzer) explores
// further when clang is at hand; this runs in every build.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "connectors/mysql/fuzz/rows_input.h"

namespace sluice::connectors::mysql::fuzz {
namespace {

std::filesystem::path CorpusDir() {
  const char* env = std::getenv("SLUICE_SOURCE_DIR");
  std::filesystem::path root = env && *env ? env : SLUICE_SOURCE_DIR_DEFAULT;
  return root / "tests" / "reliability" / "corpus" / "mysql_rows";
}

std::vector<std::pair<std::string, std::string>> Corpus() {
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& e : std::filesystem::directory_iterator(CorpusDir())) {
    if (e.path().extension() != ".bin") continue;
    std::ifstream in(e.path(), std::ios::binary);
    files.emplace_back(e.path().filename().string(),
                       std::string((std::istreambuf_iterator<char>(in)), {}));
  }
  std::sort(files.begin(), files.end());
  return files;
}

// A decode that ends in a Status, whatever it says, but Internal: the
// insert text path and the tree path disagreeing. An exception fails.
::testing::AssertionResult Clean(const RowsInput& in) {
  try {
    auto st = DecodeRowsInput(in);
    if (st.code() == common::Code::kInternal) return ::testing::AssertionFailure() << st.message();
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "exception: " << e.what();
  }
}

TEST(MysqlRowDecoderCorpus, EveryRecordedEventDecodes) {
  auto files = Corpus();
  ASSERT_GE(files.size(), 5u) << "corpus missing under " << CorpusDir();
  std::size_t inputs = 0, rows = 0;
  for (const auto& [name, bytes] : files) {
    auto decoded = DecodeRowsInputs(bytes);
    ASSERT_FALSE(decoded.empty()) << name;
    EXPECT_EQ(EncodeRowsInput(decoded.front()),
              bytes.substr(0, EncodeRowsInput(decoded.front()).size()));
    for (const auto& in : decoded) {
      std::size_t n = 0;
      auto st = DecodeRowsInput(in, &n);
      EXPECT_TRUE(st.ok()) << name << ": " << st.message();
      ++inputs;
      rows += n;
    }
  }
  EXPECT_GT(rows, inputs) << "the corpus should hold multi-row events";
}

// Every byte of every part flipped, every part cut short, and random bytes
// spliced in (fixed seed): errors only.
TEST(MysqlRowDecoderCorpus, MutatedEventsAreCleanErrors) {
  std::mt19937 rng(20261206);
  std::size_t runs = 0, refused = 0;
  for (const auto& [name, bytes] : Corpus()) {
    for (const auto& original : DecodeRowsInputs(bytes)) {
      for (std::size_t part = 0; part < original.parts.size(); ++part) {
        const std::string& p = original.parts[part];
        std::size_t step = std::max<std::size_t>(1, p.size() / 64);
        for (std::size_t at = 0; at < p.size(); at += step) {
          for (unsigned char mask : {0x01, 0x80, 0xff}) {
            RowsInput in = original;
            in.parts[part][at] = static_cast<char>(in.parts[part][at] ^ mask);
            ASSERT_TRUE(Clean(in)) << name << " part " << part << " byte " << at;
            ++runs;
          }
          RowsInput cut = original;
          cut.parts[part].resize(at);
          ASSERT_TRUE(Clean(cut)) << name << " part " << part << " cut at " << at;
          refused += DecodeRowsInput(cut).ok() ? 0 : 1;
          ++runs;
        }
      }
      for (int i = 0; i < 200; ++i) {
        RowsInput in = original;
        auto& p = in.parts[rng() % in.parts.size()];
        std::size_t at = p.empty() ? 0 : rng() % p.size();
        std::string noise(rng() % 9, '\0');
        for (auto& c : noise) c = static_cast<char>(rng());
        p.replace(at, rng() % 5, noise);
        if (rng() % 4 == 0) in.column_count = rng() % 600;
        if (rng() % 8 == 0) in.kind = static_cast<std::uint8_t>(rng() % 3);
        ASSERT_TRUE(Clean(in)) << name << " random mutation " << i;
        ++runs;
      }
    }
  }
  EXPECT_GT(runs, 5000u);
  EXPECT_GT(refused, 0u) << "truncations should be refused";
}

}  // namespace
}  // namespace sluice::connectors::mysql::fuzz
