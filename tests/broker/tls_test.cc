// `sluice broker --tls-cert --tls-key`: TLS from the first byte, then the
// same Kafka protocol. Unmodified clients (kcat, confluent-kafka) produce
// and consume over SASL_SSL; a client that does not speak TLS is closed and
// the broker keeps serving; the pre-auth deadline covers the handshake; bad
// files stop the broker at start with a message, never a crash.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cerrno>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "broker_harness.h"
#include "raw_client.h"
#include "support/tls_cert.h"

namespace sluice::testing {
namespace {

namespace fs = std::filesystem;
namespace p = sluice::broker::protocol;

constexpr const char* kUser = "tls-user";
constexpr const char* kPassword = "tls-secret";

class BrokerTls : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-broker-tls-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    cert_ = MakeSelfSignedCert(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    if (!HasFailure()) fs::remove_all(dir_, ec);
  }

  std::vector<std::string> TlsArgs(std::vector<std::string> more = {}) const {
    std::vector<std::string> args = {"--sasl-user", std::string(kUser) + ":" + kPassword,
                                     "--flush",     "never",
                                     "--tls-cert",  cert_.cert,
                                     "--tls-key",   cert_.key};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }

  std::string Kcat(const BrokerProcess& b, const std::string& args) const {
    return "timeout 60 kcat -b " + b.bootstrap() +
           " -X security.protocol=SASL_SSL -X ssl.ca.location=" + cert_.cert +
           " -X sasl.mechanisms=PLAIN -X sasl.username=" + kUser +
           " -X sasl.password=" + kPassword + " " + args;
  }

  void ExpectKcatServes(const BrokerProcess& b, const std::string& topic) const {
    auto put = RunShell("printf 'one\\ntwo\\nthree\\n' | " + Kcat(b, "-P -t " + topic) + " 2>&1");
    EXPECT_EQ(put.exit_code, 0) << put.out;
    auto get = RunShell(Kcat(b, "-C -t " + topic + " -o beginning -c 3 -e -q"));
    EXPECT_EQ(get.exit_code, 0);
    EXPECT_EQ(get.out, "one\ntwo\nthree\n");
  }

  // Runs `sluice broker` with `args` to its end; exit code and output.
  CommandResult RunBroker(const std::string& args) const {
    return RunShell("timeout 20 " + std::string(std::getenv("SLUICE_BIN")) +
                    " broker --listen 127.0.0.1:0 --data-dir '" + (dir_ / "data").string() + "' " +
                    args + " 2>&1; echo \"exit=$?\"");
  }

  fs::path dir_;
  TestCert cert_;
};

// Waits for the broker to close `c`: true when it did (EOF or reset), false
// when nothing came within the connection's receive timeout.
bool ClosedByBroker(Conn& c) {
  char buf[256];
  while (true) {
    ssize_t r = ::recv(c.fd(), buf, sizeof buf, 0);
    if (r == 0) return true;
    if (r < 0) return errno == ECONNRESET || errno == EPIPE;
    // A TLS alert may come first; keep reading to the close.
  }
}

TEST_F(BrokerTls, KcatProducesAndConsumesOverSaslSsl) {
  BrokerProcess b(TlsArgs());
  b.Start();
  auto l = RunShell(Kcat(b, "-L") + " 2>&1");
  EXPECT_EQ(l.exit_code, 0) << l.out;
  ExpectKcatServes(b, "tls.small");
  // Enough that fetches carry many record batches from the segment files,
  // which under TLS go through memory instead of sendfile.
  auto want = RunShell("seq -f '%0200g' 1 20000");
  ASSERT_EQ(
      RunShell("seq -f '%0200g' 1 20000 | " + Kcat(b, "-P -t tls.big -z none") + " 2>&1").exit_code,
      0);
  auto got = RunShell(Kcat(b, "-C -t tls.big -o beginning -c 20000 -e -q"));
  EXPECT_EQ(got.exit_code, 0);
  EXPECT_EQ(got.out.size(), want.out.size());
  EXPECT_TRUE(got.out == want.out) << "kcat read other bytes over TLS than it wrote";
  EXPECT_NE(b.log().find("TLS with " + cert_.cert), std::string::npos) << b.log();
}

TEST_F(BrokerTls, ConfluentKafkaProducesAndConsumesOverSaslSsl) {
  BrokerProcess b(TlsArgs());
  b.Start();
  auto r = RunPython("tls_produce_consume.py", b.bootstrap() + " " + cert_.cert + " " + kUser +
                                                   " " + kPassword + " tls.confluent 500");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["acked"].size(), 500u) << j["errors"].dump();
  EXPECT_EQ(j["consumed"], j["acked"]) << j["errors"].dump();
}

TEST_F(BrokerTls, APlainTextClientIsClosedAndTheBrokerKeepsServing) {
  BrokerProcess b(TlsArgs());
  b.Start();
  {
    Conn c(b.port(), 10);
    ASSERT_TRUE(c.connected());
    c.Send(static_cast<std::int16_t>(p::ApiKey::kApiVersions), 2, "");
    EXPECT_TRUE(ClosedByBroker(c)) << "the broker kept a plain-text connection open";
  }
  // kcat without TLS gets no metadata either.
  auto plain = RunShell("timeout 30 kcat -b " + b.bootstrap() +
                        " -X security.protocol=SASL_PLAINTEXT -X sasl.mechanisms=PLAIN -X "
                        "sasl.username=" +
                        kUser + " -X sasl.password=" + kPassword + " -m 5 -L 2>&1");
  EXPECT_NE(plain.exit_code, 0) << plain.out;
  EXPECT_NE(b.log().find("TLS handshake failed"), std::string::npos) << b.log();
  ExpectKcatServes(b, "tls.after.plain");
  EXPECT_GT(b.pid(), 0);
}

TEST_F(BrokerTls, AHandshakeNotDoneWithinThePreauthTimeoutIsClosed) {
  BrokerProcess b(TlsArgs({"--preauth-timeout-ms", "1000"}));
  b.Start();
  Conn silent(b.port(), 15);
  ASSERT_TRUE(silent.connected());
  EXPECT_TRUE(ClosedByBroker(silent)) << "a connection that never started TLS stayed open";
  EXPECT_NE(b.log().find("TLS handshake failed (not complete in time)"), std::string::npos)
      << b.log();
  ExpectKcatServes(b, "tls.after.silent");
}

TEST_F(BrokerTls, ACertWithoutAKeyIsAUsageError) {
  auto r = RunBroker("--tls-cert '" + cert_.cert + "'");
  EXPECT_EQ(r.out.find("exit=0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--tls-cert requires --tls-key"), std::string::npos) << r.out;
  auto k = RunBroker("--tls-key '" + cert_.key + "'");
  EXPECT_EQ(k.out.find("exit=0"), std::string::npos) << k.out;
  EXPECT_NE(k.out.find("--tls-key requires --tls-cert"), std::string::npos) << k.out;
}

TEST_F(BrokerTls, BadFilesStopTheBrokerAtStartWithAMessage) {
  auto garbage = dir_ / "garbage.pem";
  std::ofstream(garbage) << "this is not a certificate\n";
  auto r = RunBroker("--tls-cert '" + garbage.string() + "' --tls-key '" + cert_.key + "'");
  EXPECT_NE(r.out.find("exit=2"), std::string::npos) << r.out;  // an error, not a signal
  EXPECT_NE(r.out.find("--tls-cert " + garbage.string() + ": not a usable PEM certificate"),
            std::string::npos)
      << r.out;

  auto missing = RunBroker("--tls-cert '" + cert_.cert + "' --tls-key '" +
                           (dir_ / "absent.pem").string() + "'");
  EXPECT_NE(missing.out.find("exit=2"), std::string::npos) << missing.out;
  EXPECT_NE(missing.out.find("cannot read"), std::string::npos) << missing.out;

  // Another certificate's key: refused, and the key itself is never echoed.
  auto other = MakeSelfSignedCert(dir_, "other");
  auto wrong = RunBroker("--tls-cert '" + cert_.cert + "' --tls-key '" + other.key + "'");
  EXPECT_NE(wrong.out.find("exit=2"), std::string::npos) << wrong.out;
  EXPECT_NE(wrong.out.find("--tls-key " + other.key), std::string::npos) << wrong.out;
  std::string key_text = ReadAll(other.key);
  std::string key_line = key_text.substr(key_text.find('\n') + 1, 40);
  EXPECT_EQ(wrong.out.find(key_line), std::string::npos) << "the key's contents were printed";
  EXPECT_EQ(wrong.out.find("PRIVATE KEY"), std::string::npos) << wrong.out;
}

}  // namespace
}  // namespace sluice::testing
