# Precompiled headers (#29), for the test code. Every test translation unit
# includes gtest (~104k preprocessed lines) and most include nlohmann/json
# (~133k); parsed once into a precompiled header shared (REUSE_FROM) by every
# test target, each such unit compiles about a second faster.
#
# The libraries and the sluice binary do not use one: measured on this code
# with GCC 12, loading the ~150-200 MB header costs a light translation unit
# more than it saves (src/common/status.cc: 0.5 s of CPU without, 2.0 s
# with), and a heavy one saves only ~14% (src/dataflow/envelope.cc: 15.0 s
# -> 12.9 s), its time going to code generation rather than parsing; the
# libraries built with it took about as much CPU as without.
#
# GCC uses a precompiled header only when the compile flags that affect it
# match, so every target that reuses one links sluice_third_party (the same
# include paths and defines, httplib's OpenSSL switch among them) and
# sluice_warnings (-Wpedantic changes predefined macros), and builds with
# -Winvalid-pch: a header GCC refuses is an error under -Werror, never a
# silent slow build.
option(SLUICE_PCH "Precompile the heavy third-party headers of the test code" ON)

# GCC 12 takes the standard headers out of a precompiled header without their
# system-header status, so its known false positives inside libstdc++'s own
# std::string code (GCC bugs 105329, 105651: memcpy "out of bounds" in
# operator+) stop being silenced and fail -Werror. Those checks are off for
# the targets that use the header (the test code) and only for them.
set(SLUICE_PCH_GCC_FALSE_POSITIVES)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(SLUICE_PCH_GCC_FALSE_POSITIVES -Wno-array-bounds -Wno-stringop-overflow -Wno-stringop-overread
    -Wno-restrict)
endif()

add_library(sluice_third_party INTERFACE)
target_link_libraries(sluice_third_party INTERFACE nlohmann_json::nlohmann_json fmt::fmt spdlog::spdlog
  simdjson::simdjson PkgConfig::PQXX PkgConfig::HTTPLIB Threads::Threads)

set(SLUICE_PCH_STD_HEADERS
  <algorithm> <atomic> <chrono> <condition_variable> <cstdint> <cstring> <functional> <map>
  <memory> <mutex> <optional> <set> <sstream> <string> <string_view> <thread> <unordered_map>
  <utility> <variant> <vector>)
set(SLUICE_PCH_THIRD_PARTY_HEADERS
  <nlohmann/json.hpp> <fmt/format.h> <fmt/chrono.h> <fmt/ranges.h> <spdlog/spdlog.h> <pqxx/pqxx>
  <httplib.h>)

# sluice_add_precompiled_header(<name> HEADERS <h>... LIBS <lib>...): a small
# static library whose only job is to own the precompiled header <name>.
function(sluice_add_precompiled_header name)
  cmake_parse_arguments(P "" "" "HEADERS;LIBS" ${ARGN})
  add_library(${name} STATIC ${CMAKE_SOURCE_DIR}/cmake/pch_anchor.cc)
  # The warning flags too: -Wpedantic changes predefined macros GCC checks.
  target_link_libraries(${name} PUBLIC sluice_third_party ${P_LIBS} PRIVATE sluice_warnings)
  if(SLUICE_PCH)
    target_precompile_headers(${name} PRIVATE ${P_HEADERS})
    target_compile_options(${name} PRIVATE -Winvalid-pch ${SLUICE_PCH_GCC_FALSE_POSITIVES})
  endif()
endfunction()

# sluice_use_precompiled_header(<target> <pch>): <target> compiles against
# the header <pch> owns (and gets the flags it needs to be accepted).
function(sluice_use_precompiled_header target pch)
  # Linking the owner (an empty archive) brings the flags the header was built
  # with: the third-party ones, and gtest's defines for the test header.
  target_link_libraries(${target} PRIVATE ${pch})
  if(SLUICE_PCH)
    target_precompile_headers(${target} REUSE_FROM ${pch})
    target_compile_options(${target} PRIVATE -Winvalid-pch ${SLUICE_PCH_GCC_FALSE_POSITIVES})
  endif()
endfunction()

