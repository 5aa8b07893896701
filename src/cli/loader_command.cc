// `sluice loader`: one backfill item. Launched by the backfill launcher with
// `--config FILE` (a 0600 launch file), in a Kubernetes Job with `--item ID
// --api URL` and the attempt's token in SLUICE_LOADER_TOKEN (config fetched
// from, and reports sent to, the back end), or by hand with `--item ID` over
// SLUICE_DATABASE_URL (connector configs decrypted with --data-dir's key).
//   --check-only  validates the pair and stamps checked_at (exit 0), refuses
//                 it (item failed, exit 3), or gives no verdict (exit 1: the
//                 launcher fails open).
//   otherwise     loads the pair, reporting rows_written / last_report_at by
//                 its own clock; exit 0 completed, 1 failed (reported),
//                 4 the attempt is no longer ours, 5 transient (requeued).
#include <signal.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>

#include "backfill/api_reporter.h"
#include "backfill/launch.h"
#include "backfill/loader.h"
#include "backfill/report.h"
#include "backfill/repository.h"
#include "cli/command_registry.h"
#include "guard/connect_policy.h"
#include "guard/postgres_conninfo.h"
#include "secrets/key_ring.h"

namespace {

using sluice::backfill::ItemReporter;
using sluice::backfill::ItemReports;
using sluice::backfill::LoaderConfig;
using sluice::common::Code;

std::atomic<bool> g_loader_stop{false};
void OnLoaderSignal(int) { g_loader_stop = true; }

struct LoaderFlags {
  std::string config_path;
  std::string item_id;
  std::string data_dir = "./var";
  std::string api_url;
  bool check_only = false;
};

sluice::common::Result<LoaderConfig> ConfigFromItem(const LoaderFlags& f) {
  const char* url = std::getenv("SLUICE_DATABASE_URL");
  if (!url) return sluice::common::InvalidArgument("--item needs SLUICE_DATABASE_URL");
  auto id = sluice::common::Uuid::Parse(f.item_id);
  if (!id) return sluice::common::InvalidArgument("--item is not a UUID");
  auto keys = sluice::secrets::KeyRing::Load(f.data_dir);
  if (!keys.ok()) return keys.status();
  // Run by hand beside the data plane: its database is closed to the load.
  sluice::guard::ProtectInProcess(sluice::guard::ControlDatabaseEndpoint(url));
  pqxx::connection conn(url);
  pqxx::work tx(conn);
  auto item = sluice::backfill::Repository::FindItem(tx, *id);
  if (!item) return sluice::common::NotFound("no such backfill item");
  auto run = sluice::backfill::Repository::FindRun(tx, item->run_id);
  return sluice::backfill::BuildLoaderConfig(tx, *item, *run, &*keys, std::string(url));
}

bool IsRefusal(Code c) {
  return c == Code::kInvalidArgument || c == Code::kFailedPrecondition || c == Code::kNotFound;
}

int RunLoader(const LoaderFlags& f) {
  LoaderConfig config;
  std::unique_ptr<ItemReports> reporter;
  if (!f.api_url.empty()) {
    const char* token = std::getenv("SLUICE_LOADER_TOKEN");
    if (!token || !*token) {
      std::fprintf(stderr, "sluice loader: --api needs SLUICE_LOADER_TOKEN\n");
      return 2;
    }
    if (f.check_only) {
      std::fprintf(stderr, "sluice loader: pre-checks run beside the back end, not over --api\n");
      return 2;
    }
    auto fetched = sluice::backfill::FetchLoaderConfig(f.api_url, token, f.item_id);
    if (!fetched.ok()) {
      std::fprintf(stderr, "sluice loader: %s\n", fetched.status().message().c_str());
      // Refused: this attempt is no longer ours (exit 4); else transient.
      return fetched.status().code() == Code::kFailedPrecondition ? 4 : 5;
    }
    config = std::move(fetched).value();
    reporter = std::make_unique<sluice::backfill::ApiItemReporter>(f.api_url, token, f.item_id);
  } else if (!f.config_path.empty()) {
    std::ifstream in(f.config_path);
    auto json = nlohmann::json::parse(in, nullptr, false);
    auto parsed = LoaderConfig::FromJson(json);
    if (!parsed.ok()) {
      std::fprintf(stderr, "sluice loader: %s\n", parsed.status().message().c_str());
      return 2;
    }
    config = std::move(parsed).value();
  } else {
    auto built = ConfigFromItem(f);
    if (!built.ok()) {
      std::fprintf(stderr, "sluice loader: %s\n", built.status().message().c_str());
      return 2;
    }
    config = std::move(built).value();
  }
  auto id = sluice::common::Uuid::Parse(config.item_id);
  if (!id) return 2;
  // The launcher's connect policy: this loader's connect-time check is serve's.
  if (!config.connect_policy.is_null()) {
    auto policy = sluice::guard::ConnectPolicy::FromJson(config.connect_policy);
    if (!policy.ok()) {
      std::fprintf(stderr, "sluice loader: %s\n", policy.status().message().c_str());
      return 2;
    }
    sluice::guard::SetProcessPolicy(std::move(policy).value());
  }
  if (!reporter && config.report_database_url)
    reporter =
        std::make_unique<ItemReporter>(*config.report_database_url, *id, config.attempt_micros);
  struct sigaction sa {};
  sa.sa_handler = OnLoaderSignal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  if (f.check_only) {
    auto verdict = sluice::backfill::CheckPair(config);
    auto now = sluice::common::Clock::now();
    if (verdict.ok()) {
      spdlog::info("pre-check accepted {} -> {}", config.source_table, config.target_table);
      if (reporter) {
        auto st = reporter->Checked(now, verdict->approximate_row_count);
        if (!st.ok()) spdlog::warn("{}", st.message());
      }
      return 0;
    }
    if (IsRefusal(verdict.status().code())) {
      spdlog::error("pre-check refused {}: {}", config.source_table, verdict.status().message());
      if (reporter) (void)reporter->Rejected(verdict.status().message(), now);
      return 3;
    }
    spdlog::warn("pre-check has no verdict: {}", verdict.status().message());
    return 1;
  }

  sluice::backfill::LoadHooks hooks;
  if (reporter) {
    hooks.still_ours = [&] { return reporter->StillOurs(); };
    hooks.on_truncated = [&](sluice::common::TimePoint at) { return reporter->Truncated(at); };
    hooks.on_progress = [&](std::int64_t rows, sluice::common::TimePoint at) {
      return reporter->Progress(rows, at);
    };
  }
  spdlog::info("loading {} -> {}.{}", config.source_table, config.target_schema,
               config.target_table);
  auto rows = sluice::backfill::LoadPair(config, hooks, g_loader_stop);
  auto now = sluice::common::Clock::now();
  if (rows.ok()) {
    spdlog::info("loaded {} rows into {}", *rows, config.target_table);
    if (reporter) {
      auto st = reporter->Complete(*rows, now);
      if (!st.ok()) {
        spdlog::error("{}", st.message());
        return st.code() == Code::kFailedPrecondition ? 4 : 5;
      }
    }
    return 0;
  }
  const auto& st = rows.status();
  spdlog::error("load of {} failed: {}", config.source_table, st.message());
  if (g_loader_stop) return 5;  // stopped: the launcher decides (requeue or cancel)
  if (st.code() == Code::kFailedPrecondition &&
      st.message().find("no longer this attempt") != std::string::npos)
    return 4;
  if (st.code() == Code::kUnavailable) return 5;  // transient: a requeue retries it
  if (reporter) (void)reporter->Fail(st.message(), now);
  return 1;
}

sluice::cli::RegisterCommand loader_registration([](CLI::App& root) {
  auto flags = std::make_shared<LoaderFlags>();
  auto* cmd = root.add_subcommand("loader", "Load one backfill item (source table -> destination)");
  auto* config = cmd->add_option("--config", flags->config_path, "Launch file from the launcher");
  auto* item =
      cmd->add_option("--item", flags->item_id, "Backfill item id (reads SLUICE_DATABASE_URL)");
  config->excludes(item);
  cmd->add_option("--data-dir", flags->data_dir, "Where config.key lives (with --item)")
      ->capture_default_str();
  // A Kubernetes Job's loader has no database URL: it speaks the loader
  // protocol to the back end with its attempt's token.
  auto* api = cmd->add_option("--api", flags->api_url,
                              "Back end URL: fetch the config and report over HTTP (with --item; "
                              "token in SLUICE_LOADER_TOKEN)");
  api->needs(item);
  cmd->add_flag("--check-only", flags->check_only,
                "Validate the pair and stamp checked_at; load nothing");
  cmd->callback([flags] {
    if (flags->config_path.empty() && flags->item_id.empty()) {
      std::fprintf(stderr, "sluice loader: --config or --item is required\n");
      sluice::cli::ExitCode() = 2;
      return;
    }
    sluice::cli::ExitCode() = RunLoader(*flags);
  });
});

}  // namespace
