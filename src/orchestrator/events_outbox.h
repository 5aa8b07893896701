// The connector_events outbox of every environment: one publisher per env,
// each with its own cursor, its own producer and its own thread, publishing
// the env's resource events onto the env's topic (events/events_topic.h) on
// the env's broker (env.retention_configuration). An env whose broker is down
// holds back only its own events. The envs are re-read every `rescan`: a new
// env gets a publisher, an env whose broker settings changed gets a new
// producer, and a deleted env's publisher stops.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/periodic_task.h"
#include "common/status.h"
#include "common/uuid.h"
#include "events/outbox.h"
#include "store/database.h"

namespace sluice::orchestrator {

struct EventsOutboxOptions {
  std::chrono::milliseconds interval{2000};  // between two passes of one env's publisher
  std::chrono::milliseconds rescan{15000};   // between two reads of the env table
  // How long a pass waits for the broker to acknowledge a batch, and how long
  // one request may go unanswered before the producer resends it (same
  // producer id and sequence, which the broker deduplicates). A send is never
  // given up on: one the broker may still append later would land twice if
  // sent again. A batch not acknowledged by then is awaited by the next
  // passes, which send nothing before it resolves. Before each send the
  // publisher reads its topic back from the end and leaves out the
  // occurrences already there (a publisher acked and then killed before its
  // cursor commit), so each occurrence is on the topic once.
  std::chrono::milliseconds delivery_timeout{10000};
  // Grace, gap timeout and batch size of every env's publisher (its name and
  // env are set per env).
  events::OutboxOptions outbox;
};

class EventsOutbox {
 public:
  // Starts the rescan loop (whose first pass starts the publishers).
  EventsOutbox(store::Database& db, EventsOutboxOptions options = {});
  ~EventsOutbox();  // stops every publisher
  EventsOutbox(const EventsOutbox&) = delete;
  EventsOutbox& operator=(const EventsOutbox&) = delete;

  // Reads the envs and starts, restarts or stops publishers to match.
  common::Status Rescan();

  // The envs that have a running publisher (a broker setting that does not
  // parse leaves its env without one, logged).
  std::vector<common::Uuid> PublishingEnvs() const;

 private:
  struct EnvPublisher;

  store::Database& db_;
  EventsOutboxOptions options_;
  mutable std::mutex mu_;
  std::map<common::Uuid, std::unique_ptr<EnvPublisher>> envs_;
  std::unique_ptr<common::PeriodicTask> rescan_;  // last: stopped first
};

}  // namespace sluice::orchestrator
