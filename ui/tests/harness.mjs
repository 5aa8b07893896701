// Test harness for the browser tests: a real `sluice up` (broker, API + UI,
// orchestrator, workers) over a fresh database on the ctest "pg" fixture
// cluster, source/target databases beside it, and Debian's chromium driven
// by playwright-core.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, mkdirSync, existsSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { randomBytes } from "node:crypto";

const here = path.dirname(fileURLToPath(import.meta.url));
export const repo = path.resolve(here, "..", "..");

export function requireEnv(name, fallback) {
  const v = process.env[name] ?? fallback;
  if (!v) throw new Error(`${name} is not set (run through ctest: ctest -R 'pg_cluster|ui_browser')`);
  return v;
}

export const sluiceBin = () => requireEnv("SLUICE_BIN", existsSync(path.join(repo, "build/sluice")) ? path.join(repo, "build/sluice") : undefined);
export const artifacts = () => {
  const dir = process.env.SLUICE_UI_ARTIFACTS ?? path.join(repo, "build", "ui-artifacts");
  mkdirSync(dir, { recursive: true });
  return dir;
};

export function pgPort() {
  const dir = requireEnv("SLUICE_TEST_PG_DIR");
  return Number(readFileSync(path.join(dir, "port"), "utf8").trim());
}

// The test cluster checks passwords (SCRAM): the superuser's is in its pgpass.
export function pgPassword() {
  const dir = requireEnv("SLUICE_TEST_PG_DIR");
  const line = readFileSync(path.join(dir, "pgpass"), "utf8").split("\n").find((l) => l.startsWith("*:*:*:postgres:"));
  if (!line) throw new Error(`no superuser password in ${dir}/pgpass`);
  return line.slice("*:*:*:postgres:".length);
}

export function pgUrl(db) {
  return `postgresql://postgres:${pgPassword()}@127.0.0.1:${pgPort()}/${db}`;
}

export function psql(db, sql) {
  return execFileSync("psql", ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", String(pgPort()), "-U", "postgres", "-d", db, "-c", sql], {
    encoding: "utf8",
    env: { ...process.env, PGPASSWORD: pgPassword() },
  }).trim();
}

export function createDatabase(prefix) {
  const name = `${prefix}_${randomBytes(4).toString("hex")}`;
  psql("postgres", `CREATE DATABASE ${name}`);
  return name;
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// Starts `sluice up` and resolves once the API answers; `stop()` sends
// SIGTERM and waits for it to exit.
export async function startSluice({ databaseUrl, email, password }) {
  const dataDir = mkdtempSync(path.join(tmpdir(), "sluice-ui-"));
  const [api, registry, broker] = [await freePort(), await freePort(), await freePort()];
  const uiDir = process.env.SLUICE_UI_DIR ?? path.join(repo, "ui", "dist");
  if (!existsSync(path.join(uiDir, "index.html"))) throw new Error(`no built UI in ${uiDir}: run npm ci && npm run build in ui/`);
  const child = spawn(
    sluiceBin(),
    ["up", "--data-dir", dataDir, "--listen", `127.0.0.1:${api}`, "--registry-listen", `127.0.0.1:${registry}`, "--broker-listen", `127.0.0.1:${broker}`, "--ui-dir", uiDir],
    {
      env: { ...process.env, SLUICE_DATABASE_URL: databaseUrl, SLUICE_SUPERUSER_EMAIL: email, SLUICE_SUPERUSER_PASSWORD: password },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let log = "";
  child.stdout.on("data", (d) => (log += d));
  child.stderr.on("data", (d) => (log += d));
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  const base = `http://127.0.0.1:${api}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`sluice up exited early:\n${log}`);
    try {
      const r = await fetch(`${base}/api/v1/health`);
      if (r.ok && log.includes("sluice is up")) break;
    } catch {
      /* not yet */
    }
    if (Date.now() > deadline) throw new Error(`sluice up did not come up in 60 s:\n${log}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    base,
    broker: `127.0.0.1:${broker}`,
    log: () => log,
    async stop() {
      if (child.exitCode === null) child.kill("SIGTERM");
      const t = setTimeout(() => child.kill("SIGKILL"), 60_000); // workers get 30 s to stop
      const r = await exited;
      clearTimeout(t);
      return r;
    },
  };
}

// A tiny API client for setup steps the UI does not own (a second user).
export async function apiCall(base, token, method, p, body) {
  const r = await fetch(`${base}/api/v1${p}`, {
    method,
    headers: { "Content-Type": "application/json", ...(token ? { Authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  if (!r.ok) throw new Error(`${method} ${p}: ${r.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

export async function launchBrowser() {
  let chromium;
  try {
    ({ chromium } = await import("playwright-core"));
  } catch {
    throw new Error("playwright-core is not installed: run bash scripts/build-ui.sh (npm ci in ui/)");
  }
  if (!existsSync(process.env.CHROMIUM ?? "/usr/bin/chromium")) throw new Error("no /usr/bin/chromium: run bash scripts/setup.sh (apt-get install chromium)");
  const profile = mkdtempSync(path.join(tmpdir(), "sluice-ui-chromium-"));
  return chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1360, height: 900 },
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}
