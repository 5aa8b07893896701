// The web UI in a real browser against a real `sluice up`: log in, create an
// env and a team, invite a member, create a pipeline through the wizard and
// see it live (rows reach the target database), see an error event of a
// broken pipeline, read the metrics, run a workspace query, trigger a
// backfill. Screenshots of every page land in build/ui-artifacts/.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { apiCall, artifacts, createDatabase, launchBrowser, pgPassword, pgPort, pgUrl, psql, startSluice } from "./harness.mjs";

const EMAIL = "admin@ui.test";
const PASSWORD = "correct-horse-battery";
let sluice, browser, page, shots, paths, srcDb, dstDb;

async function shot(name) {
  await page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });
}

// Endpoints other areas add; a step whose API this build lacks is skipped, saying so.
function has(p) {
  return paths.has(p) || paths.has(`/api/v1${p}`);
}

// Waits for a locator; on timeout the failure carries what the page and
// sluice said, and a screenshot lands beside the others.
async function expectVisible(locator, what, timeout) {
  try {
    await locator.waitFor({ timeout });
  } catch (e) {
    await shot(`fail-${what.replace(/\W+/g, "-")}`).catch(() => {});
    const text = await page.locator("main").innerText().catch(() => "");
    throw new Error(`${what}: ${e.message.split("\n")[0]}\n--- page ---\n${text.slice(0, 3000)}\n--- sluice log ---\n${sluice.log().slice(-4000)}`);
  }
}

// One wizard connector step: a new PostgreSQL connector on the test cluster.
async function fillPostgres(way, name, database) {
  await page.getByLabel(`${way} name`).fill(name);
  await page.getByLabel("host", { exact: true }).fill("127.0.0.1");
  await page.getByLabel("port", { exact: true }).fill(String(pgPort()));
  await page.getByLabel("database", { exact: true }).fill(database);
  await page.getByLabel("user", { exact: true }).fill("postgres");
  await page.getByLabel("password", { exact: true }).fill(pgPassword());
}

async function waitForCount(db, sql, atLeast, ms) {
  const deadline = Date.now() + ms;
  let n = -1;
  while (Date.now() < deadline) {
    try {
      n = Number(psql(db, sql));
    } catch {
      n = -1;
    }
    if (n >= atLeast) return n;
    await new Promise((r) => setTimeout(r, 500));
  }
  return n;
}

describe("web UI", { timeout: 240_000 }, () => {
  before(async () => {
    shots = artifacts();
    const control = createDatabase("sluice_ui");
    srcDb = createDatabase("sluice_ui_src");
    dstDb = createDatabase("sluice_ui_dst");
    psql(
      srcDb,
      "CREATE TABLE public.customers (id bigserial PRIMARY KEY, name text NOT NULL, city text); " +
        "INSERT INTO public.customers (name, city) SELECT 'customer-' || g, 'city-' || (g % 7) FROM generate_series(1, 50) g",
    );
    sluice = await startSluice({ databaseUrl: pgUrl(control), email: EMAIL, password: PASSWORD });
    const openapi = await (await fetch(`${sluice.base}/api/v1/openapi.json`)).json();
    paths = new Set(Object.keys(openapi.paths ?? {}));
    browser = await launchBrowser();
    page = browser.pages()[0] ?? (await browser.newPage());
    page.setDefaultTimeout(15_000);
  });

  after(async () => {
    await browser?.close();
    if (sluice) {
      const r = await sluice.stop();
      assert.equal(r.code, 0, `sluice up did not stop cleanly:\n${sluice.log().slice(-4000)}`);
    }
  });

  it("serves the app at / with deep links, and refuses unknown API paths as JSON", async () => {
    const deep = await fetch(`${sluice.base}/pipelines/some-id`);
    assert.equal(deep.status, 200);
    assert.match(await deep.text(), /<div id="root">/);
    const api = await fetch(`${sluice.base}/api/v1/no-such-thing`);
    assert.equal(api.status, 404);
    assert.equal((await api.json()).error.code, "not_found");
    const asset = await fetch(`${sluice.base}/assets/missing-bundle.js`);
    assert.equal(asset.status, 404, "a missing asset must not be answered with the app");
  });

  it("shows the API's message for a wrong password, then logs in", async () => {
    await page.goto(`${sluice.base}/`);
    await page.getByLabel("Email").fill(EMAIL);
    await page.getByLabel("Password").fill("wrong-password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").filter({ hasText: "invalid email or password" }).waitFor();
    await shot("01-login-error");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Pipelines" }).waitFor();
    assert.match(await page.locator(".topbar").innerText(), new RegExp(EMAIL));
  });

  it("creates an env (switching to it) and a team, and invites a member", async () => {
    await page.getByRole("link", { name: "Teams" }).click();
    await page.getByLabel("Env name").fill("ui-env");
    await page.getByLabel("Broker").fill(sluice.broker);
    await page.getByRole("button", { name: "Create env" }).click();
    await page.locator('select[aria-label="Env"] option', { hasText: "ui-env" }).waitFor({ state: "attached" });
    assert.equal(await page.getByLabel("Env", { exact: true }).locator("option:checked").innerText(), "ui-env");
    // The switcher wrote the user's active_env_id.
    const token = JSON.parse(await page.evaluate(() => sessionStorage.getItem("sluice.tokens"))).access_token;
    const me = await apiCall(sluice.base, token, "GET", "/me");
    const envs = await apiCall(sluice.base, token, "GET", "/envs");
    const env = envs.items.find((e) => e.name === "ui-env");
    assert.equal(me.active_env_id, env.id);

    // The API's own validation message shows in the form.
    await page.getByRole("button", { name: "Create team" }).click();
    await page.getByRole("alert").filter({ hasText: "name" }).waitFor();
    await page.getByLabel("Team name").fill("analytics");
    await page.getByLabel("Description").fill("Customer data");
    await page.getByRole("button", { name: "Create team" }).click();
    await page.getByRole("heading", { name: "analytics" }).waitFor();

    // A second user in the env (a superuser's API job), invited from the UI.
    const bob = await apiCall(sluice.base, token, "POST", "/users", { email: "bob@ui.test", password: "bob-password-1" });
    await apiCall(sluice.base, token, "POST", `/envs/${env.id}/members`, { user_id: bob.id, role: "member" });
    await page.reload();
    await page.getByRole("heading", { name: "analytics" }).waitFor();
    await page.getByLabel("Invite").selectOption({ label: "bob@ui.test" });
    await page.getByRole("button", { name: "Send invitation" }).click();
    const row = page.locator("section[aria-label='Team analytics'] tr", { hasText: "bob@ui.test" }).filter({ hasText: "invitation" });
    await row.waitFor();
    assert.match(await row.innerText(), /pending/);
    await shot("02-teams");

    // Bob, in his own tab (own session), accepts and is a member.
    const bobPage = await browser.newPage();
    try {
      await bobPage.goto(`${sluice.base}/login`);
      await bobPage.getByLabel("Email").fill("bob@ui.test");
      await bobPage.getByLabel("Password").fill("bob-password-1");
      await bobPage.getByRole("button", { name: "Sign in" }).click();
      await bobPage.getByRole("link", { name: "Teams" }).click();
      const invitation = bobPage.locator("tr", { hasText: "invitation" }).filter({ hasText: "pending" });
      await invitation.getByRole("button", { name: "accept" }).click();
      await invitation.waitFor({ state: "detached" });
      await bobPage.reload();
      await bobPage.locator("section[aria-label='Team analytics'] tr", { hasText: "bob@ui.test" }).filter({ hasText: "member" }).waitFor();
    } finally {
      await bobPage.close();
    }
  });

  it("creates a pipeline through the wizard and sees it live", async () => {
    await page.getByRole("link", { name: "Pipelines" }).click();
    await page.getByRole("link", { name: "New pipeline" }).click();
    // Source
    await fillPostgres("source", "crm-source", srcDb);
    await shot("03-wizard-source");
    await page.getByRole("button", { name: "Next" }).click();
    // Tables
    await page.getByLabel("table 1").fill("customers");
    await page.getByRole("button", { name: "Next" }).click();
    // Target
    await fillPostgres("target", "warehouse-db", dstDb);
    await page.getByRole("button", { name: "Next" }).click();
    // Mapping: the API's message for a missing name first.
    await page.getByLabel("target table for customers").fill("customers_copy");
    await page.getByRole("button", { name: "Create pipeline" }).click();
    await page.getByRole("alert").filter({ hasText: "name" }).waitFor();
    await page.getByLabel("Pipeline name").fill("customers-copy");
    await shot("04-wizard-mapping");
    await page.getByRole("button", { name: "Create pipeline" }).click();
    await page.getByRole("heading", { name: /customers-copy/ }).waitFor();
    await expectVisible(page.locator('h1 .badge[data-state="live"]'), "pipeline live", 90_000);
    // Live for real: the snapshot's rows are in the target.
    const rows = await waitForCount(dstDb, "SELECT count(*) FROM customers_copy", 50, 60_000);
    assert.equal(rows, 50, sluice.log().slice(-3000));
    await page.locator('tr[data-worker="source-0"] .badge[data-state="live"]').waitFor();
    await page.locator('tr[data-worker="target-0"] .badge[data-state="live"]').waitFor();
    // The source's replication slot, as its worker read it: lag and wal_status.
    await expectVisible(page.locator('tr[data-slot] .badge[data-state="reserved"]'), "slot wal_status", 60_000);
    assert.match(await page.locator("tr[data-slot] .lag-bytes").first().innerText(), /\d+(\.\d)? (B|KiB|MiB|GiB|TiB)/);
    // Secrets never shown.
    assert.doesNotMatch(await page.content(), /unused-by-trust-auth/);
    await shot("05-pipeline-detail");
    await page.getByRole("link", { name: "Pipelines" }).click();
    await page.locator('tr[data-pipeline="customers-copy"] .badge[data-state="live"]').waitFor();
    await shot("06-pipelines");
  });

  it("picks an existing source's tables from the list the source gives", async (t) => {
    if (!has("/connectors/{connector_id}/tables")) return t.skip("this build has no table listing (GET /connectors/{id}/tables)");
    psql(srcDb, 'CREATE TABLE public.audit_log (at timestamptz, what text); CREATE SCHEMA "Größe"; CREATE TABLE "Größe".orders (id int PRIMARY KEY)');
    await page.getByRole("link", { name: "Pipelines" }).click();
    await page.getByRole("link", { name: "New pipeline" }).click();
    const existing = await page.locator('select[aria-label="source connector"] option', { hasText: "crm-source" }).getAttribute("value");
    await page.getByLabel("source connector").selectOption(existing);
    await page.getByRole("button", { name: "Next" }).click();
    const picker = page.getByRole("list", { name: "source tables" });
    await expectVisible(picker.getByLabel("Größe.orders", { exact: true }), "the source's tables listed", 15_000);
    assert.match(await picker.locator("li", { hasText: "public.audit_log" }).innerText(), /no primary key/);
    assert.doesNotMatch(await picker.locator("li", { hasText: "public.customers" }).innerText(), /no primary key/);
    // Checking fills the table rows the wizard sends; unchecking removes one.
    await picker.getByLabel("Größe.orders", { exact: true }).check();
    await picker.getByLabel("public.customers", { exact: true }).check();
    assert.equal(await page.getByLabel("schema 1").inputValue(), "Größe");
    assert.equal(await page.getByLabel("table 1").inputValue(), "orders");
    assert.equal(await page.getByLabel("table 2").inputValue(), "customers");
    await shot("05b-wizard-table-picker");
    await picker.getByLabel("Größe.orders", { exact: true }).uncheck();
    assert.equal(await page.getByLabel("table 1").inputValue(), "customers");
    assert.equal(await page.getByLabel("table 2").count(), 0);
    // Back where the next step starts: the pipelines list.
    await page.getByRole("link", { name: "Pipelines" }).click();
    await page.getByRole("link", { name: "customers-copy" }).waitFor();
  });

  it("pauses and resumes from the detail page", async () => {
    await page.getByRole("link", { name: "customers-copy" }).click();
    await page.getByRole("button", { name: "Pause" }).click();
    await page.locator('h1 .badge[data-state="paused"]').waitFor({ timeout: 30_000 });
    await page.getByRole("button", { name: "Resume" }).click();
    // Resumed: a new generation starts. (Not waiting for live: the paused
    // pod's replication slot can stay active on the server for a while, and
    // the source retries until PostgreSQL lets go of it.)
    await expectVisible(page.locator('h1 .badge[data-state="starting"], h1 .badge[data-state="live"]').first(), "resumed", 30_000);
  });

  it("shows a broken pipeline's error event in Monitoring", async (t) => {
    if (!has("/pipelines/{pipeline_id}/events")) return t.skip("this build has no events API (GET /pipelines/{id}/events)");
    // Its own source, on a database that does not exist: the worker fails
    // (connectors of its own, so the live pipeline is not disturbed).
    await page.goto(`${sluice.base}/pipelines/new`);
    await fillPostgres("source", "ghost-source", "no_such_database");
    await page.getByRole("button", { name: "Next" }).click();
    await page.getByLabel("table 1").fill("customers");
    await page.getByRole("button", { name: "Next" }).click();
    await fillPostgres("target", "ghost-target", dstDb);
    await page.getByRole("button", { name: "Next" }).click();
    await page.getByLabel("target table for customers").fill("ghost_customers");
    await page.getByLabel("Pipeline name").fill("broken");
    await page.getByRole("button", { name: "Create pipeline" }).click();
    await page.getByRole("heading", { name: /broken/ }).waitFor();
    await page.getByRole("tab", { name: "Monitoring" }).click();
    const event = page.locator("tr.event.level-error").first();
    await expectVisible(event, "error event", 90_000);
    await event.click();
    await page.locator("tr.event-details pre.json").waitFor();
    await shot("07-monitoring");
    // Info events are hidden by the errors-only default and shown on demand.
    await page.getByRole("button", { name: "all", exact: true }).click();
    assert.equal(await page.getByLabel("level info").isChecked(), true);
    await page.getByRole("button", { name: "Stop" }).click();
  });

  it("charts the pipeline's metrics", async (t) => {
    if (!has("/pipelines/{pipeline_id}/metrics/series")) return t.skip("this build has no metrics series API");
    await page.getByRole("link", { name: "Metrics" }).click();
    await page.getByLabel("Pipeline").selectOption({ label: "customers-copy" });
    await page.locator(".stats .stat").first().waitFor();
    await page.getByText("Delivered vs errored").waitFor();
    await shot("08-metrics");
  });

  it("runs a workspace query with one result per statement", async (t) => {
    if (!has("/warehouses/{warehouse_id}/runs")) return t.skip("this build has no workspace runs API");
    await page.getByRole("link", { name: "Workspace" }).click();
    await page.getByRole("button", { name: "New warehouse" }).click();
    await page.getByLabel("Warehouse name").fill("replica");
    await page.getByLabel("warehouse host").fill("127.0.0.1");
    await page.getByLabel("warehouse port").fill(String(pgPort()));
    await page.getByLabel("warehouse database").fill(dstDb);
    await page.getByLabel("warehouse user").fill("postgres");
    await page.getByLabel("warehouse password").fill(pgPassword());
    await page.getByRole("button", { name: "Create and test" }).click();
    await page.getByLabel("Warehouse", { exact: true }).locator("option:checked", { hasText: "replica" }).waitFor({ state: "attached" });
    const editor = page.getByLabel("SQL", { exact: true });
    await editor.fill("select count(*) as n from customers_copy;\nselect 1/0;");
    await page.getByRole("button", { name: "Run", exact: true }).click();
    const first = page.locator('[data-statement="0"]');
    await first.locator(".badge-run-succeeded").waitFor({ timeout: 30_000 });
    assert.match(await first.locator("table.result").innerText(), /\b50\b/);
    const second = page.locator('[data-statement="1"]');
    await second.locator(".badge-run-failed").waitFor();
    assert.match(await second.innerText(), /division by zero/);
    await shot("09-workspace");
    if (has("/teams/{team_id}/tasks")) {
      await page.getByLabel("Task name").fill("nightly-count");
      await page.getByLabel("Task SQL").fill("select count(*) from customers_copy");
      await page.getByLabel("unit").selectOption("days");
      await page.getByRole("button", { name: "Create task" }).click();
      await page.locator("tr", { hasText: "nightly-count" }).waitFor();
      await shot("10-workspace-tasks");
    }
  });

  it("triggers a backfill with the truncation warning and sees its progress", async (t) => {
    if (!has("/backfills")) return t.skip("this build has no backfill API");
    await page.getByRole("link", { name: "Backfills" }).click();
    await page.getByRole("button", { name: "Trigger backfill" }).click();
    await page.getByLabel("Backfill pipeline").selectOption({ label: "customers-copy" });
    await page.getByLabel("Truncate destination").check();
    await page.getByRole("alert").filter({ hasText: "deletes every row" }).waitFor();
    await shot("11-backfill-drawer");
    await page.getByRole("button", { name: "Start backfill" }).click();
    const run = page.locator(".backfill").first();
    await run.locator(".progress").waitFor({ timeout: 30_000 });
    await expectVisible(run.locator("h3 .badge-run-done"), "backfill done", 90_000);
    // The destination was emptied and refilled: every source row is back.
    assert.equal(await waitForCount(dstDb, "SELECT count(*) FROM customers_copy", 50, 30_000), 50);
    await shot("12-backfills");
  });

  // Refresh tokens are single-use, and a page fires several requests at
  // once: with an expired access token they all get 401 together, and only
  // one refresh may be sent (a second one with the same token would be
  // reuse, which ends the session). Logout ends it on the server.
  it("refreshes once for a page of 401s, keeps the rotated token, and logout ends the session", async () => {
    const tokens = async () => JSON.parse(await page.evaluate(() => sessionStorage.getItem("sluice.tokens")));
    const spoil = () =>
      page.evaluate(() => {
        const t = JSON.parse(sessionStorage.getItem("sluice.tokens"));
        sessionStorage.setItem("sluice.tokens", JSON.stringify({ ...t, access_token: "slu1.expired" }));
      });
    let previous = await tokens();
    await page.getByRole("link", { name: "Pipelines" }).click();
    await page.getByRole("heading", { name: "Pipelines" }).waitFor();
    // Teams, Backfills and Workspace each load several things at once.
    for (const [link, shows] of [
      ["Teams", page.getByRole("heading", { name: "analytics" })],
      ["Backfills", page.getByRole("heading", { name: "Backfills" })],
      ["Workspace", page.getByRole("heading", { name: "Workspace" })],
      ["Teams", page.getByRole("heading", { name: "analytics" })],
    ]) {
      await spoil();
      await page.getByRole("link", { name: link }).click();
      await expectVisible(shows.first(), `${link} after a refresh`, 15_000);
      await page.waitForFunction((old) => JSON.parse(sessionStorage.getItem("sluice.tokens") ?? "null")?.refresh_token !== old, previous.refresh_token);
      assert.match(await page.locator(".topbar").innerText(), new RegExp(EMAIL), `still logged in on ${link}`);
      const now = await tokens();
      assert.notEqual(now.access_token, "slu1.expired");
      previous = now;
    }
    assert.equal(await page.getByRole("alert").count(), 0, "no request of the last page failed");
    const me = await fetch(`${sluice.base}/api/v1/me`, { headers: { Authorization: `Bearer ${previous.access_token}` } });
    assert.equal(me.status, 200);
    await page.getByRole("button", { name: "Log out" }).click();
    await page.getByRole("button", { name: "Sign in" }).waitFor();
    const after = await fetch(`${sluice.base}/api/v1/me`, { headers: { Authorization: `Bearer ${previous.access_token}` } });
    assert.equal(after.status, 401, "the access token of a logged-out session");
    const renewed = await fetch(`${sluice.base}/api/v1/auth/refresh`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ refresh_token: previous.refresh_token }),
    });
    assert.equal(renewed.status, 401, "the refresh token of a logged-out session");
  });
});
