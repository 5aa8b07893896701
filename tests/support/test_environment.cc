// Compiled into every test executable: exports where the sluice binary, the
// source tree and the test cluster are, unless the caller already set them.
#include <cstdlib>

namespace {
struct TestEnvironment {
  TestEnvironment() {
    setenv("SLUICE_TEST_PG_DIR", SLUICE_TEST_PG_DIR_DEFAULT, 0);
    setenv("SLUICE_BIN", SLUICE_BIN_DEFAULT, 0);
    setenv("SLUICE_SOURCE_DIR", SLUICE_SOURCE_DIR_DEFAULT, 0);
  }
} const kTestEnvironment;
}  // namespace
