#include "api/consumer_groups.h"

#include <mutex>

namespace sluice::api {
namespace {

std::mutex& Mu() {
  static std::mutex mu;
  return mu;
}
GroupResetter& Slot() {
  static GroupResetter r;
  return r;
}

}  // namespace

void SetGroupResetter(GroupResetter resetter) {
  std::lock_guard<std::mutex> lock(Mu());
  Slot() = std::move(resetter);
}

common::Status ResetConsumerGroup(const Json& broker, const std::string& group,
                                  const std::string& topic) {
  GroupResetter r;
  {
    std::lock_guard<std::mutex> lock(Mu());
    r = Slot();
  }
  if (!r) return common::Unavailable("no broker client installed in this server");
  return r(broker, group, topic);
}

}  // namespace sluice::api
