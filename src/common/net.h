// Small socket helpers shared by servers and tests.
#pragma once

#include <string>

namespace sluice::common {

// A TCP port on 127.0.0.1 that was free a moment ago (bind to 0, read, close).
int PickFreePort();

// Splits "host:port"; returns false when the text is not of that form.
bool SplitHostPort(const std::string& text, std::string* host, int* port);

}  // namespace sluice::common
