// Every API area registers its routes here; one function per area, each in
// its own <area>_handlers.cc.
#pragma once

#include "api/context.h"
#include "api/router.h"

namespace sluice::api {

void RegisterAuthRoutes(Router& r, ApiContext& ctx);
void RegisterUsersRoutes(Router& r, ApiContext& ctx);
void RegisterEnvsRoutes(Router& r, ApiContext& ctx);
void RegisterTeamsRoutes(Router& r, ApiContext& ctx);
void RegisterRequestsRoutes(Router& r, ApiContext& ctx);
void RegisterServiceAccountsRoutes(Router& r, ApiContext& ctx);
void RegisterUserLogRoutes(Router& r, ApiContext& ctx);
void RegisterSyncRoutes(Router& r, ApiContext& ctx);
void RegisterConnectorsRoutes(Router& r, ApiContext& ctx);
void RegisterDatamodelsRoutes(Router& r, ApiContext& ctx);
void RegisterPipelinesRoutes(Router& r, ApiContext& ctx);
void RegisterSubscriptionsRoutes(Router& r, ApiContext& ctx);
void RegisterWarehousesRoutes(Router& r, ApiContext& ctx);
void RegisterWorkspaceRoutes(Router& r, ApiContext& ctx);
void RegisterTasksRoutes(Router& r, ApiContext& ctx);
void RegisterWizardRoutes(Router& r, ApiContext& ctx);
void RegisterWorkersRoutes(Router& r, ApiContext& ctx);
void RegisterLicenseRoutes(Router& r, ApiContext& ctx);
void RegisterWorkerProtocolRoutes(Router& r, ApiContext& ctx);
void RegisterBackfillsRoutes(Router& r, ApiContext& ctx);
void RegisterLoaderProtocolRoutes(Router& r, ApiContext& ctx);
void RegisterMonitoringRoutes(Router& r, ApiContext& ctx);
void RegisterMetricsRoutes(Router& r, ApiContext& ctx);
void RegisterOpenApiRoutes(Router& r, ApiContext& ctx);

// All of the above, in order.
void RegisterBuiltinRoutes(Router& r, ApiContext& ctx);

inline constexpr const char* kApiPrefix = "/api/v1";

}  // namespace sluice::api
