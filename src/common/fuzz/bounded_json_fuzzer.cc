// libFuzzer target for nested and huge JSON: the bytes through
// ParseBoundedJson at small limits (so the mutator reaches them), with the
// shape counted independently on what nlohmann::json builds. The rules
// under test: a value is returned only when nlohmann accepts the text and
// the value is within both limits (and is the same value); a refusal for a
// limit only when the text really breaks it (or is not JSON); and never a
// crash, whatever the nesting. A first byte of 0xFF instead builds the input
// as a deep or long document (the mutator alone rarely nests thousands).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "common/bounded_json.h"

namespace {

using nlohmann::json;
using sluice::common::JsonLimits;

[[noreturn]] void Bug(const char* what, const std::string& text) {
  std::fprintf(stderr, "bounded json fuzzer: %s on %.200s\n", what, text.c_str());
  std::abort();
}

// Depth of the text as nlohmann's SAX parser reads it (iterative, and it
// sees every level, even one under a duplicate key that the built object
// drops); -1 when nlohmann refuses the text.
struct DepthCounter : nlohmann::json_sax<json> {
  int depth = 0;
  int deepest = 0;
  bool Open() {
    deepest = std::max(deepest, ++depth);
    return true;
  }
  bool Close() {
    --depth;
    return true;
  }
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return Open(); }
  bool key(string_t&) override { return true; }
  bool end_object() override { return Close(); }
  bool start_array(std::size_t) override { return Open(); }
  bool end_array() override { return Close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }
};

int TextDepth(const std::string& text) {
  DepthCounter counter;
  return json::sax_parse(text, &counter) ? counter.deepest : -1;
}

// Depth and entries of a built value, without recursion.
std::pair<int, std::size_t> Shape(const json& root) {
  int depth = 0;
  std::size_t entries = 0;
  std::vector<std::pair<const json*, int>> todo{{&root, 0}};
  while (!todo.empty()) {
    auto [v, level] = todo.back();
    todo.pop_back();
    if (!v->is_structured()) continue;
    depth = std::max(depth, level + 1);
    entries += v->size();
    for (const auto& child : *v) todo.emplace_back(&child, level + 1);
  }
  return {depth, entries};
}

// 0xFF, then: shape bits (1 array/object, 2 long, 4 closed), count (2
// bytes, big-endian), then filler appended as is.
std::string Build(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return {};
  const char open = data[1] & 1 ? '[' : '{';
  const std::size_t count = std::size_t(data[2]) << 8 | data[3];  // up to 65535
  std::string out;
  if (data[1] & 2) {  // long: [0,0,0,...]
    out = "[";
    for (std::size_t i = 0; i < count; ++i) out += i ? ",0" : "0";
    out += "]";
  } else if (open == '[') {
    out.assign(count, '[');
    if (data[1] & 4) out.append(count, ']');  // valid, or left unclosed
  } else {
    for (std::size_t i = 0; i < count; ++i) out += "{\"a\":";
    out += "1";
    if (data[1] & 4) out.append(count, '}');
  }
  out.append(reinterpret_cast<const char*>(data) + 4, size - 4);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text = size > 0 && data[0] == 0xFF
                         ? Build(data, size)
                         : std::string(reinterpret_cast<const char*>(data), size);
  const JsonLimits limits{8, 64};
  auto bounded = sluice::common::ParseBoundedJson(text, limits);
  auto violation = sluice::common::JsonShapeViolation(text, limits);
  // nlohmann builds even very deep values without recursion; only the
  // shape walk below looks at them, iteratively. (Destroying is iterative
  // in nlohmann >= 3.10.)
  // nlohmann reads a NUL byte as the end of input; JSON has no raw NUL, so
  // such a text counts as refused.
  json plain = text.find('\0') == std::string::npos ? json::parse(text, nullptr, false)
                                                     : json(json::value_t::discarded);
  if (bounded.ok()) {
    if (violation) Bug("parsed although the shape check refused", text);
    if (plain.is_discarded()) Bug("parsed what nlohmann refuses", text);
    auto [depth, entries] = Shape(*bounded);
    if (depth > limits.max_depth) Bug("returned a value past the depth limit", text);
    if (entries > limits.max_entries) Bug("returned a value past the entries limit", text);
    if (*bounded != plain) Bug("returned another value than nlohmann", text);
    (void)bounded->dump();  // what handlers do next; recursion is bounded now
    return 0;
  }
  if (violation) {
    // A refusal for a limit: the text, if JSON, really breaks one. Duplicate
    // keys make the built object smaller than the text (a dropped member may
    // hold the deepest level), so depth is read off the text by SAX and
    // entries are checked one way only.
    if (!plain.is_discarded() && violation->find("depth") != std::string::npos &&
        TextDepth(text) <= limits.max_depth)
      Bug("refused for depth a text within it", text);
    return 0;
  }
  if (!plain.is_discarded()) Bug("refused valid JSON within the limits", text);
  return 0;
}
