// `sluice pipeline create|list|get|delete|wizard`: the pipelines API from a
// shell. Tables by default, the API's JSON with --json.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "cli/api_client.h"
#include "cli/command_registry.h"

namespace {

using nlohmann::json;

struct PipelineFlags {
  bool as_json = false;
  std::string team, name, source, target, datamodel, id, file;
  bool completed = false;
};

const std::vector<std::string> kPipelineColumns = {"id", "name", "version", "state", "updated_at"};

int PrintPipelines(const std::optional<json>& out, bool as_json, const json& rows) {
  if (!out) return 1;
  if (as_json) {
    std::printf("%s\n", out->dump(2).c_str());
  } else {
    sluice::cli::PrintTable(rows, kPipelineColumns);
  }
  return 0;
}

int CreatePipeline(const PipelineFlags& f) {
  json body = {{"name", f.name}, {"is_completed", f.completed}};
  if (!f.source.empty()) body["source_connector_id"] = f.source;
  if (!f.target.empty()) body["target_connector_id"] = f.target;
  if (!f.datamodel.empty()) body["datamodel_id"] = f.datamodel;
  auto out = sluice::cli::CallOrReport("POST", "/api/v1/teams/" + f.team + "/pipelines", body);
  return PrintPipelines(out, f.as_json, out ? json::array({*out}) : json::array());
}

int Wizard(const PipelineFlags& f) {
  std::ifstream in(f.file);
  std::stringstream s;
  s << in.rdbuf();
  json body = json::parse(s.str(), nullptr, false);
  if (!body.is_object()) {
    std::fprintf(stderr, "sluice pipeline wizard: %s is not a JSON object\n", f.file.c_str());
    return 2;
  }
  auto out =
      sluice::cli::CallOrReport("POST", "/api/v1/teams/" + f.team + "/pipeline-wizard", body);
  return PrintPipelines(out, f.as_json, out ? json::array({(*out)["pipeline"]}) : json::array());
}

sluice::cli::RegisterCommand pipeline_registration([](CLI::App& root) {
  auto f = std::make_shared<PipelineFlags>();
  auto* cmd = root.add_subcommand("pipeline", "Manage pipelines through the API");
  cmd->require_subcommand(1);
  cmd->add_flag("--json", f->as_json, "Print the API's JSON");
  auto* create = cmd->add_subcommand("create", "Create a pipeline");
  create->add_option("--team", f->team, "Team id")->required();
  create->add_option("--name", f->name, "Pipeline name")->required();
  create->add_option("--source", f->source, "Source connector id");
  create->add_option("--target", f->target, "Target connector id");
  create->add_option("--datamodel", f->datamodel, "Datamodel id");
  create->add_flag("--completed", f->completed, "Mark the configuration complete");
  create->callback([f] { sluice::cli::ExitCode() = CreatePipeline(*f); });
  auto* wizard =
      cmd->add_subcommand("wizard", "Create source, tables, target and pipeline at once");
  wizard->add_option("--team", f->team, "Team id")->required();
  wizard->add_option("--file", f->file, "Wizard request JSON")->required();
  wizard->callback([f] { sluice::cli::ExitCode() = Wizard(*f); });
  auto* list = cmd->add_subcommand("list", "List a team's pipelines");
  list->add_option("--team", f->team, "Team id")->required();
  list->callback([f] {
    auto out = sluice::cli::CallOrReport("GET", "/api/v1/teams/" + f->team + "/pipelines");
    sluice::cli::ExitCode() =
        PrintPipelines(out, f->as_json, out ? (*out)["items"] : json::array());
  });
  auto* get = cmd->add_subcommand("get", "Show a pipeline");
  get->add_option("id", f->id, "Pipeline id")->required();
  get->callback([f] {
    auto out = sluice::cli::CallOrReport("GET", "/api/v1/pipelines/" + f->id);
    sluice::cli::ExitCode() =
        PrintPipelines(out, f->as_json, out ? json::array({*out}) : json::array());
  });
  auto* del = cmd->add_subcommand("delete", "Delete a pipeline");
  del->add_option("id", f->id, "Pipeline id")->required();
  del->callback([f] {
    bool ok = sluice::cli::CallOrReport("DELETE", "/api/v1/pipelines/" + f->id).has_value();
    if (ok && !f->as_json) std::printf("deleted %s\n", f->id.c_str());
    sluice::cli::ExitCode() = ok ? 0 : 1;
  });
});

}  // namespace
