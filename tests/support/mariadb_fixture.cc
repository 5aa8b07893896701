// `mariadb_fixture start|stop DIR`: the ctest fixture that runs one MariaDB
// server for the whole test run (support/mariadb_server.h).
#include <cstdio>
#include <exception>
#include <string>

#include "support/mariadb_server.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: mariadb_fixture start|stop DIR\n");
    return 2;
  }
  try {
    std::string cmd = argv[1];
    if (cmd == "start") {
      auto s = sluice::testing::StartMariaDb(argv[2]);
      std::printf("mariadbd on 127.0.0.1:%d, socket %s\n", s.port, s.socket.c_str());
    } else {
      sluice::testing::StopMariaDb(argv[2]);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mariadb_fixture: %s\n", e.what());
    return 1;
  }
  return 0;
}
