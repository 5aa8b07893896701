// simdjson's on-demand parser reads a few bytes past the end of its input,
// which neither a std::string nor a Kafka message promises: the text is
// copied into a padded buffer this object keeps, and iterated from there.
// One per thread (thread_local) serves every document that thread reads.
#pragma once

#include <simdjson.h>

#include <string>
#include <string_view>

namespace sluice::common {

class PaddedJson {
 public:
  // Starts iterating `text`; null when simdjson refuses it. The document,
  // and every view into it, lives until the next Iterate.
  simdjson::ondemand::document* Iterate(std::string_view text) {
    text_ = text;
    padded_.reserve(text.size() + simdjson::SIMDJSON_PADDING);
    padded_.assign(text);
    if (parser_.iterate(padded_.data(), padded_.size(), padded_.capacity()).get(doc_))
      return nullptr;
    return &doc_;
  }

  // The same bytes as `in_copy` (a view into the iterated copy, such as a
  // raw_json()), as a view into the text that was passed to Iterate.
  std::string_view InText(std::string_view in_copy) const {
    return text_.substr(static_cast<std::size_t>(in_copy.data() - padded_.data()), in_copy.size());
  }

 private:
  simdjson::ondemand::parser parser_;
  std::string padded_;
  std::string_view text_;
  simdjson::ondemand::document doc_;
};

}  // namespace sluice::common
