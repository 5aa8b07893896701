# Runs one libFuzzer target for a bounded time over a scratch corpus seeded
# from the repository (the seeds are read, never written), and fails unless
# it really ran: exit 0 and libFuzzer's "Done N runs" line with N above the
# seed count. Crash inputs land in WORK as crash-*.
#   cmake -DFUZZER=... -DSEEDS=... -DWORK=... -DSECONDS=... -P run_fuzzer.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus)
file(GLOB seeds ${SEEDS}/*)
list(LENGTH seeds seed_count)
if(seed_count EQUAL 0)
  message(FATAL_ERROR "no seed corpus in ${SEEDS}")
endif()
execute_process(
  COMMAND ${FUZZER} -max_total_time=${SECONDS} -seed=1 -timeout=10 -rss_limit_mb=2048
          -print_final_stats=1 -artifact_prefix=${WORK}/ ${WORK}/corpus ${SEEDS}
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err)
string(LENGTH "${err}" len)
if(len GREATER 4000)
  math(EXPR from "${len} - 4000")
  string(SUBSTRING "${err}" ${from} 4000 tail)
else()
  set(tail "${err}")
endif()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fuzzer ${FUZZER} failed (exit ${rc}); artifacts in ${WORK}\n${tail}")
endif()
if(NOT err MATCHES "Done ([0-9]+) runs in ([0-9]+) second")
  message(FATAL_ERROR "fuzzer ${FUZZER} did not report a run\n${tail}")
endif()
set(runs ${CMAKE_MATCH_1})
set(secs ${CMAKE_MATCH_2})
if(NOT runs GREATER seed_count)
  message(FATAL_ERROR "fuzzer ${FUZZER} ran only ${runs} inputs\n${tail}")
endif()
set(cov "?")
if(err MATCHES "stat::new_units_added: *([0-9]+)")
  set(cov ${CMAKE_MATCH_1})
endif()
get_filename_component(name ${FUZZER} NAME)
message(STATUS "fuzz ${name}: ${runs} runs in ${secs} s, ${seed_count} seeds, ${cov} new units, 0 crashes")
# For the reliability summary, when its directory is there (a ctest run).
if(DEFINED RECORD)
  get_filename_component(record_dir ${RECORD} DIRECTORY)
  if(EXISTS ${record_dir})
    file(APPEND ${RECORD} "fuzz_targets=1 fuzz_inputs=${runs}\n")
  endif()
endif()
