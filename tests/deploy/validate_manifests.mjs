// The rendered deploy/kubernetes manifests, checked offline:
//   1. every object validates against the Kubernetes OpenAPI schema of its
//      kind (kubernetes-models), and a deliberately broken copy does not;
//   2. what serve is told (--k8s-namespace, --k8s-image,
//      --k8s-service-account, --backend-url) names objects the manifests
//      create: the Role and the workers' ServiceAccount live in that
//      namespace, the image is serve's own, the backend URL is the Service;
//   3. the Role grants exactly the verbs the launcher uses, bound to serve's
//      ServiceAccount, and nothing cluster-wide;
//   4. every flag the Deployment passes is one `sluice serve --help` knows,
//      and both probe paths are routes serve answers (checked live by the
//      C++ access test; here against the OpenAPI document's paths).
// Run: node tests/deploy/validate_manifests.mjs (SLUICE_BIN for check 4).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const { renderManifests, toYaml, LAUNCHER_RULES } = await import(
  path.join(root, "deploy/kubernetes/render.mjs")
);

const models = {
  "v1/ServiceAccount": ["kubernetes-models/v1/ServiceAccount", "ServiceAccount"],
  "v1/ConfigMap": ["kubernetes-models/v1/ConfigMap", "ConfigMap"],
  "v1/Secret": ["kubernetes-models/v1/Secret", "Secret"],
  "v1/Service": ["kubernetes-models/v1/Service", "Service"],
  "apps/v1/Deployment": ["kubernetes-models/apps/v1/Deployment", "Deployment"],
  "rbac.authorization.k8s.io/v1/Role": ["kubernetes-models/rbac.authorization.k8s.io/v1/Role", "Role"],
  "rbac.authorization.k8s.io/v1/RoleBinding": [
    "kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding",
    "RoleBinding",
  ],
  "policy/v1/PodDisruptionBudget": [
    "kubernetes-models/policy/v1/PodDisruptionBudget",
    "PodDisruptionBudget",
  ],
};
async function validate(doc) {
  const entry = models[`${doc.apiVersion}/${doc.kind}`];
  if (!entry) throw new Error(`no schema known for ${doc.apiVersion} ${doc.kind}`);
  const mod = await import(entry[0]);
  new mod[entry[1]](doc).validate(); // throws with the failing path
}

let failures = 0;
async function check(name, fn) {
  try {
    await fn();
    console.log(`ok   ${name}`);
  } catch (e) {
    failures++;
    console.log(`FAIL ${name}\n     ${String(e.message).split("\n").join("\n     ")}`);
  }
}

const values = JSON.parse(fs.readFileSync(path.join(root, "deploy/kubernetes/values.json"), "utf8"));
const docs = renderManifests(values);
const find = (kind, name) => docs.find((d) => d.kind === kind && d.metadata.name === name);
const deployment = find("Deployment", "sluice-serve");
const container = deployment.spec.template.spec.containers[0];
const flag = (name) => {
  const i = container.args.indexOf(name);
  assert.ok(i >= 0, `serve is not passed ${name}`);
  return container.args[i + 1];
};

await check("every object validates against its Kubernetes schema", async () => {
  const kinds = docs.map((d) => d.kind).sort();
  assert.deepEqual(kinds, [
    "ConfigMap", "Deployment", "PodDisruptionBudget", "Role", "RoleBinding", "Secret", "Secret",
    "Service", "ServiceAccount", "ServiceAccount",
  ]);
  for (const d of docs) await validate(d);
});

await check("a broken manifest fails the schema (the validator can fail)", async () => {
  const broken = structuredClone(deployment);
  broken.spec.template.spec.containers[0].ports[0].containerPort = "eighty";
  await assert.rejects(async () => validate(broken), /containerPort/);
  const noName = structuredClone(find("Role", "sluice-launcher"));
  noName.rules[0].verbs = "list";
  await assert.rejects(async () => validate(noName));
});

await check("the YAML stream round-trips to the same objects", async () => {
  const text = toYaml(docs);
  assert.equal(text.split("\n---\n").length + (text.startsWith("---\n") ? 0 : 1), docs.length);
  // The emitter writes JSON-quoted scalars: each document parses back with
  // Python's yaml when it is there (Debian python3-yaml); skipped otherwise.
  try {
    const out = execFileSync(
      "/usr/bin/python3",
      ["-c", "import sys, json, yaml; print(json.dumps(list(yaml.safe_load_all(sys.stdin))))"],
      { input: text, stdio: ["pipe", "pipe", "ignore"] },
    );
    assert.deepEqual(JSON.parse(out), JSON.parse(JSON.stringify(docs)));
  } catch (e) {
    if (e.code === "ERR_ASSERTION") throw e;
    if (!/No module named/.test(String(e.stderr || "")) && e.status !== 1) throw e;
  }
});

await check("serve's launcher flags name what the manifests create", async () => {
  const wns = flag("--k8s-namespace");
  const image = flag("--k8s-image");
  const workerSa = flag("--k8s-service-account");
  assert.equal(image, container.image, "workers and loader Jobs run serve's own image");
  assert.equal(flag("--launcher"), "kubernetes");
  const sa = find("ServiceAccount", workerSa);
  assert.ok(sa, `no ServiceAccount ${workerSa}`);
  assert.equal(sa.metadata.namespace, wns, "the workers' ServiceAccount is in the workers' namespace");
  assert.equal(sa.automountServiceAccountToken, false, "worker pods get no API token");
  const role = find("Role", "sluice-launcher");
  const binding = find("RoleBinding", "sluice-launcher");
  assert.equal(role.metadata.namespace, wns);
  assert.equal(binding.metadata.namespace, wns);
  const serveSa = deployment.spec.template.spec.serviceAccountName;
  assert.deepEqual(binding.subjects, [
    { kind: "ServiceAccount", name: serveSa, namespace: deployment.metadata.namespace },
  ]);
  assert.ok(find("ServiceAccount", serveSa), `no ServiceAccount ${serveSa}`);
  // Workers and loader Jobs reach the back end through the Service.
  const url = new URL(flag("--backend-url"));
  const svc = docs.find((d) => d.kind === "Service");
  assert.equal(url.hostname, `${svc.metadata.name}.${svc.metadata.namespace}.svc.cluster.local`);
  assert.ok(svc.spec.ports.some((p) => String(p.port) === url.port && p.targetPort === "api"));
  assert.deepEqual(svc.spec.selector, deployment.spec.selector.matchLabels);
});

await check("the Role grants only what the launcher calls", async () => {
  const role = find("Role", "sluice-launcher");
  assert.deepEqual(role.rules, LAUNCHER_RULES);
  for (const r of role.rules) {
    assert.ok(!r.verbs.includes("*") && !r.resources.includes("*"), "no wildcards");
    assert.ok(!r.verbs.includes("get") || r.resources[0] !== "secrets", "no reading Secrets");
  }
  assert.ok(!docs.some((d) => d.kind.startsWith("Cluster")), "nothing cluster-wide");
  // The launcher's own source names these calls: keep the two in step.
  const src = (f) => fs.readFileSync(path.join(root, f), "utf8");
  const pods = src("src/runtime/kubernetes_pod_launcher.cc");
  const jobs = src("src/backfill/kubernetes_jobs.cc");
  assert.match(pods, /client_\.List\("apps\/v1", "Deployment"/);
  assert.match(pods, /client_\.Delete\("apps\/v1", "Deployment"/);
  assert.match(pods, /client_\.Delete\("v1", "Secret"/);
  assert.match(jobs, /client_\.List\("batch\/v1", "Job"/);
  assert.match(jobs, /client_\.Delete\("batch\/v1", "Job"/);
  const calls = (pods + jobs).match(/client_\.(\w+)\(/g).map((c) => c.slice(8, -1));
  assert.deepEqual([...new Set(calls)].sort(), ["Apply", "Delete", "List"]);
});

await check("probes, security and availability", async () => {
  assert.equal(container.livenessProbe.httpGet.path, "/api/v1/health");
  assert.equal(container.readinessProbe.httpGet.path, "/api/v1/health/ready");
  const openapi = fs.readFileSync(path.join(root, "src/api/openapi.cc"), "utf8");
  assert.match(openapi, /"\/health", "Liveness"/);
  assert.match(openapi, /"\/health\/ready", "Readiness/);
  assert.equal(deployment.spec.replicas, 2);
  const pdb = docs.find((d) => d.kind === "PodDisruptionBudget");
  assert.deepEqual(pdb.spec.selector.matchLabels, deployment.spec.selector.matchLabels);
  assert.ok(pdb.spec.minAvailable >= 1 && pdb.spec.minAvailable < deployment.spec.replicas);
  const sec = deployment.spec.template.spec.securityContext;
  assert.equal(sec.runAsNonRoot, true);
  assert.equal(sec.runAsUser, 10001, "the image's user (Dockerfile)");
  assert.match(fs.readFileSync(path.join(root, "Dockerfile"), "utf8"), /USER 10001:10001/);
});

await check("external PostgreSQL and Kafka: TLS verified against a CA, SASL_SSL", async () => {
  const secret = find("Secret", "sluice-serve");
  const url = Buffer.from(secret.data["database-url"], "base64").toString();
  assert.match(url, /sslmode=verify-full/);
  assert.match(url, /sslrootcert=\/etc\/sluice\/postgres\/ca\.crt/);
  const mount = container.volumeMounts.find((m) => m.mountPath === "/etc/sluice/postgres");
  assert.ok(mount, "the PostgreSQL CA is mounted where the URL says");
  const env = JSON.parse(
    Buffer.from(find("Secret", "sluice-kafka-env").data["retention_configuration.json"], "base64"),
  );
  assert.equal(env.security_protocol, "sasl_ssl");
  assert.ok(env.ssl_ca_pem && env.sasl_username && env.sasl_password && env.sasl_mechanism);
  // The keys kafka::ClientConfig::FromJson reads.
  const cfg = fs.readFileSync(path.join(root, "src/kafka/client_config.cc"), "utf8");
  for (const k of Object.keys(env)) assert.ok(cfg.includes(`"${k}"`), `client_config reads no "${k}"`);
});

await check("every flag passed to serve exists", async () => {
  const bin = process.env.SLUICE_BIN;
  if (!bin) {
    console.log("     (SLUICE_BIN unset: skipped)");
    return;
  }
  const help = execFileSync(bin, ["serve", "--help"], { encoding: "utf8" });
  for (const a of container.args.filter((x) => x.startsWith("--")))
    assert.ok(help.includes(a), `sluice serve --help has no ${a}`);
});

if (failures) {
  console.log(`${failures} check(s) failed`);
  process.exit(1);
}
console.log("all manifest checks passed");
