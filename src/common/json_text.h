// JSON text written straight into a buffer, without building a value.
#pragma once

#include <string>
#include <string_view>

namespace sluice::common {

// Appends `text` as a JSON string: byte for byte what nlohmann's dump
// writes, invalid UTF-8 replaced by U+FFFD.
void AppendJsonString(std::string& out, std::string_view text);

// Appends `value` as nlohmann's dump writes a double: its shortest
// round-trip spelling (1.0, -0.0, 1e+21), null for NaN and the infinities.
void AppendJsonDouble(std::string& out, double value);

}  // namespace sluice::common
