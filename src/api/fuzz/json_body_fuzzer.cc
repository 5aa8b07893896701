// libFuzzer target for the API's JSON request bodies: the bytes of a POST
// body through Request::Body() and the field readers of the create
// endpoints (pipelines, subscriptions, datamodels, connector configurations
// of every catalog type), plus the worker protocol's bodies (metric
// snapshots, delivery counters' launch config). The rule under test: bad
// input is refused with a 4xx ApiError or an error Status; any other
// exception (a 500 in the server), a crash or a sanitizer report is a bug.
#include <httplib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "api/http.h"
#include "connectors/types/connector_types.h"
#include "dataflow/worker_launch.h"
#include "metrics/snapshot.h"
#include "model/json_fields.h"
#include "model/pipelines/connectors_repository.h"
#include "model/pipelines/datamodels_repository.h"
#include "model/pipelines/pipelines_repository.h"
#include "model/pipelines/subscriptions_repository.h"

namespace {

using namespace sluice;

[[noreturn]] void Bug(const char* where, const char* what) {
  std::fprintf(stderr, "json body fuzzer: %s threw a non-4xx error: %s\n", where, what);
  std::abort();
}

// Runs one reader; a 4xx ApiError is the correct refusal.
template <typename Fn>
void Refusable(const char* where, Fn&& fn) {
  try {
    fn();
  } catch (const model::ApiError& e) {
    if (e.http_status() < 400 || e.http_status() > 499) Bug(where, e.what());
  } catch (const std::exception& e) {
    Bug(where, e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  httplib::Request raw;
  raw.method = "POST";
  raw.body.assign(reinterpret_cast<const char*>(data), size);
  api::Request req{raw, {}, std::nullopt};
  api::Json body;
  try {
    body = req.Body();
  } catch (const model::ApiError& e) {
    if (e.http_status() != 400) Bug("Body", e.what());
    return 0;
  }
  for (bool create : {true, false}) {
    Refusable("ReadPipelineFields", [&] {
      model::FieldReader f(body);
      model::PipelineRow p;
      model::ReadPipelineFields(f, p, create);
      f.Finish();
    });
    Refusable("ReadSubscriptionFields", [&] {
      model::FieldReader f(body);
      model::SubscriptionRow s;
      model::ReadSubscriptionFields(f, s, create);
      f.Finish();
    });
    Refusable("ReadDatamodelFields", [&] {
      model::FieldReader f(body);
      model::DatamodelRow d;
      model::ReadDatamodelFields(f, d, create);
      f.Finish();
    });
  }
  // POST /connectors: {"name", "type", "configuration"}; the configuration
  // is validated against the catalog type it names (or, for any body, each).
  Refusable("connector", [&] {
    model::FieldReader f(body);
    (void)f.OptionalString("name", 100);
    auto type = f.OptionalString("type", 50);
    auto config = f.OptionalObject("configuration");
    if (type && config)
      (void)model::ValidatedConfiguration(model::RequireConnectorType(*type), *config);
  });
  for (const auto& type : connectors::types::AllConnectorTypes())
    Refusable("ValidatedConfiguration", [&] { (void)model::ValidatedConfiguration(type, body); });
  // Worker protocol bodies: errors are Status values, never exceptions.
  Refusable("worker bodies", [&] {
    if (auto p = metrics::ProductionSnapshot::FromJson(body); p.ok()) (void)p->Validate(0);
    if (auto c = metrics::ConsumptionSnapshot::FromJson(body); c.ok()) (void)c->Validate(0);
    (void)dataflow::WorkerLaunch::FromJson(body);
  });
  return 0;
}
