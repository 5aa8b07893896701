// Configuration encryption rules, on real libsodium.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "secrets/configuration_cipher.h"
#include "secrets/key_ring.h"

namespace sluice::secrets {
namespace {

KeyRing Ring(std::vector<std::string> hex) { return *KeyRing::FromHex(hex); }

TEST(ConfigurationCipher, RoundTripsAndHidesThePlaintext) {
  auto ring = Ring({std::string(64, '1')});
  nlohmann::json plain = {{"password", "hunter2-secret"}, {"port", 5432}};
  auto stored = EncryptConfiguration(plain, ring);
  EXPECT_TRUE(IsEnvelope(stored));
  EXPECT_EQ(stored["kid"], ring.primary().id);
  EXPECT_EQ(stored.dump().find("hunter2"), std::string::npos);
  EXPECT_EQ(*DecryptConfiguration(stored, ring), plain);
}

TEST(ConfigurationCipher, OldKeyStillDecryptsAfterRotation) {
  auto old_ring = Ring({std::string(64, '1')});
  auto stored = EncryptConfiguration({{"a", 1}}, old_ring);
  auto rotated = Ring({std::string(64, '2'), std::string(64, '1')});
  EXPECT_EQ((*DecryptConfiguration(stored, rotated))["a"], 1);
  EXPECT_EQ(EncryptConfiguration({{"a", 1}}, rotated)["kid"], rotated.primary().id);
}

TEST(ConfigurationCipher, UnknownKeyIsRefused) {
  auto stored = EncryptConfiguration({{"a", 1}}, Ring({std::string(64, '1')}));
  EXPECT_FALSE(DecryptConfiguration(stored, Ring({std::string(64, '3')})).ok());
}

TEST(ConfigurationCipher, TamperedCiphertextIsRefused) {
  auto ring = Ring({std::string(64, '1')});
  auto stored = EncryptConfiguration({{"a", 1}}, ring);
  std::string ct = stored["ct"];
  ct[0] = ct[0] == 'A' ? 'B' : 'A';
  stored["ct"] = ct;
  EXPECT_FALSE(DecryptConfiguration(stored, ring).ok());
}

TEST(ConfigurationCipher, PlainLegacyValuePassesThrough) {
  auto ring = Ring({std::string(64, '1')});
  EXPECT_EQ((*DecryptConfiguration({{"host", "h"}}, ring))["host"], "h");
}

TEST(KeyRing, KeyFileIsCreatedOnceWithMode0600) {
  std::string dir = ::testing::TempDir() + "/keyring_" + std::to_string(::getpid());
  ::unsetenv("SLUICE_CONFIG_KEY");
  auto a = KeyRing::Load(dir);
  auto b = KeyRing::Load(dir);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->primary().id, b->primary().id);
  struct stat st {};
  ASSERT_EQ(::stat(KeyFilePath(dir).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(KeyedHash, DependsOnKeyAndPayload) {
  auto ring = Ring({std::string(64, '1'), std::string(64, '2')});
  auto h1 = *KeyedHash(ring, "", "payload");
  EXPECT_EQ(h1.size(), 64u);
  EXPECT_EQ(h1, *KeyedHash(ring, ring.primary().id, "payload"));
  EXPECT_NE(h1, *KeyedHash(ring, ring.keys()[1].id, "payload"));
  EXPECT_NE(h1, *KeyedHash(ring, "", "payload2"));
}

}  // namespace
}  // namespace sluice::secrets
