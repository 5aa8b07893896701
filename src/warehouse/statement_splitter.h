// Splits a Workspace script into the statements sent to the warehouse one by
// one. A ';' ends a statement only outside quotes and comments, so
// 'a;b', "a;b", `a;b`, $tag$ ... ; ... $tag$, -- ; and /* ; */ stay whole.
// Statements holding nothing but whitespace and comments are dropped.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sluice::warehouse {

struct SplitOptions {
  // Databricks SQL escapes quotes inside '...' and "..." strings with a
  // backslash; PostgreSQL does so only in E'...' strings. Default: PostgreSQL.
  bool backslash_escapes = false;
};

// Every statement in script order, trimmed, without its terminating ';'.
std::vector<std::string> SplitStatements(std::string_view script, SplitOptions options = {});

}  // namespace sluice::warehouse
