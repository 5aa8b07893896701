// Checks a SASL/PLAIN token "[authzid] NUL authcid NUL passwd" against the
// configured users; returns the authenticated user name.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::broker {

common::Result<std::string> CheckPlainToken(std::string_view token,
                                            const std::map<std::string, std::string>& users);

}  // namespace sluice::broker
