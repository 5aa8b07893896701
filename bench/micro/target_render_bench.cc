// The target's in-place render of a batch (RenderJsonImages and the key
// folding's CanonicalKeyText): in bench/cdc/mariadb.sh's catch-up the
// target lane spends a third of its CPU here, and the target database waits
// on the lane meanwhile. Rows like the CDC benches': ten columns of the
// usual kinds, JSON as the sources write it.
//   build/bench/micro/target_render_bench
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <map>
#include <string>
#include <vector>

#include "connectors/targets/copy_text.h"

namespace sluice::connectors::targets {
namespace {

const std::map<std::string, std::string, std::less<>> kTypes = {
    {"id", "int8"},      {"name", "text"},   {"amount", "numeric"}, {"qty", "int4"},
    {"ratio", "float8"}, {"paid", "bool"},   {"at", "timestamptz"}, {"note", "text"},
    {"doc", "jsonb"},    {"code", "varchar"}};

const std::string& TypeOf(std::string_view name) {
  static const std::string unknown;
  auto it = kTypes.find(name);
  return it == kTypes.end() ? unknown : it->second;
}

struct Batch {
  std::vector<std::string> keys, images;
  std::vector<JsonRow> rows;
};

Batch MakeBatch(int n) {
  Batch b;
  for (int i = 0; i < n; ++i) {
    b.keys.push_back(fmt::format(R"({{"id":{}}})", 1000000 + i));
    b.images.push_back(fmt::format(
        R"({{"id":{},"name":"customer-{}","amount":"{}.{:02}","qty":{},"ratio":{},"paid":{},)"
        R"("at":"2026-12-07T18:{:02}:{:02}.{:06}+00:00","note":{},"doc":{{"k":{},"tags":["a","b"]}},)"
        R"("code":"c\t{}"}})",
        1000000 + i, i, i % 100000, i % 100, i % 1000, 0.25 * i, i % 2 ? "true" : "false", i % 60,
        i % 60, i, i % 7 ? "\"a note with some words in it\"" : "null", i, i));
  }
  for (int i = 0; i < n; ++i) b.rows.push_back({b.keys[i], b.images[i]});
  return b;
}

void BM_RenderJsonImages(benchmark::State& state) {
  Batch b = MakeBatch(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto text = RenderJsonImages(b.rows, TypeOf);
    if (!text) state.SkipWithError("the batch was declined");
    benchmark::DoNotOptimize(text);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_RenderJsonImages)->Arg(2000);

void BM_CanonicalKeyText(benchmark::State& state) {
  Batch b = MakeBatch(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    for (const auto& row : b.rows) benchmark::DoNotOptimize(CanonicalKeyText(row.key));
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_CanonicalKeyText)->Arg(2000);

}  // namespace
}  // namespace sluice::connectors::targets

BENCHMARK_MAIN();
