// One function per Kafka API. Each decodes its request body from `in` and
// encodes the response body (after the response header) into `out`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "broker/acl.h"
#include "broker/broker.h"
#include "broker/protocol/wire.h"

namespace sluice::broker::handlers {

struct RequestContext {
  std::int16_t api_key = 0;
  std::int16_t api_version = 0;
  std::int32_t correlation_id = 0;
  std::string client_id;
  std::string client_host;
  // What the authenticated principal may do; nullptr: anything.
  std::shared_ptr<const Grant> grant;

  bool MayProduce(const std::string& topic) const { return !grant || grant->MayProduce(topic); }
  bool MayConsume(const std::string& topic) const { return !grant || grant->MayConsume(topic); }
  bool MayDescribe(const std::string& topic) const { return !grant || grant->MayDescribe(topic); }
  bool MayUseGroup(const std::string& group) const { return !grant || grant->MayUseGroup(group); }
  // Creating, deleting and growing topics.
  bool MayAdminister() const { return !grant || grant->admin; }
};

// Per-connection SASL progress.
struct Session {
  bool authenticated = false;
  bool handshake_done = false;
  std::string principal;
};

enum class Reply { kSend, kNone, kClose };

using protocol::Reader;
using protocol::Writer;

Reply ApiVersions(Broker&, const RequestContext&, Reader&, Writer&);
Reply Metadata(Broker&, const RequestContext&, Reader&, Writer&);
Reply Produce(Broker&, const RequestContext&, Reader&, Writer&);
Reply Fetch(Broker&, const RequestContext&, Reader&, Writer&);
Reply ListOffsets(Broker&, const RequestContext&, Reader&, Writer&);
Reply CreateTopics(Broker&, const RequestContext&, Reader&, Writer&);
Reply DeleteTopics(Broker&, const RequestContext&, Reader&, Writer&);
Reply CreatePartitions(Broker&, const RequestContext&, Reader&, Writer&);
Reply DescribeConfigs(Broker&, const RequestContext&, Reader&, Writer&);
Reply InitProducerId(Broker&, const RequestContext&, Reader&, Writer&);
Reply FindCoordinator(Broker&, const RequestContext&, Reader&, Writer&);
Reply JoinGroup(Broker&, const RequestContext&, Reader&, Writer&);
Reply SyncGroup(Broker&, const RequestContext&, Reader&, Writer&);
Reply Heartbeat(Broker&, const RequestContext&, Reader&, Writer&);
Reply LeaveGroup(Broker&, const RequestContext&, Reader&, Writer&);
Reply OffsetCommit(Broker&, const RequestContext&, Reader&, Writer&);
Reply OffsetFetch(Broker&, const RequestContext&, Reader&, Writer&);
Reply DescribeGroups(Broker&, const RequestContext&, Reader&, Writer&);
Reply ListGroups(Broker&, const RequestContext&, Reader&, Writer&);
Reply SaslHandshake(Broker&, const RequestContext&, Session&, Reader&, Writer&);
Reply SaslAuthenticate(Broker&, const RequestContext&, Session&, Reader&, Writer&);

}  // namespace sluice::broker::handlers
