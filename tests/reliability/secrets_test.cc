// Secrets, with the real processes: `sluice serve` (API, orchestrator,
// local launcher), `sluice worker`s it launches, and a SASL-protected
// `sluice broker`, over real PostgreSQL. A pipeline runs end to end with
// known credentials, and error paths run beside it (a source that cannot be
// reached, an env whose SASL password the broker refuses, a warehouse that
// does not answer). Then every place a secret could leak is read:
//  - the database: connector and warehouse configurations and idempotency
//    bodies are ciphertext, and no other table holds a secret (but
//    env.retention_configuration, which the spec stores as given);
//  - every GET endpoint the API documents, crawled as a superuser over every
//    id it can name, and the create calls' own answers;
//  - the log of `sluice serve`, of every worker and of the broker;
//  - every file under the data directory, the workers' launch files
//    included (mode 0600: they hold the pod token the worker fetches its
//    decrypted launch with).
// The worker endpoint (GET /api/v1/worker/launch) is the one API answer
// that carries decrypted credentials; it needs a pod token (the crawl meets
// it as a 401), which the launcher hands each worker in a 0600 file.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <set>
#include <sstream>
#include <thread>

#include "broker/broker_harness.h"
#include "common/uuid.h"
#include "reliability/record.h"
#include "support/test_database.h"

namespace sluice::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;

// Distinct strings that occur nowhere unless a secret leaked.
const std::string kSourcePassword = "src-pw-7Qx2Lm9Vb";
const std::string kTargetPassword = "dst-pw-4Hk8Zr1Nc";
const std::string kSaslPassword = "sasl-pw-9Tg3Wd6Jy";
const std::string kWrongSaslPassword = "sasl-wrong-2Fp5Ks8Qa";
const std::string kUnreachablePassword = "gone-pw-6Rb1Xe4Um";
const std::string kWarehouseToken = "dapi-tok-3Nv7Yc2Lh";
const std::string kWarehousePassword = "wh-pw-8Gs5Pd3Ko";
const std::vector<std::string> kSecrets = {
    kSourcePassword,      kTargetPassword, kSaslPassword,     kWrongSaslPassword,
    kUnreachablePassword, kWarehouseToken, kWarehousePassword};
// Secrets of the env's broker settings, which the env row stores as given.
const std::set<std::string> kEnvSecrets = {kSaslPassword, kWrongSaslPassword};

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The secrets `text` contains.
std::vector<std::string> Found(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& s : kSecrets)
    if (text.find(s) != std::string::npos) out.push_back(s);
  return out;
}

int PortOf(const std::string& url) {
  auto colon = url.rfind(':');
  return std::stoi(url.substr(colon + 1, url.find('/', colon) - colon - 1));
}

// `sluice serve` at debug level, stdout and stderr in one log file.
class Serve {
 public:
  Serve(const std::string& url, const fs::path& dir) : log_(dir / "serve.log") {
    pid_ = fork();
    if (pid_ == 0) {
      int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      setenv("SLUICE_DATABASE_URL", url.c_str(), 1);
      setenv("SLUICE_SUPERUSER_EMAIL", "boot@example.com", 1);
      setenv("SLUICE_SUPERUSER_PASSWORD", "bootstrap-pass", 1);
      std::string bin = std::getenv("SLUICE_BIN"), d = (dir / "data").string();
      execl(bin.c_str(), bin.c_str(), "--log-level", "debug", "serve", "--listen", "127.0.0.1:0",
            "--registry-listen", "127.0.0.1:0", "--data-dir", d.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 600 && port_ == 0; ++i) {
      std::istringstream lines(ReadFile(log_));
      std::string line;
      while (std::getline(lines, line))
        std::sscanf(line.c_str(), "api listening on http://127.0.0.1:%d", &port_);
      if (port_ == 0) std::this_thread::sleep_for(100ms);
    }
  }
  ~Serve() { Stop(); }
  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 300 && waitpid(pid_, &status, WNOHANG) == 0; ++i)
      std::this_thread::sleep_for(100ms);
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  int port() const { return port_; }
  const fs::path& log() const { return log_; }

 private:
  fs::path log_;
  pid_t pid_ = -1;
  int port_ = 0;
};

class SecretsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sluice-secrets-" + common::Uuid::V4().ToString());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    serve_.reset();
    broker_.Stop();
    // The replication slots the source workers made.
    try {
      pqxx::connection c(source_.url());
      pqxx::nontransaction(c).exec(
          "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = "
          "current_database() AND NOT active");
    } catch (...) {
    }
    if (!HasFailure()) fs::remove_all(dir_);
  }

  httplib::Result Send(const std::string& method, const std::string& path, const json& body,
                       const httplib::Headers& extra = {}) {
    httplib::Client cli("127.0.0.1", serve_->port());
    cli.set_read_timeout(60s);
    httplib::Headers h = extra;
    if (!token_.empty()) h.emplace("Authorization", "Bearer " + token_);
    if (method == "GET") return cli.Get(path.c_str(), h);
    if (method == "PATCH") return cli.Patch(path.c_str(), h, body.dump(), "application/json");
    return cli.Post(path.c_str(), h, body.dump(), "application/json");
  }
  // A call whose answer is also an API response checked for secrets.
  json Must(const std::string& method, const std::string& path, const json& body, int want,
            const httplib::Headers& extra = {}) {
    auto r = Send(method, path, body, extra);
    EXPECT_TRUE(r && r->status == want) << method << " " << path << ": " << (r ? r->body : "-");
    if (!r) return json();
    Check("response to " + method + " " + path, r->body);
    ++responses_;
    return json::parse(r->body, nullptr, false);
  }
  void Check(const std::string& where, const std::string& text,
             const std::set<std::string>& allowed = {}) {
    for (const auto& s : Found(text)) {
      if (allowed.count(s)) continue;
      ++leaks_;
      ADD_FAILURE() << "secret " << s << " in " << where;
    }
  }

  json PgConfig(const std::string& url, const std::string& password) {
    // The test cluster checks passwords: each one here is a role's own.
    std::string role = "secrets_" + std::to_string(std::hash<std::string>{}(password) % 1000000);
    EnsureClusterRole(role, password);
    return {
        {"host", "127.0.0.1"}, {"port", PortOf(url)},  {"database", url.substr(url.rfind('/') + 1)},
        {"user", role},        {"password", password}, {"sslmode", "disable"}};
  }
  json Env(const std::string& name, const std::string& sasl_password) {
    return {{"name", name},
            {"retention_configuration",
             {{"bootstrap_servers", broker_.bootstrap()},
              {"security_protocol", "sasl_plaintext"},
              {"sasl_mechanism", "PLAIN"},
              {"sasl_username", "sluice"},
              {"sasl_password", sasl_password}}}};
  }
  // A pipeline through the wizard (Idempotency-Key: its body is stored).
  json Wizard(const std::string& team, const std::string& name, const json& source) {
    return Must(
        "POST", "/api/v1/teams/" + team + "/pipeline-wizard",
        {{"name", name},
         {"source",
          {{"name", name + "-src"}, {"type", "postgresql-source"}, {"configuration", source}}},
         {"target",
          {{"name", name + "-dst"},
           {"type", "postgresql-target"},
           {"configuration", PgConfig(target_.url(), kTargetPassword)}}},
         {"tables", json::array({{{"table", "orders"}, {"target_table_name", name}}})}},
        201, {{"Idempotency-Key", "wizard-" + name}});
  }
  long TargetRows(const std::string& table) {
    try {
      pqxx::connection c(target_.url());
      return pqxx::nontransaction(c).exec1("SELECT count(*) FROM " + table)[0].as<long>();
    } catch (...) {
      return -1;
    }
  }

  fs::path dir_;
  TestDatabase plane_, source_, target_;
  BrokerProcess broker_{{"--sasl-user", "sluice:" + kSaslPassword}};
  std::unique_ptr<Serve> serve_;
  std::string token_;
  long responses_ = 0, leaks_ = 0;
};

TEST_F(SecretsTest, NoSecretInTheDatabaseAnyResponseLogOrFileButTheWorkersOwn) {
  {
    pqxx::connection c(source_.url());
    pqxx::nontransaction(c).exec(
        "CREATE TABLE orders (id serial PRIMARY KEY, name text NOT NULL);"
        "INSERT INTO orders (name) SELECT 'o' || g FROM generate_series(1, 50) g");
  }
  broker_.Start();
  serve_ = std::make_unique<Serve>(plane_.url(), dir_);
  ASSERT_GT(serve_->port(), 0) << ReadFile(serve_->log());
  {
    auto login = Send("POST", "/api/v1/auth/login",
                      {{"email", "boot@example.com"}, {"password", "bootstrap-pass"}});
    ASSERT_TRUE(login && login->status == 200);
    token_ = json::parse(login->body)["access_token"];
  }
  Must("POST", "/api/v1/license",
       {{"license_active", true}, {"license_expires_at", "2099-01-01T00:00:00Z"}}, 200);
  std::string env = Must("POST", "/api/v1/envs", Env("prod", kSaslPassword), 201)["id"];
  std::string bad_env = Must("POST", "/api/v1/envs", Env("refused", kWrongSaslPassword), 201)["id"];
  std::string team = Must("POST", "/api/v1/envs/" + env + "/teams", {{"name", "t"}}, 201)["id"];
  std::string bad_team =
      Must("POST", "/api/v1/envs/" + bad_env + "/teams", {{"name", "t"}}, 201)["id"];

  // The pipeline that runs, and two that fail: the broker refuses the SASL
  // password, and the source is not there.
  auto good = Wizard(team, "good", PgConfig(source_.url(), kSourcePassword));
  auto sasl = Wizard(bad_team, "sasl", PgConfig(source_.url(), kSourcePassword));
  json nowhere = PgConfig(source_.url(), kUnreachablePassword);
  nowhere["port"] = FreePort();
  auto gone = Wizard(team, "gone", nowhere);
  // The same create again replays the stored (encrypted) answer.
  Wizard(team, "good", PgConfig(source_.url(), kSourcePassword));
  for (const auto& p : {good, sasl, gone})
    Must("POST", "/api/v1/pipelines/" + p["pipeline"]["id"].get<std::string>() + "/start",
         json::object(), 200);

  // Warehouses: a PostgreSQL one that answers, a Databricks one that does not.
  std::string wh = Must("POST", "/api/v1/teams/" + team + "/warehouses",
                        {{"name", "pg"},
                         {"warehouse_type", "postgresql"},
                         {"configuration", PgConfig(target_.url(), kWarehousePassword)}},
                        201, {{"Idempotency-Key", "wh-pg"}})["id"];
  std::string dbx = Must("POST", "/api/v1/teams/" + team + "/warehouses",
                         {{"name", "dbx"},
                          {"warehouse_type", "databricks"},
                          {"configuration",
                           {{"host", "127.0.0.1:" + std::to_string(FreePort())},
                            {"http_path", "/sql/1.0/warehouses/x"},
                            {"token", kWarehouseToken}}}},
                         201)["id"];
  Must("POST", "/api/v1/warehouses/" + wh + "/runs", {{"sql", "select 1"}}, 202);
  Must("POST", "/api/v1/warehouses/" + wh + "/test", json::object(), 200);
  {
    auto r = Send("POST", "/api/v1/warehouses/" + dbx + "/test", json::object());
    ASSERT_TRUE(r);
    Check("response to the failing warehouse test", r->body);
    ++responses_;
  }

  // The good pipeline delivers; the failing ones report why.
  auto deadline = std::chrono::steady_clock::now() + 180s;
  while (TargetRows("good") < 50 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(500ms);
  ASSERT_EQ(TargetRows("good"), 50) << ReadFile(serve_->log());
  auto errored = [&](const json& p) {
    auto r = Send("GET", "/api/v1/pipelines/" + p["pipeline"]["id"].get<std::string>() + "/status",
                  nullptr);
    return r && r->status == 200 && json::parse(r->body)["state"] == "ERROR";
  };
  while ((!errored(sasl) || !errored(gone)) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(500ms);
  EXPECT_TRUE(errored(sasl)) << "the refused SASL password shows as an error";
  EXPECT_TRUE(errored(gone)) << "the unreachable source shows as an error";
  // A backfill: `sluice loader` processes get the credentials in a launch
  // file of their own.
  std::string backfill =
      Must("POST", "/api/v1/backfills",
           {{"origin", "pipeline"}, {"pipeline_id", good["pipeline"]["id"]}}, 201)["runs"][0]["id"];
  json run = json::object();
  while (run.value("status", "") != "done" && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(500ms);
    auto r = Send("GET", "/api/v1/backfills/" + backfill, nullptr);
    if (r && r->status == 200) run = json::parse(r->body);
  }
  EXPECT_EQ(run.value("status", ""), "done") << run.dump();
  EXPECT_EQ(run["counts"].value("completed", 0), 1) << run.dump();

  // 1. The database. Encrypted columns are envelopes without the plaintext;
  // no other table holds a secret (the env row stores its broker settings
  // as given, by the spec).
  long tables = 0;
  {
    pqxx::connection c(plane_.url());
    pqxx::work tx(c);
    for (const auto& [sql, what] : std::vector<std::pair<std::string, std::string>>{
             {"SELECT json_configuration::text FROM connector", "connector"},
             {"SELECT json_configuration::text FROM warehouse", "warehouse"},
             {"SELECT response_body::text FROM idempotency_record", "idempotency_record"}}) {
      auto rows = tx.exec(sql);
      EXPECT_FALSE(rows.empty()) << what;
      for (const auto& row : rows) {
        auto j = json::parse(row[0].c_str());
        EXPECT_TRUE(j.contains("ct") && j.contains("kid"))
            << what << " is not an envelope: " << row[0].c_str();
      }
    }
    EXPECT_GE(tx.exec1("SELECT count(*) FROM idempotency_record")[0].as<int>(), 4);
    for (const auto& t : tx.exec("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")) {
      std::string table = t[0].c_str();
      std::string text;
      for (const auto& row : tx.exec("SELECT t::text FROM " + c.quote_name(table) + " t"))
        text += row[0].c_str();
      Check("table " + table, text, table == "env" ? kEnvSecrets : std::set<std::string>{});
      ++tables;
    }
  }

  // 2. Every GET the API documents, over every id it can name.
  std::map<std::string, std::vector<std::string>> ids;
  {
    pqxx::connection c(plane_.url());
    pqxx::work tx(c);
    auto all = [&](const std::string& param, const std::string& sql) {
      for (const auto& row : tx.exec(sql)) ids[param].push_back(row[0].c_str());
    };
    all("env_id", "SELECT id FROM env");
    all("team_id", "SELECT id FROM team");
    all("user_id", "SELECT id FROM \"user\"");
    all("connector_id", "SELECT id FROM connector");
    all("datamodel_id", "SELECT id FROM datamodel");
    all("pipeline_id", "SELECT id FROM pipeline");
    all("subscription_id", "SELECT id FROM subscription");
    all("warehouse_id", "SELECT id FROM warehouse");
    all("run_id", "SELECT id FROM warehouse_script_run UNION ALL SELECT id FROM backfill_run");
    all("task_id", "SELECT id FROM task");
    all("topic", "SELECT DISTINCT source_topic FROM datamodel");
    ids["type"] = {"postgresql-source", "postgresql-target"};
  }
  auto doc = Must("GET", "/api/v1/openapi.json", nullptr, 200);
  long crawled_routes = 0;
  for (const auto& [pattern, ops] : doc["paths"].items()) {
    if (!ops.contains("get")) continue;
    ++crawled_routes;
    std::vector<std::string> paths = {pattern};
    for (std::size_t open; (open = paths[0].find('{')) != std::string::npos;) {
      std::string name = paths[0].substr(open + 1, paths[0].find('}', open) - open - 1);
      std::vector<std::string> next;
      for (const auto& p : paths)
        for (const auto& id : ids[name]) {
          std::string q = p;
          q.replace(q.find('{' + name + '}'), name.size() + 2, id);
          next.push_back(q);
        }
      paths = next;
      if (paths.empty()) break;
    }
    for (const auto& path : paths) {
      auto r = Send("GET", path, nullptr);
      ASSERT_TRUE(r) << path;
      // A source's table list is read from the source itself: one this test
      // has stopped answers 502 source_unavailable, its own words, no secret.
      bool source_away =
          r->status == 502 && r->body.find("source_unavailable") != std::string::npos;
      if (!source_away) {
        EXPECT_LT(r->status, 500) << path << ": " << r->body;
      }
      Check("GET " + path, r->body);
      ++responses_;
    }
  }
  EXPECT_GT(crawled_routes, 40) << "the OpenAPI document lists the GET endpoints";

  // 3. The launch files the local launcher wrote: 0600, a pod token and
  // where to fetch the launch from, no credential. The workers' endpoint
  // they fetch it from is the one answer with decrypted secrets (checked
  // here, which also shows the search finds a secret where there is one).
  long launch_files = 0;
  std::set<std::string> via_launch;
  for (const auto& e : fs::directory_iterator(dir_ / "data" / "run")) {
    std::string name = e.path().filename().string();
    if (name.size() != 41 || e.path().extension() != ".json") continue;  // <uuid>.json
    ++launch_files;
    struct stat st {};
    ASSERT_EQ(::stat(e.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u) << e.path() << " holds a pod token";
    auto launch = json::parse(ReadFile(e.path()), nullptr, false);
    std::string pod_token = launch["backend"].value("token", "");
    ASSERT_FALSE(pod_token.empty()) << e.path();
    httplib::Client cli("127.0.0.1", serve_->port());
    auto r = cli.Get("/api/v1/worker/launch", {{"Authorization", "Bearer " + pod_token}});
    if (r && r->status == 200)
      for (const auto& secret : Found(r->body)) via_launch.insert(secret);
  }
  EXPECT_GE(launch_files, 6) << "three pipelines, a source and a target worker each";
  for (const auto& secret :
       {kSourcePassword, kTargetPassword, kSaslPassword, kWrongSaslPassword, kUnreachablePassword})
    EXPECT_TRUE(via_launch.count(secret)) << secret << " reaches the workers";

  // 4. Logs (the back end, every worker, the broker) and every other file
  // under the data directory.
  serve_->Stop();
  long logs = 0, files = 0;
  Check("the serve log", ReadFile(serve_->log()));
  ++logs;
  Check("the broker log", broker_.log());
  ++logs;
  for (const auto& e : fs::recursive_directory_iterator(dir_ / "data")) {
    if (!e.is_regular_file()) continue;
    bool is_log = e.path().extension() == ".log";
    logs += is_log;
    files += !is_log;
    Check((is_log ? "log " : "file ") + e.path().string(), ReadFile(e.path()));
  }
  std::printf(
      "secrets: %zu secrets, %ld responses + %ld logs + %ld files + %ld tables checked, "
      "%ld launch files 0600 without a secret, %ld leaks\n",
      kSecrets.size(), responses_, logs, files, tables, launch_files, leaks_);
  RecordReliability("secrets", {{"secrets", static_cast<double>(kSecrets.size())},
                                {"responses", static_cast<double>(responses_)},
                                {"logs", static_cast<double>(logs)},
                                {"files", static_cast<double>(files)},
                                {"tables", static_cast<double>(tables)},
                                {"leaks", static_cast<double>(leaks_)}});
}

}  // namespace
}  // namespace sluice::testing
