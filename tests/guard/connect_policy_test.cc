// The connect policy's rules over addresses: CIDR blocks, the link-local
// default, the operator's allow and deny lists, the data plane's own
// endpoints, and a name that resolves to a denied address.
#include "guard/connect_policy.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include "guard/http_destination.h"

namespace sluice::guard {
namespace {

Address A(const char* text) { return *Address::Parse(text); }

TEST(Cidr, ContainsItsAddressesOnly) {
  auto block = *Cidr::Parse("10.1.0.0/16");
  EXPECT_TRUE(block.Contains(A("10.1.255.3")));
  EXPECT_FALSE(block.Contains(A("10.2.0.1")));
  EXPECT_FALSE(block.Contains(A("::1")));
  auto v6 = *Cidr::Parse("fe80::/10");
  EXPECT_TRUE(v6.Contains(A("fe80::1")));
  EXPECT_TRUE(v6.Contains(A("febf::1")));
  EXPECT_FALSE(v6.Contains(A("fec0::1")));
  EXPECT_TRUE(Cidr::Parse("10.0.0.1")->Contains(A("10.0.0.1")));
  EXPECT_FALSE(Cidr::Parse("10.0.0.1")->Contains(A("10.0.0.2")));
  EXPECT_FALSE(Cidr::Parse("10.0.0.0/33").ok());
  EXPECT_FALSE(Cidr::Parse("ten/8").ok());
}

TEST(Cidr, AMappedIpv6AddressIsItsIpv4Address) {
  EXPECT_EQ(A("::ffff:169.254.169.254"), A("169.254.169.254"));
  EXPECT_TRUE(Cidr::Parse("169.254.0.0/16")->Contains(A("::ffff:169.254.1.1")));
}

TEST(ConnectPolicy, LinkLocalMetadataAddressesAreDeniedByDefault) {
  ConnectPolicy p;
  auto st = p.CheckAddress(A("169.254.169.254"), {"169.254.169.254", 80, std::nullopt});
  EXPECT_TRUE(IsRefusal(st)) << st.message();
  EXPECT_NE(st.message().find("connect-deny"), std::string::npos) << st.message();
  EXPECT_TRUE(IsRefusal(p.CheckAddress(A("fe80::1"), {"fe80::1", 80, std::nullopt})));
  EXPECT_TRUE(p.CheckAddress(A("10.0.0.1"), {"10.0.0.1", 80, std::nullopt}).ok());
  // The operator's lists never lift the default.
  auto open = *ConnectPolicy::FromLists({"169.254.0.0/16"}, {});
  EXPECT_TRUE(IsRefusal(open.CheckAddress(A("169.254.169.254"), {"x", 80, std::nullopt})));
}

sockaddr_in V4(const char* ip, int port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<std::uint16_t>(port));
  inet_pton(AF_INET, ip, &sa.sin_addr);
  return sa;
}

TEST(ConnectPolicy, AKafkaClientsResolvedAddressIsCheckedWithTheSocketsOwnPort) {
  auto p = *ConnectPolicy::FromLists({}, {"10.9.0.0/16"});
  p.Protect(ProtectedEndpoint::Make("api", "the data-plane's API", "127.0.0.1", 8080));
  auto ok = V4("10.1.2.3", 9092);
  EXPECT_TRUE(CheckResolvedBroker(p, reinterpret_cast<sockaddr*>(&ok), "kafka-1:9092").ok());
  // A name the cluster advertises that now resolves into a denied block.
  auto denied = V4("10.9.0.7", 9092);
  auto st = CheckResolvedBroker(p, reinterpret_cast<sockaddr*>(&denied), "kafka-2:9092");
  EXPECT_TRUE(IsRefusal(st));
  EXPECT_NE(st.message().find("(connect-deny)"), std::string::npos) << st.message();
  // The API's port on a local address is refused, whatever port the name claims.
  auto api = V4("127.0.0.1", 8080);
  st = CheckResolvedBroker(p, reinterpret_cast<sockaddr*>(&api), "innocent:9092");
  EXPECT_TRUE(IsRefusal(st));
  EXPECT_NE(st.message().find("(api)"), std::string::npos) << st.message();
  auto other_port = V4("127.0.0.1", 9092);
  EXPECT_TRUE(
      CheckResolvedBroker(p, reinterpret_cast<sockaddr*>(&other_port), "localhost:9092").ok());
  // Metadata addresses stay denied by default.
  auto metadata = V4("169.254.169.254", 9092);
  EXPECT_TRUE(IsRefusal(CheckResolvedBroker(p, reinterpret_cast<sockaddr*>(&metadata), "m:9092")));
}

TEST(ConnectPolicy, DenyAndAllowLists) {
  auto p = *ConnectPolicy::FromLists({"10.0.0.0/8"}, {"10.9.0.0/16"});
  EXPECT_TRUE(p.CheckAddress(A("10.1.2.3"), {"db", 5432, "shop"}).ok());
  auto denied = p.CheckAddress(A("10.9.2.3"), {"db", 5432, "shop"});
  EXPECT_NE(denied.message().find("(connect-deny)"), std::string::npos) << denied.message();
  auto outside = p.CheckAddress(A("192.168.1.1"), {"db", 5432, "shop"});
  EXPECT_NE(outside.message().find("(connect-allow)"), std::string::npos) << outside.message();
  EXPECT_FALSE(ConnectPolicy::FromLists({}, {"not-a-block"}).ok());
}

TEST(ConnectPolicy, TheControlDatabaseIsRefusedOtherDatabasesOfItsServerAreNot) {
  ConnectPolicy p;
  p.Protect(ProtectedEndpoint::Make("control-database", "the data-plane's control database",
                                    "127.0.0.1", 5544, "sluice"));
  auto st = p.CheckAddress(A("127.0.0.1"), {"127.0.0.1", 5544, "sluice"});
  EXPECT_TRUE(IsRefusal(st));
  EXPECT_NE(st.message().find("(control-database)"), std::string::npos) << st.message();
  // Any local address reaches a server listening on this machine.
  EXPECT_TRUE(IsRefusal(p.CheckAddress(A("127.0.0.2"), {"127.0.0.2", 5544, "sluice"})));
  EXPECT_TRUE(IsRefusal(p.CheckAddress(A("::1"), {"::1", 5544, "sluice"})));
  EXPECT_TRUE(p.CheckAddress(A("127.0.0.1"), {"127.0.0.1", 5544, "shop"}).ok());
  EXPECT_TRUE(p.CheckAddress(A("127.0.0.1"), {"127.0.0.1", 5545, "sluice"}).ok());
}

TEST(ConnectPolicy, TheApiIsRefusedWhateverIsAsked) {
  ConnectPolicy p;
  p.Protect(ProtectedEndpoint::Make("api", "the data-plane's API", "0.0.0.0", 8080));
  auto st = p.CheckAddress(A("127.0.0.1"), {"localhost", 8080, std::nullopt});
  EXPECT_NE(st.message().find("(api)"), std::string::npos) << st.message();
  EXPECT_TRUE(IsRefusal(p.CheckAddress(A("127.0.0.1"), {"localhost", 8080, "anything"})));
}

TEST(ConnectPolicy, TheUnspecifiedAddressIsRefused) {
  ConnectPolicy p;
  EXPECT_TRUE(IsRefusal(p.CheckAddress(A("0.0.0.0"), {"0.0.0.0", 5432, "x"})));
}

TEST(ConnectPolicy, TravelsToAWorkerUnchanged) {
  auto p = *ConnectPolicy::FromLists({"10.0.0.0/8"}, {"10.9.0.0/16"});
  p.Protect(ProtectedEndpoint::Make("registry", "the registry", "127.0.0.1", 8081));
  p.Protect(ProtectedEndpoint::Make("control-database", "db", "10.1.1.1", 5432, "sluice"));
  auto back = ConnectPolicy::FromJson(p.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->ToJson(), p.ToJson());
  EXPECT_TRUE(IsRefusal(back->CheckAddress(A("10.1.1.1"), {"10.1.1.1", 5432, "sluice"})));
  EXPECT_TRUE(back->CheckAddress(A("10.1.1.1"), {"10.1.1.1", 5432, "other"}).ok());
  // A launch that drops the defaults gets them back.
  auto bare = *ConnectPolicy::FromJson({{"deny", nlohmann::json::array()}});
  EXPECT_TRUE(IsRefusal(bare.CheckAddress(A("169.254.169.254"), {"x", 80, std::nullopt})));
}

// A name is resolved and every address it resolves to is checked: a deny
// of 127.0.0.0/8 refuses "localhost".
TEST(ConnectPolicy, AHostnameResolvingToADeniedAddressIsRefused) {
  auto p = *ConnectPolicy::FromLists({}, {"127.0.0.0/8", "::1/128"});
  auto r = ResolveChecked(p, {"localhost", 5432, "shop"});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(IsRefusal(r.status())) << r.status().message();
  EXPECT_NE(r.status().message().find("localhost"), std::string::npos) << r.status().message();
  EXPECT_TRUE(IsRefusal(CheckConfigured(p, {"localhost", 5432, "shop"})));
  // Unresolvable when saved: checked again when connecting.
  EXPECT_TRUE(CheckConfigured(p, {"no-such-host.invalid", 5432, "shop"}).ok());
  EXPECT_EQ(ResolveChecked(p, {"no-such-host.invalid", 5432, "shop"}).status().code(),
            common::Code::kUnavailable);
  ConnectPolicy open;
  auto fine = ResolveChecked(open, {"localhost", 5432, "shop"});
  ASSERT_TRUE(fine.ok()) << fine.status().message();
  EXPECT_TRUE(fine->front().IsLoopback());
}

TEST(ConnectPolicy, KafkaBootstrapServersAreEachChecked) {
  auto p = *ConnectPolicy::FromLists({}, {"10.9.0.0/16"});
  EXPECT_TRUE(CheckBootstrap(p, "10.1.0.1:9092, 10.2.0.1:9092", true).ok());
  auto st = CheckBootstrap(p, "10.1.0.1:9092,SASL_SSL://10.9.0.1:9093", false);
  EXPECT_TRUE(IsRefusal(st)) << st.message();
  EXPECT_TRUE(IsRefusal(CheckBootstrap(p, "[fe80::1]:9092", false)));
}

TEST(HttpDestination, SpeaksOnlyHttpAndHttps) {
  for (const char* url : {"file:///etc/passwd", "gopher://127.0.0.1:70/_x", "ftp://example.com/x",
                          "dict://127.0.0.1:11211/", "ldap://x/", "example.com/hook"}) {
    auto d = ParseHttpUrl(url);
    EXPECT_FALSE(d.ok()) << url;
    EXPECT_TRUE(IsRefusal(d.status())) << url << ": " << d.status().message();
    EXPECT_NE(d.status().message().find("(http-only)"), std::string::npos) << d.status().message();
  }
  auto ok = ParseHttpUrl("HTTPS://hooks.example.com/x");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->where.port, 443);
  EXPECT_EQ(ParseHttpUrl("http://[::1]:9000/x")->where.host, "::1");
}

TEST(HttpDestination, PinsTheCheckedAddress) {
  ConnectPolicy open;
  auto pinned = PinHttp(open, "http://localhost:9000/hook");
  ASSERT_TRUE(pinned.ok()) << pinned.status().message();
  EXPECT_TRUE(pinned->resolve == "localhost:9000:127.0.0.1" ||
              pinned->resolve == "localhost:9000:[::1]")
      << pinned->resolve;
  auto p = *ConnectPolicy::FromLists({}, {"127.0.0.0/8", "::1/128"});
  EXPECT_TRUE(IsRefusal(PinHttp(p, "http://localhost:9000/hook").status()));
  EXPECT_TRUE(IsRefusal(PinHttp(open, "http://169.254.169.254/latest/meta-data").status()));
}

}  // namespace
}  // namespace sluice::guard
