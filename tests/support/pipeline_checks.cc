#include "support/pipeline_checks.h"

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include <fstream>
#include <iterator>
#include <thread>

#include "common/time.h"
#include "common/uuid.h"
#include "runtime/worker_repository.h"

namespace sluice::testing {

PlaneTeam NewPlaneTeam(store::Database& plane) {
  PlaneTeam t{common::Uuid::V4().ToString(), common::Uuid::V4().ToString()};
  plane.Transact([&](pqxx::work& tx) {
    tx.exec_params("INSERT INTO env (id, name, retention_configuration) VALUES ($1, 'e', '{}')",
                   t.env_id);
    tx.exec_params("INSERT INTO team (id, name, env_id) VALUES ($1, 't', $2)", t.team_id, t.env_id);
  });
  return t;
}

runtime::Worker StartedWorkerRow(store::Database& plane, const PlaneTeam& team,
                                 const std::string& name, const std::string& type,
                                 const std::string& way) {
  return plane.Transact([&](pqxx::work& tx) {
    auto id = common::Uuid::V4();
    tx.exec_params(
        "INSERT INTO connector (id, name, connector_type, json_configuration, way, team_id, "
        "env_id) VALUES ($1, $2, $3, '{}', $4, $5, $6)",
        id.ToString(), name, type, way, team.team_id, team.env_id);
    auto w = runtime::WorkerRepository::EnsureShards(tx, id, 1)[0];
    w.Start(common::Clock::now(), std::nullopt);
    runtime::WorkerRepository::Update(tx, w);
    return w;
  });
}

std::string TextRows(const std::string& url, const std::string& sql) {
  try {
    pqxx::connection c(url);
    auto result = pqxx::nontransaction(c).exec(sql);
    nlohmann::json out = nlohmann::json::array();
    for (const auto& row : result) {
      nlohmann::json r = nlohmann::json::array();
      for (const auto& f : row)
        r.push_back(f.is_null() ? nlohmann::json(nullptr) : nlohmann::json(f.c_str()));
      out.push_back(std::move(r));
    }
    return out.dump();
  } catch (const std::exception& e) {
    return std::string("error: ") + e.what();
  }
}

::testing::AssertionResult RowsConverge(const std::string& source_url,
                                        const std::string& source_sql,
                                        const std::string& target_url,
                                        const std::string& target_sql, std::chrono::seconds limit,
                                        const std::function<std::string()>& context) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  std::string want, got;
  while (std::chrono::steady_clock::now() < deadline) {
    want = TextRows(source_url, source_sql);
    got = TextRows(target_url, target_sql);
    if (want == got) return ::testing::AssertionSuccess();
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return ::testing::AssertionFailure() << "did not converge\nsource: " << want.substr(0, 1500)
                                       << "\ntarget: " << got.substr(0, 1500) << "\n"
                                       << (context ? context() : std::string());
}

bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds limit,
               std::chrono::milliseconds every) {
  for (auto deadline = std::chrono::steady_clock::now() + limit;
       std::chrono::steady_clock::now() < deadline;) {
    if (done()) return true;
    std::this_thread::sleep_for(every);
  }
  return done();
}

namespace {

std::string Tail(const std::filesystem::path& file, const std::string& heading, std::size_t tail) {
  std::ifstream in(file);
  std::string all((std::istreambuf_iterator<char>(in)), {});
  return "--- " + heading + "\n" + all.substr(all.size() > tail ? all.size() - tail : 0);
}

}  // namespace

std::string LogTails(const std::filesystem::path& dir,
                     std::initializer_list<std::string_view> names, std::size_t tail) {
  std::string out;
  for (auto name : names) out += Tail(dir / std::string(name), std::string(name), tail);
  return out;
}

std::string LogTails(const std::filesystem::path& dir, std::size_t tail) {
  std::string out;
  std::error_code missing;
  for (std::filesystem::recursive_directory_iterator it(dir, missing), end; !missing && it != end;
       it.increment(missing)) {
    if (it->path().extension() == ".log")
      out += Tail(it->path(), it->path().filename().string(), tail);
  }
  return out;
}

nlohmann::json WorkerLaunchConfig(const std::string& kind, const std::string& bootstrap,
                                  const nlohmann::json& body) {
  nlohmann::json config = {{"worker_id", common::Uuid::V4().ToString()},
                           {"connector_id", common::Uuid::V4().ToString()},
                           {"generation", common::Uuid::V4().ToString()},
                           {"kind", kind},
                           {"broker", {{"bootstrap_servers", bootstrap}}}};
  config.update(body);
  return config;
}

void SuperviseWorker(std::unique_ptr<runtime::ProcessSupervisor>& supervisor,
                     const std::filesystem::path& dir, const std::string& name,
                     const nlohmann::json& config) {
  using namespace std::chrono_literals;
  if (!supervisor)
    supervisor = std::make_unique<runtime::ProcessSupervisor>(
        runtime::SupervisorOptions{.initial_backoff = 200ms, .max_backoff = 2000ms});
  auto path = (dir / (name + ".json")).string();
  std::ofstream(path) << config.dump(2);
  supervisor->Ensure(name, {{std::getenv("SLUICE_BIN"), "worker", "--config", path},
                            {},
                            (dir / (name + ".log")).string()});
}

}  // namespace sluice::testing
