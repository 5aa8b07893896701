# Precompiled headers (#29). Measured per translation unit, the third-party
# headers cost far more than our own code: nlohmann/json and cpp-httplib
# preprocess to ~133k lines each, spdlog 109k, gtest 104k, pqxx 74k and fmt
# 69k, against ~28k for <string>. Each is parsed once per build here, in one
# precompiled header shared (REUSE_FROM) by every library and the sluice
# binary, and a second one, adding gtest, shared by every test executable.
#
# GCC uses a precompiled header only when the compile flags that affect it
# match, so every target that reuses one links sluice_third_party (the same
# include paths and defines, httplib's OpenSSL switch among them) and builds
# with -Winvalid-pch: a header GCC refuses is then an error under -Werror,
# never a silent slow build.
option(SLUICE_PCH "Precompile the heavy third-party headers" ON)

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
    target_compile_options(${name} PRIVATE -Winvalid-pch)
  endif()
endfunction()

# sluice_use_precompiled_header(<target> <pch>): <target> compiles against
# the header <pch> owns (and gets the flags it needs to be accepted).
function(sluice_use_precompiled_header target pch)
  target_link_libraries(${target} PRIVATE sluice_third_party)
  if(SLUICE_PCH)
    target_precompile_headers(${target} REUSE_FROM ${pch})
    target_compile_options(${target} PRIVATE -Winvalid-pch)
  endif()
endfunction()

sluice_add_precompiled_header(sluice_pch HEADERS ${SLUICE_PCH_STD_HEADERS} ${SLUICE_PCH_THIRD_PARTY_HEADERS})
