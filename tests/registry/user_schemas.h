// The Avro record the registry tests register: a first version and a
// compatible second one (an optional field added with its default).
#pragma once

#include <string>

namespace sluice::testing {

inline const std::string kUserV1 =
    R"({"type":"record","name":"User","fields":[{"name":"id","type":"long"}]})";
inline const std::string kUserV2 =
    R"({"type":"record","name":"User","fields":[{"name":"id","type":"long"},
  {"name":"email","type":["null","string"],"default":null}]})";

}  // namespace sluice::testing
