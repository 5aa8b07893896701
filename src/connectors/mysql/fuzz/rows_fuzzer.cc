// libFuzzer target for the binlog row decoder (row_decoder.h): TABLE_MAP and
// ROWS event parts, framed as in rows_input.h, whatever the bytes. Seeds are
// recorded from a real MariaDB (tests/reliability/corpus/mysql_rows/).
// Errors are fine; a crash, a sanitizer report, a hang, or an insert's text
// that is not its tree's dump (Internal) is a bug.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "connectors/mysql/fuzz/rows_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  for (const auto& input : sluice::connectors::mysql::fuzz::DecodeRowsInputs(in))
    if (sluice::connectors::mysql::fuzz::DecodeRowsInput(input).code() ==
        sluice::common::Code::kInternal)
      std::abort();
  return 0;
}
