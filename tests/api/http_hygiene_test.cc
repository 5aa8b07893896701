// What every answer of the API listener looks like to a client we did not
// write: a request without a body is an empty object, every 4xx (ours and
// cpp-httplib's own) carries the JSON error body, API answers say nosniff,
// and the UI's pages carry a Content-Security-Policy that forbids framing.
// Also the login limiter as an attacker meets it, from several client
// addresses. Raw sockets, so the bytes sent are exactly curl's and the
// source address is ours to pick (all of 127.0.0.0/8 is loopback).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "api_harness.h"
#include "auth/secret_key.h"

namespace sluice::testing {
namespace {

namespace fs = std::filesystem;

struct RawAnswer {
  int status = 0;
  std::string headers;  // lower-cased
  std::string body;
  Json json;
};

// Sends `request` as is from `source` and reads until the server closes
// (every request here says Connection: close).
RawAnswer Exchange(int port, const std::string& request, const std::string& source = "127.0.0.1") {
  RawAnswer out;
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return out;
  sockaddr_in from{};
  from.sin_family = AF_INET;
  ::inet_pton(AF_INET, source.c_str(), &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    ::close(fd);
    return out;
  }
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string text;
  char buf[65536];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) text.append(buf, n);
  ::close(fd);
  auto end = text.find("\r\n\r\n");
  if (text.rfind("HTTP/1.1 ", 0) != 0 || end == std::string::npos) return out;
  out.status = std::stoi(text.substr(9, 3));
  out.headers = text.substr(0, end);
  for (auto& c : out.headers) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  out.body = text.substr(end + 4);
  out.json = Json::parse(out.body, nullptr, false);
  return out;
}

std::string Request(const std::string& method, const std::string& path, const std::string& token,
                    const std::string& extra_headers = "", const std::string& body = "") {
  std::string r = method + " " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n";
  if (!token.empty()) r += "Authorization: Bearer " + token + "\r\n";
  return r + extra_headers + "\r\n" + body;
}

void ExpectJsonError(const RawAnswer& a, int status, const std::string& code) {
  EXPECT_EQ(a.status, status) << a.headers << "\n" << a.body;
  ASSERT_TRUE(a.json.is_object()) << a.body;
  EXPECT_EQ(a.json["error"]["code"], code) << a.body;
  EXPECT_TRUE(a.json["error"]["message"].is_string()) << a.body;
  EXPECT_NE(a.headers.find("content-type: application/json"), std::string::npos) << a.headers;
  EXPECT_NE(a.headers.find("x-content-type-options: nosniff"), std::string::npos) << a.headers;
}

TEST(HttpHygiene, APostWithNoBodyAtAllIsAnActionWithoutOptions) {
  ApiHarness h;
  auto env = h.CreateEnv("e");
  auto team = h.CreateTeam(env, "t", h.root());
  auto p = h.Call("POST", "/api/v1/teams/" + team.ToString() + "/pipelines", {{"name", "p"}},
                  h.root().token);
  ASSERT_EQ(p.status, 201) << p.raw;
  std::string id = p.body["id"];
  // Exactly `curl -X POST .../start`: no Content-Length, no body. The
  // handler judged the pipeline (it has nothing to run yet), not the body.
  auto start =
      Exchange(h.port(), Request("POST", "/api/v1/pipelines/" + id + "/start", h.root().token));
  ExpectJsonError(start, 409, "incomplete");
  // An action that can be done is done.
  auto c = h.Call("POST", "/api/v1/teams/" + team.ToString() + "/connectors",
                  {{"name", "dst"},
                   {"type", "jsonl-target"},
                   {"configuration", {{"directory", "sluice-hygiene"}}}},
                  h.root().token);
  ASSERT_EQ(c.status, 201) << c.raw;
  std::string connector = c.body["id"];
  auto pause = Exchange(
      h.port(), Request("POST", "/api/v1/connectors/" + connector + "/pause", h.root().token));
  EXPECT_EQ(pause.status, 200) << pause.body;
  EXPECT_TRUE(pause.json.is_object()) << pause.body;
  // A create without a body is a create with no fields: told what is missing.
  auto create = Exchange(h.port(), Request("POST", "/api/v1/envs", h.root().token));
  ExpectJsonError(create, 422, "invalid_field");
}

TEST(HttpHygiene, Every4xxCarriesTheJsonErrorBody) {
  ApiHarness h;
  const std::string& token = h.root().token;
  ExpectJsonError(Exchange(h.port(), Request("GET", "/api/v1/no-such-thing", token)), 404,
                  "not_found");
  ExpectJsonError(Exchange(h.port(), Request("DELETE", "/api/v1/me", token)), 405,
                  "method_not_allowed");
  ExpectJsonError(Exchange(h.port(), Request("GET", "/api/v1/me", "")), 401, "unauthenticated");
  // Over the body limit: refused by cpp-httplib before any handler ran.
  ExpectJsonError(Exchange(h.port(), Request("POST", "/api/v1/envs", token,
                                             "Content-Type: application/json\r\n"
                                             "Content-Length: 9999999\r\n")),
                  413, "payload_too_large");
  // A request line cpp-httplib cannot read at all.
  ExpectJsonError(Exchange(h.port(), "NONSENSE\r\n\r\n"), 400, "bad_request");
  // A chunked body whose chunk size is not hex.
  ExpectJsonError(Exchange(h.port(), Request("POST", "/api/v1/envs", token,
                                             "Content-Type: application/json\r\n"
                                             "Transfer-Encoding: chunked\r\n",
                                             "zz\r\n{}\r\n0\r\n\r\n")),
                  400, "bad_request");
  // The server still answers.
  EXPECT_EQ(h.Call("GET", "/api/v1/me", nullptr, token).status, 200);
}

TEST(HttpHygiene, ApiAnswersSayNoSniff) {
  ApiHarness h;
  auto me = Exchange(h.port(), Request("GET", "/api/v1/me", h.root().token));
  EXPECT_EQ(me.status, 200);
  EXPECT_NE(me.headers.find("x-content-type-options: nosniff"), std::string::npos) << me.headers;
}

TEST(HttpHygiene, UiPagesCarryAContentSecurityPolicyThatForbidsFraming) {
  TestDatabase pg;
  store::Database db(pg.url(), 2);
  fs::path dir = fs::temp_directory_path() / ("sluice-ui-" + common::Uuid::V4().ToString());
  fs::create_directories(dir / "assets");
  std::ofstream(dir / "index.html") << "<div id=\"root\"></div>";
  std::ofstream(dir / "assets" / "app-1.js") << "console.log(1)";
  api::ApiServer server(db, auth::SecretKey::Random(),
                        *secrets::KeyRing::FromHex({std::string(64, 'a')}));
  server.ServeUi(dir.string());
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  for (const char* path : {"/", "/pipelines/42", "/assets/app-1.js", "/assets/missing.js"}) {
    auto a = Exchange(server.port(), Request("GET", path, ""));
    EXPECT_TRUE(a.status == 200 || a.status == 404) << path;
    EXPECT_NE(a.headers.find("content-security-policy: default-src 'self'"), std::string::npos)
        << path << "\n"
        << a.headers;
    EXPECT_NE(a.headers.find("frame-ancestors 'none'"), std::string::npos) << path;
    EXPECT_NE(a.headers.find("x-content-type-options: nosniff"), std::string::npos) << path;
    EXPECT_NE(a.headers.find("x-frame-options: deny"), std::string::npos) << path;
  }
  server.Stop();
  fs::remove_all(dir);
}

RawAnswer LoginFrom(int port, const std::string& source, const std::string& email,
                    const std::string& password) {
  std::string body = Json{{"email", email}, {"password", password}}.dump();
  return Exchange(port,
                  Request("POST", "/api/v1/auth/login", "",
                          "Content-Type: application/json\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n",
                          body),
                  source);
}

TEST(LoginLimits, SixtyFourParallelWrongGuessesGetAtMostTheBudgetThrough) {
  api::ApiOptions o;
  o.login_max_failures = 5;
  ApiHarness h(o);
  h.CreateUser("ada@example.com");
  std::atomic<int> unauthorized{0}, limited{0}, other{0};
  std::vector<std::thread> guessers;
  for (int i = 0; i < 64; ++i)
    guessers.emplace_back([&, i] {
      auto a = LoginFrom(h.port(), "127.0.0.1", "ada@example.com", "guess-" + std::to_string(i));
      if (a.status == 401)
        ++unauthorized;
      else if (a.status == 429 && a.json["error"]["code"] == "rate_limited")
        ++limited;
      else
        ++other;
    });
  for (auto& g : guessers) g.join();
  EXPECT_LE(unauthorized.load(), 5);
  EXPECT_GE(unauthorized.load(), 1);
  EXPECT_EQ(unauthorized + limited, 64);
  EXPECT_EQ(other.load(), 0);
  // Even the right password is refused from the guessing address...
  EXPECT_EQ(LoginFrom(h.port(), "127.0.0.1", "ada@example.com", kTestPassword).status, 429);
  // ...but the owner, elsewhere, is not locked out by the guesser.
  auto owner = LoginFrom(h.port(), "127.0.0.2", "ada@example.com", kTestPassword);
  EXPECT_EQ(owner.status, 200) << owner.body;
  EXPECT_TRUE(owner.json["access_token"].is_string()) << owner.body;
  std::printf("login limiter: 64 parallel wrong guesses, %d got a 401, %d a 429\n",
              unauthorized.load(), limited.load());
}

}  // namespace
}  // namespace sluice::testing
