// A source's encoding of one change into its envelope (EnvelopeValue): in
// bench/cdc/mariadb.sh's catch-up the source worker spent a sixth of its CPU
// here. An insert as the sources send it (its image already JSON text) and
// an update carried as trees, ten columns of the usual kinds.
//   build/bench/micro/envelope_bench
#include <benchmark/benchmark.h>

#include <string>

#include "dataflow/envelope.h"

namespace sluice::dataflow {
namespace {

connectors::TableSchema Schema() {
  connectors::TableSchema s;
  s.table = {"shop", "orders"};
  s.topic = "bench.shop.orders";
  const char* names[] = {"id",   "name", "amount", "qty", "ratio",
                         "paid", "at",   "note",   "doc", "code"};
  const char* types[] = {"int8", "text",        "numeric", "int4",  "float8",
                         "bool", "timestamptz", "text",    "jsonb", "varchar"};
  for (int i = 0; i < 10; ++i) s.columns.push_back({names[i], 0, -1, types[i], i == 0});
  return s;
}

constexpr const char* kImage =
    R"({"amount":"1234.56","at":"2026-12-07T19:58:39.532017Z","code":"C-0042","doc":{"k":42},)"
    R"("id":1000042,"name":"customer-42","note":"a short note","paid":true,"qty":7,"ratio":0.25})";

void BM_EnvelopeValueInsertAsText(benchmark::State& state) {
  const std::string columns = ColumnsJson(Schema());
  connectors::ChangeEvent e;
  e.op = common::ChangeOp::kCreate;
  e.table = {"shop", "orders"};
  e.after_json = kImage;
  e.key_json = R"({"id":1000042})";
  e.text_columns = {"doc"};
  for (auto _ : state) {
    ++e.lsn;
    benchmark::DoNotOptimize(EnvelopeValue(e, columns));
  }
}
BENCHMARK(BM_EnvelopeValueInsertAsText);

void BM_EnvelopeValueUpdateAsTrees(benchmark::State& state) {
  const std::string columns = ColumnsJson(Schema());
  connectors::ChangeEvent e;
  e.op = common::ChangeOp::kUpdate;
  e.table = {"shop", "orders"};
  e.after = nlohmann::json::parse(kImage);
  e.key = {{"id", 1000042}};
  e.unchanged_columns = {"note"};
  for (auto _ : state) {
    ++e.lsn;
    benchmark::DoNotOptimize(EnvelopeValue(e, columns));
  }
}
BENCHMARK(BM_EnvelopeValueUpdateAsTrees);

}  // namespace
}  // namespace sluice::dataflow

BENCHMARK_MAIN();
