// `sluice connector create|list|get|delete`: the connectors API from a shell.
// Tables by default, the API's JSON with --json.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include <httplib.h>

#include "cli/api_client.h"
#include "cli/command_registry.h"

namespace {

using nlohmann::json;

struct ConnectorFlags {
  bool as_json = false;
  std::string team, name, type, config, config_file, id, way;
};

const std::vector<std::string> kConnectorColumns = {"id", "name", "type", "way", "updated_at"};

int PrintConnectors(const std::optional<json>& out, bool as_json, bool list) {
  if (!out) return 1;
  if (as_json) {
    std::printf("%s\n", out->dump(2).c_str());
  } else if (list) {
    sluice::cli::PrintTable((*out)["items"], kConnectorColumns);
  } else if (out->is_object()) {
    sluice::cli::PrintTable(json::array({*out}), kConnectorColumns);
    if (out->contains("configuration")) {
      std::printf("configuration: %s\n", (*out)["configuration"].dump(2).c_str());
    }
  }
  return 0;
}

int CreateConnector(const ConnectorFlags& f) {
  std::string text = f.config;
  if (!f.config_file.empty()) {
    std::ifstream in(f.config_file);
    std::stringstream s;
    s << in.rdbuf();
    text = s.str();
  }
  json config = text.empty() ? json::object() : json::parse(text, nullptr, false);
  if (!config.is_object()) {
    std::fprintf(stderr, "sluice connector create: --config must be a JSON object\n");
    return 2;
  }
  return PrintConnectors(
      sluice::cli::CallOrReport("POST", "/api/v1/teams/" + f.team + "/connectors",
                                {{"name", f.name}, {"type", f.type}, {"configuration", config}}),
      f.as_json, false);
}

std::string Query(const ConnectorFlags& f) {
  std::string q;
  if (!f.name.empty()) q += "name=" + httplib::detail::encode_query_param(f.name);
  if (!f.way.empty()) q += std::string(q.empty() ? "" : "&") + "way=" + f.way;
  return q.empty() ? "" : "?" + q;
}

sluice::cli::RegisterCommand connector_registration([](CLI::App& root) {
  auto f = std::make_shared<ConnectorFlags>();
  auto* cmd = root.add_subcommand("connector", "Manage connectors through the API");
  cmd->require_subcommand(1);
  cmd->add_flag("--json", f->as_json, "Print the API's JSON");
  auto* create = cmd->add_subcommand("create", "Create a connector");
  create->add_option("--team", f->team, "Team id")->required();
  create->add_option("--name", f->name, "Connector name")->required();
  create->add_option("--type", f->type, "Type id, e.g. postgresql-source")->required();
  create->add_option("--config", f->config, "Configuration as JSON");
  create->add_option("--config-file", f->config_file, "Configuration JSON file");
  create->callback([f] { sluice::cli::ExitCode() = CreateConnector(*f); });
  auto* list = cmd->add_subcommand("list", "List a team's connectors");
  list->add_option("--team", f->team, "Team id")->required();
  list->add_option("--name", f->name, "Case-insensitive name filter");
  list->add_option("--way", f->way, "source or target");
  list->callback([f] {
    sluice::cli::ExitCode() = PrintConnectors(
        sluice::cli::CallOrReport("GET", "/api/v1/teams/" + f->team + "/connectors" + Query(*f)),
        f->as_json, true);
  });
  auto* get = cmd->add_subcommand("get", "Show a connector (secrets redacted)");
  get->add_option("id", f->id, "Connector id")->required();
  get->callback([f] {
    sluice::cli::ExitCode() = PrintConnectors(
        sluice::cli::CallOrReport("GET", "/api/v1/connectors/" + f->id), f->as_json, false);
  });
  auto* del = cmd->add_subcommand("delete", "Delete a connector");
  del->add_option("id", f->id, "Connector id")->required();
  del->callback([f] {
    bool ok = sluice::cli::CallOrReport("DELETE", "/api/v1/connectors/" + f->id).has_value();
    if (ok && !f->as_json) std::printf("deleted %s\n", f->id.c_str());
    sluice::cli::ExitCode() = ok ? 0 : 1;
  });
  auto* types = cmd->add_subcommand("types", "List connector types");
  types->callback([f] {
    auto out = sluice::cli::CallOrReport("GET", "/api/v1/connector-types");
    if (out && !f->as_json) {
      sluice::cli::PrintTable((*out)["items"], {"id", "way", "title"});
      return;
    }
    sluice::cli::ExitCode() = PrintConnectors(out, true, false);
  });
});

}  // namespace
