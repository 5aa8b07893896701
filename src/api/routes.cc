#include "api/routes.h"

namespace sluice::api {

void RegisterBuiltinRoutes(Router& r, ApiContext& ctx) {
  RegisterAuthRoutes(r, ctx);
  RegisterUsersRoutes(r, ctx);
  RegisterEnvsRoutes(r, ctx);
  RegisterTeamsRoutes(r, ctx);
  RegisterRequestsRoutes(r, ctx);
  RegisterServiceAccountsRoutes(r, ctx);
  RegisterUserLogRoutes(r, ctx);
  RegisterSyncRoutes(r, ctx);
  RegisterConnectorsRoutes(r, ctx);
  RegisterDatamodelsRoutes(r, ctx);
  RegisterPipelinesRoutes(r, ctx);
  RegisterSubscriptionsRoutes(r, ctx);
  RegisterWarehousesRoutes(r, ctx);
  RegisterWorkspaceRoutes(r, ctx);
  RegisterTasksRoutes(r, ctx);
  RegisterWizardRoutes(r, ctx);
  RegisterWorkersRoutes(r, ctx);
  RegisterLicenseRoutes(r, ctx);
  RegisterWorkerProtocolRoutes(r, ctx);
  RegisterBackfillsRoutes(r, ctx);
  RegisterLoaderProtocolRoutes(r, ctx);
  RegisterMonitoringRoutes(r, ctx);
  RegisterMetricsRoutes(r, ctx);
  RegisterOpenApiRoutes(r, ctx);  // last: documents everything registered before it
}

}  // namespace sluice::api
