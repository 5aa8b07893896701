#include "metrics/prometheus.h"

#include <fmt/format.h>

#include <cmath>
#include <set>

namespace sluice::metrics {

namespace {

bool ValidName(const std::string& name, bool allow_colon) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool alpha =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (allow_colon && c == ':');
    bool digit = c >= '0' && c <= '9';
    if (!(alpha || (i > 0 && digit))) return false;
  }
  return true;
}

std::string Escape(const std::string& s, bool quote) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quote && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15)
    return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{}", v);
}

}  // namespace

common::Result<std::string> RenderPrometheus(const std::vector<MetricFamily>& families) {
  std::string out;
  std::set<std::string> seen;
  for (const auto& f : families) {
    if (!ValidName(f.name, true)) {
      return common::InvalidArgument(fmt::format("invalid metric name '{}'", f.name));
    }
    if (!seen.insert(f.name).second) {
      return common::InvalidArgument(fmt::format("metric '{}' appears twice", f.name));
    }
    out += fmt::format("# HELP {} {}\n", f.name, Escape(f.help, false));
    out +=
        fmt::format("# TYPE {} {}\n", f.name, f.type == MetricType::kCounter ? "counter" : "gauge");
    for (const auto& s : f.samples) {
      out += f.name;
      if (!s.labels.empty()) {
        out += '{';
        for (std::size_t i = 0; i < s.labels.size(); ++i) {
          const auto& [k, v] = s.labels[i];
          if (!ValidName(k, false) || k.starts_with("__")) {
            return common::InvalidArgument(fmt::format("invalid label name '{}' on {}", k, f.name));
          }
          if (i) out += ',';
          out += fmt::format("{}=\"{}\"", k, Escape(v, true));
        }
        out += '}';
      }
      out += ' ';
      out += FormatValue(s.value);
      out += '\n';
    }
  }
  return out;
}

}  // namespace sluice::metrics
