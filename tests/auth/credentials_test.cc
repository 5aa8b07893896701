// Passwords, the deployment secret, signed tokens and the login limiter.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "auth/login_limiter.h"
#include "auth/password.h"
#include "auth/secret_key.h"
#include "auth/token.h"

namespace sluice::auth {
namespace {

TEST(Password, HashIsArgon2idAndVerifiesOnlyTheRightPassword) {
  auto hash = HashPassword("correct horse");
  ASSERT_TRUE(hash.ok());
  EXPECT_EQ(hash->rfind("$argon2id$", 0), 0u) << *hash;
  EXPECT_LE(hash->size(), 1024u);  // fits user.hashed_password
  EXPECT_TRUE(VerifyPassword(*hash, "correct horse"));
  EXPECT_FALSE(VerifyPassword(*hash, "correct horsE"));
  EXPECT_FALSE(VerifyPassword("not a hash", "correct horse"));
}

TEST(Password, SamePasswordHashesDifferentlyEachTime) {
  EXPECT_NE(*HashPassword("pw-12345"), *HashPassword("pw-12345"));
}

class SecretKeyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("SLUICE_SECRET_KEY");
    dir_ = std::filesystem::temp_directory_path() /
           ("sluice-key-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override {
    std::filesystem::remove_all(dir_);
    unsetenv("SLUICE_SECRET_KEY");
  }
  std::filesystem::path dir_;
};

TEST_F(SecretKeyTest, FirstRunCreatesAPrivateKeyFileThatLaterRunsReuse) {
  auto first = SecretKey::Load(dir_.string());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  struct stat st {};
  ASSERT_EQ(::stat((dir_ / "secret.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  auto second = SecretKey::Load(dir_.string());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(first->bytes(), second->bytes());
  EXPECT_EQ(first->bytes().size(), SecretKey::kBytes);
}

TEST_F(SecretKeyTest, EnvironmentVariableWinsOverTheFile) {
  setenv("SLUICE_SECRET_KEY", "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
         1);
  auto key = SecretKey::Load(dir_.string());
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(static_cast<unsigned char>(key->bytes()[1]), 0x11);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "secret.key"));
}

TEST_F(SecretKeyTest, MalformedKeyIsRefused) {
  setenv("SLUICE_SECRET_KEY", "not-hex", 1);
  EXPECT_FALSE(SecretKey::Load(dir_.string()).ok());
  setenv("SLUICE_SECRET_KEY", "0011", 1);  // too short to sign with
  EXPECT_FALSE(SecretKey::Load(dir_.string()).ok());
}

TokenClaims Claims(TokenKind kind, std::int64_t exp) {
  TokenClaims c;
  c.kind = kind;
  c.user_id = common::Uuid::V4();
  c.issued_at = 1000;
  c.expires_at = exp;
  return c;
}

TEST(Token, SignedTokenVerifiesAndCarriesItsClaims) {
  TokenSigner signer(SecretKey::Random());
  TokenClaims c = Claims(TokenKind::kService, 5000);
  c.service_account_id = common::Uuid::V4();
  c.name = "ci-deployer";
  auto back = signer.Verify(signer.Sign(c), 2000);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->kind, TokenKind::kService);
  EXPECT_EQ(back->user_id, c.user_id);
  EXPECT_EQ(back->service_account_id, c.service_account_id);
  EXPECT_EQ(back->name, "ci-deployer");
  EXPECT_EQ(back->expires_at, 5000);
}

TEST(Token, ALoaderTokenCarriesItsItemAndAttemptAndNeedsTheAttempt) {
  TokenSigner signer(SecretKey::Random());
  TokenClaims c = Claims(TokenKind::kLoader, 5000);
  c.name = "1764763200123456";  // the attempt's started_at, micros
  auto back = signer.Verify(signer.Sign(c), 2000);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->kind, TokenKind::kLoader);
  EXPECT_EQ(back->user_id, c.user_id);
  EXPECT_EQ(back->name, c.name);
  c.name.clear();
  EXPECT_FALSE(signer.Verify(signer.Sign(c), 2000).ok()) << "a loader token names its attempt";
}

TEST(Token, ExpiredTokenIsRejected) {
  TokenSigner signer(SecretKey::Random());
  auto r = signer.Verify(signer.Sign(Claims(TokenKind::kAccess, 5000)), 5000);
  EXPECT_EQ(r.status().code(), common::Code::kUnauthenticated);
}

TEST(Token, TamperedOrForeignTokenIsRejected) {
  TokenSigner signer(SecretKey::Random());
  TokenSigner other(SecretKey::Random());
  std::string token = signer.Sign(Claims(TokenKind::kAccess, 5000));
  EXPECT_FALSE(other.Verify(token, 2000).ok());
  // Flip one character of the payload: the MAC no longer matches.
  std::string tampered = token;
  tampered[8] = tampered[8] == 'A' ? 'B' : 'A';
  EXPECT_FALSE(signer.Verify(tampered, 2000).ok());
  EXPECT_FALSE(signer.Verify("", 2000).ok());
  EXPECT_FALSE(signer.Verify("slu1.garbage", 2000).ok());
  EXPECT_FALSE(signer.Verify(token.substr(0, token.size() - 2), 2000).ok());
}

TEST(LoginLimiter, BudgetPerEmailAndAddressUntilTheWindowPasses) {
  LoginLimiter limiter(3, std::chrono::seconds(60));
  auto t0 = LoginLimiter::Clock::now();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.Reserve("a@x.io", "10.0.0.1", t0));
  EXPECT_FALSE(limiter.Reserve("a@x.io", "10.0.0.1", t0 + std::chrono::seconds(59)));
  EXPECT_TRUE(limiter.Reserve("b@x.io", "10.0.0.1", t0));  // another email
  EXPECT_TRUE(limiter.Reserve("a@x.io", "10.0.0.2", t0));  // the owner elsewhere
  EXPECT_TRUE(limiter.Reserve("a@x.io", "10.0.0.1", t0 + std::chrono::seconds(60)));
}

TEST(LoginLimiter, SuccessClearsTheAttempts) {
  LoginLimiter limiter(2, std::chrono::seconds(60));
  EXPECT_TRUE(limiter.Reserve("a@x.io", "h"));
  EXPECT_TRUE(limiter.Reserve("a@x.io", "h"));
  limiter.Succeeded("a@x.io", "h");
  EXPECT_TRUE(limiter.Reserve("a@x.io", "h"));
}

TEST(LoginLimiter, ParallelReservationsNeverExceedTheBudget) {
  LoginLimiter limiter(5, std::chrono::seconds(60));
  std::atomic<int> granted{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 64; ++i)
    threads.emplace_back([&] {
      if (limiter.Reserve("a@x.io", "h")) ++granted;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(granted.load(), 5);
}

TEST(LoginLimiter, TheTableStaysBoundedWhateverIsSent) {
  LoginLimiter::Options o;
  o.max_failures = 1;
  o.max_keys = 100;
  LoginLimiter limiter(o);
  for (int i = 0; i < 10'000; ++i)
    limiter.Reserve("user" + std::to_string(i) + "@x.io", "10.0.0." + std::to_string(i % 256));
  EXPECT_EQ(limiter.tracked(), 100u);
  // The newest are remembered, the oldest were let go.
  EXPECT_FALSE(limiter.Reserve("user9999@x.io", "10.0.0." + std::to_string(9999 % 256)));
  EXPECT_TRUE(limiter.Reserve("user0@x.io", "10.0.0.0"));
}

TEST(LoginLimiter, VerificationSlotsAreBounded) {
  LoginLimiter::Options o;
  o.max_concurrent_verifications = 2;
  LoginLimiter limiter(o);
  VerificationSlot a(limiter, std::chrono::milliseconds(0));
  VerificationSlot b(limiter, std::chrono::milliseconds(0));
  EXPECT_TRUE(a.held());
  EXPECT_TRUE(b.held());
  {
    VerificationSlot c(limiter, std::chrono::milliseconds(0));
    EXPECT_FALSE(c.held());
  }
}

}  // namespace
}  // namespace sluice::auth
