#!/usr/bin/env node
// Renders the Kubernetes manifests of a Sluice deployment from a values file
// (no Helm binary is needed): the serve Deployment, its Service, ConfigMap,
// Secrets, ServiceAccounts, the least-privilege Role the launcher needs in
// the workers' namespace, and a PodDisruptionBudget.
//
//   node deploy/kubernetes/render.mjs [values.json] [out-dir]
//
// Defaults: deploy/kubernetes/values.json, and stdout (one multi-document
// YAML stream). With out-dir, one file per object plus all.yaml.
// `renderManifests(values)` is exported for the tests.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

// ---- a small YAML emitter: block maps and lists, JSON-quoted strings ----
function scalar(v) {
  if (v === null || v === undefined) return "null";
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return JSON.stringify(String(v)); // a YAML double-quoted string
}
function yaml(v, indent = 0) {
  const pad = " ".repeat(indent);
  if (Array.isArray(v)) {
    if (v.length === 0) return "[]";
    return v
      .map((item) => {
        if (item !== null && typeof item === "object" && Object.keys(item).length > 0) {
          const body = yaml(item, indent + 2);
          return `${pad}- ${body.slice(indent + 2)}`;
        }
        return `${pad}- ${yaml(item, indent + 2)}`;
      })
      .join("\n");
  }
  if (v !== null && typeof v === "object") {
    const keys = Object.keys(v);
    if (keys.length === 0) return "{}";
    return keys
      .map((k) => {
        const val = v[k];
        if (val !== null && typeof val === "object" && (Array.isArray(val) ? val.length : Object.keys(val).length)) {
          return `${pad}${key(k)}:\n${yaml(val, indent + 2)}`;
        }
        return `${pad}${key(k)}: ${yaml(val, indent + 2)}`;
      })
      .join("\n");
  }
  return scalar(v);
}
function key(k) {
  return /^[A-Za-z_][A-Za-z0-9_.\/-]*$/.test(k) ? k : JSON.stringify(k);
}
export function toYaml(docs) {
  return docs.map((d) => "---\n" + yaml(d) + "\n").join("");
}

// ---- the objects ----
const b64 = (s) => Buffer.from(String(s), "utf8").toString("base64");

// The verbs KubernetesPodLauncher and LoaderJobs use (runtime/kubernetes_client.h):
// server-side apply is a PATCH (create when absent), stop is DELETE, adoption
// lists by label. Nothing reads pods, logs or anything cluster-wide.
export const LAUNCHER_RULES = [
  { apiGroups: ["apps"], resources: ["deployments"], verbs: ["list", "create", "patch", "delete"] },
  { apiGroups: ["batch"], resources: ["jobs"], verbs: ["list", "create", "patch", "delete"] },
  { apiGroups: [""], resources: ["secrets"], verbs: ["create", "patch", "delete"] },
];

export function renderManifests(values) {
  const v = values;
  const ns = v.namespace;
  const wns = v.workersNamespace;
  const s = v.serve;
  const labels = { "app.kubernetes.io/name": "sluice", "app.kubernetes.io/component": "serve" };
  const backendUrl = `http://${s.serviceName}.${ns}.svc.cluster.local:${s.apiPort}`;
  const pgCa = "/etc/sluice/postgres/ca.crt";
  const sep = v.postgres.url.includes("?") ? "&" : "?";
  const databaseUrl = `${v.postgres.url}${sep}sslmode=${v.postgres.sslmode}&sslrootcert=${pgCa}`;
  const kafkaEnv = {
    bootstrap_servers: v.kafka.bootstrapServers,
    security_protocol: v.kafka.securityProtocol,
    sasl_mechanism: v.kafka.saslMechanism,
    sasl_username: v.kafka.saslUsername,
    sasl_password: v.kafka.saslPassword,
    ssl_ca_pem: v.kafka.caPem,
  };
  const args = [
    "serve",
    "--listen", `0.0.0.0:${s.apiPort}`,
    "--registry-listen", `0.0.0.0:${s.registryPort}`,
    "--data-dir", "/var/lib/sluice",
    "--launcher", "kubernetes",
    "--backend-url", backendUrl,
    "--k8s-namespace", wns,
    "--k8s-image", v.image,
    "--k8s-service-account", v.workers.serviceAccount,
    "--backfill-source-cap", String(s.backfillSourceCap),
    "--backfill-destination-cap", String(s.backfillDestinationCap),
  ];
  const secretEnv = (name, key) => ({ name, valueFrom: { secretKeyRef: { name: "sluice-serve", key } } });
  const docs = [];
  docs.push({
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: s.serviceAccount, namespace: ns, labels },
  });
  // Worker pods and loader Jobs: no API access at all.
  docs.push({
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: v.workers.serviceAccount, namespace: wns, labels: { "app.kubernetes.io/name": "sluice", "app.kubernetes.io/component": "worker" } },
    automountServiceAccountToken: false,
  });
  docs.push({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: { name: "sluice-launcher", namespace: wns, labels },
    rules: LAUNCHER_RULES,
  });
  docs.push({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: { name: "sluice-launcher", namespace: wns, labels },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "sluice-launcher" },
    subjects: [{ kind: "ServiceAccount", name: s.serviceAccount, namespace: ns }],
  });
  docs.push({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "sluice-serve", namespace: ns, labels },
    data: {
      SLUICE_CONTROL_PLANE_URL: s.controlPlaneUrl || "",
      "postgres-ca.crt": v.postgres.caPem,
    },
  });
  docs.push({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "sluice-serve", namespace: ns, labels },
    type: "Opaque",
    data: {
      "database-url": b64(databaseUrl),
      "secret-key": b64(v.keys.secretKeyHex),
      "config-key": b64(v.keys.configKeyHex),
    },
  });
  docs.push({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "sluice-kafka-env", namespace: ns, labels },
    type: "Opaque",
    data: { "retention_configuration.json": b64(JSON.stringify(kafkaEnv, null, 2)) },
  });
  docs.push({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "sluice-serve", namespace: ns, labels },
    spec: {
      replicas: s.replicas,
      selector: { matchLabels: labels },
      strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName: s.serviceAccount,
          securityContext: { runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001, fsGroup: 10001, seccompProfile: { type: "RuntimeDefault" } },
          // A killed replica's leadership frees with its database session;
          // 30 s lets a clean stop hand it over without a wait.
          terminationGracePeriodSeconds: 30,
          containers: [
            {
              name: "serve",
              image: v.image,
              imagePullPolicy: v.imagePullPolicy,
              args,
              ports: [
                { name: "api", containerPort: s.apiPort, protocol: "TCP" },
                { name: "registry", containerPort: s.registryPort, protocol: "TCP" },
              ],
              env: [
                secretEnv("SLUICE_DATABASE_URL", "database-url"),
                secretEnv("SLUICE_SECRET_KEY", "secret-key"),
                secretEnv("SLUICE_CONFIG_KEY", "config-key"),
                { name: "SLUICE_CONTROL_PLANE_URL", valueFrom: { configMapKeyRef: { name: "sluice-serve", key: "SLUICE_CONTROL_PLANE_URL" } } },
              ],
              livenessProbe: {
                httpGet: { path: "/api/v1/health", port: "api" },
                initialDelaySeconds: 10, periodSeconds: 10, timeoutSeconds: 3, failureThreshold: 3,
              },
              readinessProbe: {
                httpGet: { path: "/api/v1/health/ready", port: "api" },
                periodSeconds: 5, timeoutSeconds: 3, failureThreshold: 2,
              },
              resources: s.resources,
              securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } },
              volumeMounts: [
                { name: "data", mountPath: "/var/lib/sluice" },
                { name: "postgres-ca", mountPath: "/etc/sluice/postgres", readOnly: true },
              ],
            },
          ],
          volumes: [
            // Launch files of local pre-checks and their logs; nothing durable.
            { name: "data", emptyDir: {} },
            { name: "postgres-ca", configMap: { name: "sluice-serve", items: [{ key: "postgres-ca.crt", path: "ca.crt" }] } },
          ],
        },
      },
    },
  });
  docs.push({
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: s.serviceName, namespace: ns, labels },
    spec: {
      selector: labels,
      ports: [
        { name: "api", port: s.apiPort, targetPort: "api", protocol: "TCP" },
        { name: "registry", port: s.registryPort, targetPort: "registry", protocol: "TCP" },
      ],
    },
  });
  docs.push({
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: { name: "sluice-serve", namespace: ns, labels },
    spec: { minAvailable: v.podDisruptionBudget.minAvailable, selector: { matchLabels: labels } },
  });
  return docs;
}

function main() {
  const valuesPath = process.argv[2] || path.join(here, "values.json");
  const out = process.argv[3];
  const values = JSON.parse(fs.readFileSync(valuesPath, "utf8"));
  const docs = renderManifests(values);
  const unfilled = JSON.stringify(values).includes("REPLACE_ME");
  if (unfilled) process.stderr.write("render: some values are REPLACE_ME placeholders; fill them before applying\n");
  if (!out) {
    process.stdout.write(toYaml(docs));
    return;
  }
  fs.mkdirSync(out, { recursive: true });
  for (const d of docs) {
    const file = `${d.kind.toLowerCase()}-${d.metadata.namespace}-${d.metadata.name}.yaml`;
    fs.writeFileSync(path.join(out, file), toYaml([d]));
  }
  fs.writeFileSync(path.join(out, "all.yaml"), toYaml(docs));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
