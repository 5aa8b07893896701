// Workspace: a SQL editor against a team's warehouse (run, cancel, one
// result per statement) and scheduled tasks.
import { useEffect, useRef, useState } from "react";
import { get, post, del, type Page } from "../api";
import { Drawer, ErrorBox, Loading, StateBadge, formatTime, useLoad, useSubmit } from "../components";
import { useSession } from "../session";

interface Warehouse {
  id: string;
  name: string;
  warehouse_type: string;
  state: string;
  last_test_message: string | null;
  last_test_at: string | null;
}
interface Statement {
  index: number;
  sql: string;
  status: string;
  duration_ms: number | null;
  error: string | null;
  result: null | { columns: { name: string; type: string }[]; rows: (string | null)[][]; row_count: number; truncated: boolean; rows_affected: number | null };
}
interface Run {
  id: string;
  status: string;
  interrupted: boolean;
  cancel_requested: boolean;
  created_at: string;
  finished_at: string | null;
  trigger: string | null;
  statements: Statement[];
}
interface Task {
  id: string;
  name: string;
  warehouse_id: string;
  sql: string;
  schedule: { every: number; unit: string; offset_minutes: number };
  enabled: boolean;
  next_run_at: string | null;
  state: string;
  last_run: null | { id: string; status: string; created_at: string };
}

// Schedules are UTC, so their times are shown in UTC too.
function formatUtc(iso: string | null) {
  return iso ? iso.replace("T", " ").replace(/(:\d\d)(\.\d+)?Z$/, "$1 UTC") : "—";
}

const WAREHOUSE_FIELDS: Record<string, [string, string][]> = {
  postgresql: [
    ["host", "text"],
    ["port", "number"],
    ["database", "text"],
    ["user", "text"],
    ["password", "password"],
    ["sslmode", "text"],
  ],
  databricks: [
    ["host", "text"],
    ["http_path", "text"],
    ["token", "password"],
    ["catalog", "text"],
    ["schema", "text"],
  ],
};

function NewWarehouse({ teamId, onDone }: { teamId: string; onDone: (id: string) => void }) {
  const [name, setName] = useState("");
  const [type, setType] = useState("postgresql");
  const [config, setConfig] = useState<Record<string, string>>({});
  const { busy, error, run } = useSubmit();
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        run(async () => {
          const configuration: Record<string, unknown> = {};
          for (const [k, t] of WAREHOUSE_FIELDS[type]) if (config[k]) configuration[k] = t === "number" ? Number(config[k]) : config[k];
          const w = await post(`/teams/${teamId}/warehouses`, { name, warehouse_type: type, configuration });
          try {
            await post(`/warehouses/${w.id}/test`);
          } catch {
            /* the verdict shows on the warehouse */
          }
          onDone(w.id);
        });
      }}
    >
      <label>
        Name
        <input aria-label="Warehouse name" value={name} onChange={(e) => setName(e.target.value)} />
      </label>
      <label>
        Type
        <select aria-label="Warehouse type" value={type} onChange={(e) => { setType(e.target.value); setConfig({}); }}>
          <option value="postgresql">PostgreSQL</option>
          <option value="databricks">Databricks SQL</option>
        </select>
      </label>
      {WAREHOUSE_FIELDS[type].map(([k, t]) => (
        <label key={k}>
          {k}
          <input aria-label={`warehouse ${k}`} type={t} autoComplete={t === "password" ? "new-password" : "off"} value={config[k] ?? ""} onChange={(e) => setConfig({ ...config, [k]: e.target.value })} />
        </label>
      ))}
      <ErrorBox error={error} />
      <button disabled={busy}>Create and test</button>
    </form>
  );
}

function ResultTable({ s }: { s: Statement }) {
  const r = s.result;
  return (
    <div className={`statement status-${s.status}`} data-statement={s.index}>
      <div className="statement-head">
        <span className={`badge badge-run-${s.status}`}>{s.status}</span>
        <code>{s.sql.length > 120 ? s.sql.slice(0, 120) + "…" : s.sql}</code>
        <span className="muted">{s.duration_ms != null ? `${s.duration_ms} ms` : ""}</span>
      </div>
      {s.error && <div className="error">{s.error}</div>}
      {r && r.columns.length > 0 && (
        <div className="result-scroll">
          <table className="result">
            <thead>
              <tr>
                {r.columns.map((c, i) => (
                  <th key={i} title={c.type}>
                    {c.name}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {r.rows.map((row, i) => (
                <tr key={i}>
                  {row.map((v, j) => (
                    <td key={j} className={v === null ? "null" : ""}>
                      {v === null ? "NULL" : v}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {r && (
        <div className="muted">
          {r.columns.length > 0 ? `${r.row_count} row${r.row_count === 1 ? "" : "s"}` : ""}
          {r.rows_affected != null ? `${r.rows_affected} row(s) affected` : ""}
          {r.truncated ? " — showing the first 500" : ""}
        </div>
      )}
    </div>
  );
}

function Editor({ warehouse }: { warehouse: Warehouse }) {
  const [sql, setSql] = useState("select 1 as one;\nselect now() as at;");
  const [run, setRun] = useState<Run | null>(null);
  const { busy, error, run: submit } = useSubmit();
  const history = useLoad((sig) => get<Page<Run>>(`/warehouses/${warehouse.id}/runs?limit=10`, sig), [warehouse.id, run?.status]);
  const timer = useRef<number | undefined>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);
  const poll = (id: string) => {
    timer.current = window.setTimeout(async () => {
      try {
        const r = await get<Run>(`/script-runs/${id}`);
        setRun(r);
        if (r.status === "running") poll(id);
      } catch {
        poll(id);
      }
    }, 400);
  };
  const running = run?.status === "running";
  return (
    <section className="card">
      <textarea
        className="sql"
        aria-label="SQL"
        spellCheck={false}
        value={sql}
        onChange={(e) => setSql(e.target.value)}
        onKeyDown={(e) => {
          if ((e.ctrlKey || e.metaKey) && e.key === "Enter") (document.getElementById("run-sql") as HTMLButtonElement)?.click();
        }}
      />
      <div className="actions">
        <button
          id="run-sql"
          disabled={busy || running}
          onClick={() =>
            submit(async () => {
              clearTimeout(timer.current);
              const r = await post<Run>(`/warehouses/${warehouse.id}/runs`, { sql });
              setRun(r);
              if (r.status === "running") poll(r.id);
            })
          }
        >
          Run
        </button>
        <button className="secondary" disabled={!running || run?.cancel_requested} onClick={() => submit(async () => setRun(await post<Run>(`/script-runs/${run!.id}/cancel`)))}>
          Cancel
        </button>
        {run && (
          <span className="muted">
            Run <span className={`badge badge-run-${run.status}`}>{run.status}</span>
            {run.interrupted ? " (the runner stopped answering)" : ""}
            {run.cancel_requested && run.status === "running" ? " cancelling…" : ""}
          </span>
        )}
      </div>
      <ErrorBox error={error} />
      <div className="results">{run?.statements.map((s) => <ResultTable key={s.index} s={s} />)}</div>
      <details className="history">
        <summary>Recent runs</summary>
        {history.data?.items.map((r) => (
          <div key={r.id} className="history-row">
            <span className={`badge badge-run-${r.status}`}>{r.status}</span> {formatTime(r.created_at)} {r.trigger ? `(${r.trigger})` : ""}{" "}
            <button className="small ghost" onClick={() => setRun(r)}>
              show
            </button>
          </div>
        ))}
      </details>
    </section>
  );
}

function Tasks({ teamId, warehouses }: { teamId: string; warehouses: Warehouse[] }) {
  const tasks = useLoad((sig) => get<Page<Task>>(`/teams/${teamId}/tasks?limit=200`, sig), [teamId], 10000);
  const [name, setName] = useState("");
  const [sql, setSql] = useState("");
  const [wh, setWh] = useState("");
  const [every, setEvery] = useState("1");
  const [unit, setUnit] = useState("hours");
  const [offset, setOffset] = useState("0");
  const form = useSubmit();
  const act = useSubmit();
  return (
    <section className="card">
      <h2>Tasks</h2>
      <ErrorBox error={tasks.error ?? act.error} />
      {tasks.data && (
        <table>
          <thead>
            <tr>
              <th>Name</th>
              <th>State</th>
              <th>Schedule (UTC)</th>
              <th>Next run</th>
              <th>Last run</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {tasks.data.items.map((t) => (
              <tr key={t.id}>
                <td title={t.sql}>{t.name}</td>
                <td>
                  <StateBadge state={t.state} />
                </td>
                <td>
                  every {t.schedule.every} {t.schedule.unit}
                  {t.schedule.offset_minutes ? ` +${t.schedule.offset_minutes} min` : ""}
                </td>
                <td>{t.enabled ? formatUtc(t.next_run_at) : "paused"}</td>
                <td>{t.last_run ? `${t.last_run.status} ${formatTime(t.last_run.created_at)}` : "—"}</td>
                <td className="actions">
                  <button className="small" onClick={() => act.run(async () => { await post(`/tasks/${t.id}/run`); tasks.reload(); })}>
                    run now
                  </button>
                  <button className="small secondary" onClick={() => act.run(async () => { await post(`/tasks/${t.id}/${t.enabled ? "pause" : "resume"}`); tasks.reload(); })}>
                    {t.enabled ? "pause" : "resume"}
                  </button>
                  <button className="small ghost" onClick={() => act.run(async () => { await del(`/tasks/${t.id}`); tasks.reload(); })}>
                    delete
                  </button>
                </td>
              </tr>
            ))}
            {tasks.data.items.length === 0 && (
              <tr>
                <td colSpan={6} className="muted">
                  No tasks yet.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      )}
      <form
        className="task-form"
        onSubmit={(e) => {
          e.preventDefault();
          form.run(async () => {
            await post(`/teams/${teamId}/tasks`, {
              name,
              warehouse_id: wh || warehouses[0]?.id,
              sql,
              schedule: { every: Number(every), unit, offset_minutes: Number(offset) },
              enabled: true,
            });
            setName("");
            setSql("");
            tasks.reload();
          });
        }}
      >
        <h3>New task</h3>
        <div className="row">
          <input aria-label="Task name" placeholder="name" value={name} onChange={(e) => setName(e.target.value)} />
          <select aria-label="Task warehouse" value={wh} onChange={(e) => setWh(e.target.value)}>
            {warehouses.map((w) => (
              <option key={w.id} value={w.id}>
                {w.name}
              </option>
            ))}
          </select>
          every
          <input aria-label="every" type="number" className="narrow" value={every} onChange={(e) => setEvery(e.target.value)} />
          <select aria-label="unit" value={unit} onChange={(e) => setUnit(e.target.value)}>
            {["minutes", "hours", "days", "weeks"].map((u) => (
              <option key={u}>{u}</option>
            ))}
          </select>
          offset (min)
          <input aria-label="offset minutes" type="number" className="narrow" value={offset} onChange={(e) => setOffset(e.target.value)} />
        </div>
        <textarea className="sql small" aria-label="Task SQL" placeholder="SQL the task runs" value={sql} onChange={(e) => setSql(e.target.value)} />
        <ErrorBox error={form.error} />
        <button disabled={form.busy}>Create task</button>
      </form>
    </section>
  );
}

export function WorkspacePage() {
  const s = useSession();
  const team = s.team;
  const warehouses = useLoad((sig) => (team ? get<Page<Warehouse>>(`/teams/${team.id}/warehouses?limit=200`, sig) : Promise.resolve(null)), [team?.id]);
  const [chosen, setChosen] = useState("");
  const [creating, setCreating] = useState(false);
  const test = useSubmit();
  if (!team) return <p className="muted">Choose a team first.</p>;
  const list = warehouses.data?.items ?? [];
  const w = list.find((x) => x.id === chosen) ?? list[0];
  return (
    <div className="page">
      <div className="page-head">
        <h1>Workspace</h1>
        <div className="actions">
          <select aria-label="Warehouse" value={w?.id ?? ""} onChange={(e) => setChosen(e.target.value)}>
            {list.length === 0 && <option value="">no warehouse</option>}
            {list.map((x) => (
              <option key={x.id} value={x.id}>
                {x.name} ({x.warehouse_type})
              </option>
            ))}
          </select>
          {w && <StateBadge state={w.state} />}
          {w && (
            <button className="secondary small" disabled={test.busy} onClick={() => test.run(async () => { await post(`/warehouses/${w.id}/test`); warehouses.reload(); })}>
              Test connection
            </button>
          )}
          <button className="small" onClick={() => setCreating(true)}>
            New warehouse
          </button>
        </div>
      </div>
      <ErrorBox error={warehouses.error ?? test.error} />
      {w?.state === "error" && w.last_test_message && <div className="error">Last connection test: {w.last_test_message}</div>}
      {!warehouses.data ? <Loading /> : w ? <Editor key={w.id} warehouse={w} /> : <p className="muted">Add a warehouse to run SQL.</p>}
      {warehouses.data && <Tasks teamId={team.id} warehouses={list} />}
      {creating && (
        <Drawer title="New warehouse" onClose={() => setCreating(false)}>
          <NewWarehouse
            teamId={team.id}
            onDone={(id) => {
              setCreating(false);
              setChosen(id);
              warehouses.reload();
            }}
          />
        </Drawer>
      )}
    </div>
  );
}
