// Backfills: a trigger drawer (which subscriptions, truncate or not), the
// runs with progress and ETA, and loud warnings when a destination was emptied.
import { useState } from "react";
import { get, post, type Page } from "../api";
import { Drawer, ErrorBox, Loading, formatDuration, formatNumber, formatTime, useLoad, useSubmit } from "../components";
import { Link } from "../router";
import { useSession } from "../session";
import type { Pipeline } from "./Pipelines";

interface Item {
  id: string;
  source_table_name: string;
  target_table_name: string;
  status: string;
  approximate_row_count: number | null;
  rows_written: number | null;
  table_emptied: boolean;
  error_reason: string | null;
  pipeline_id: string | null;
}
interface Run {
  id: string;
  source_connector_name: string | null;
  status: string;
  origin: string;
  truncate_history: boolean;
  triggered_by_email: string | null;
  stalled_since: string | null;
  stalled_reason: string | null;
  counts: Record<string, number>;
  created_at: string;
  items?: Item[];
}
interface Progress {
  status: string;
  rows_written: number | null;
  approximate_row_count: number | null;
  percent: number | null;
  rows_per_second: number | null;
  eta_seconds: number | null;
  items: { id: string; status: string; rows_written: number | null; approximate_row_count: number | null; percent: number | null; table_emptied: boolean }[];
}
interface Subscription {
  id: string;
  name: string;
  target_table_name: string | null;
}

const STALLED: Record<string, string> = {
  never_scheduled: "no worker picked it up yet",
  no_job: "its job is gone",
  silent: "its job stopped reporting",
};

function Bar({ percent }: { percent: number | null }) {
  return (
    <div className="bar" role="progressbar" aria-valuenow={percent ?? undefined}>
      <div style={{ width: `${Math.min(100, percent ?? 0)}%` }} className={percent === null ? "unknown" : ""} />
    </div>
  );
}

function RunCard({ run, onChange }: { run: Run; onChange: () => void }) {
  const running = run.status === "running";
  const detail = useLoad((sig) => get<Run>(`/backfills/${run.id}`, sig), [run.id, run.status], running ? 3000 : undefined);
  const progress = useLoad((sig) => get<Progress>(`/backfills/${run.id}/progress`, sig), [run.id, run.status], running ? 2000 : undefined);
  const cancel = useSubmit();
  const p = progress.data;
  const items = detail.data?.items ?? [];
  const emptied = items.filter((i) => i.table_emptied && i.status === "failed");
  return (
    <section className="card backfill" data-run={run.id}>
      <div className="page-head">
        <h3>
          {run.source_connector_name ?? "source"} <span className={`badge badge-run-${run.status}`}>{run.status}</span>{" "}
          {run.truncate_history && <span className="badge badge-warn">truncates</span>}
        </h3>
        {running && (
          <button className="danger small" disabled={cancel.busy} onClick={() => cancel.run(async () => { await post(`/backfills/${run.id}/cancel`); onChange(); })}>
            Cancel
          </button>
        )}
      </div>
      <div className="muted">
        {run.origin} backfill by {run.triggered_by_email ?? "the system"}, {formatTime(run.created_at)}
      </div>
      <ErrorBox error={cancel.error} />
      {emptied.length > 0 && (
        <div className="error" role="alert">
          Destination emptied and not refilled: {emptied.map((i) => i.target_table_name).join(", ")}. These tables were truncated before the copy failed; run the backfill again to refill them.
        </div>
      )}
      {run.stalled_since && running && (
        <div className="warning">
          Stalled since {formatTime(run.stalled_since)}: {STALLED[run.stalled_reason ?? ""] ?? run.stalled_reason}
        </div>
      )}
      {p && !running && (
        <div className="progress">
          <Bar percent={run.status === "done" ? 100 : p.percent} />
          <span>
            {run.status} · {p.rows_written === null ? "—" : formatNumber(p.rows_written)} rows written
          </span>
        </div>
      )}
      {p && running && (
        <div className="progress">
          <Bar percent={p.percent} />
          <span>
            {p.percent === null ? "progress not measurable yet" : `${p.percent.toFixed(0)}%`} · {p.rows_written === null ? "—" : formatNumber(p.rows_written)} of ~
            {p.approximate_row_count === null ? "?" : formatNumber(p.approximate_row_count)} rows
            {p.rows_per_second !== null ? ` · ${formatNumber(p.rows_per_second)} rows/s` : ""}
            {` · ETA ${p.eta_seconds === null ? "unknown" : formatDuration(p.eta_seconds)}`}
          </span>
        </div>
      )}
      {items.length > 0 && (
        <table>
          <thead>
            <tr>
              <th>Source table</th>
              <th>Destination</th>
              <th>Status</th>
              <th>Rows</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {items.map((i) => {
              const ip = p?.items.find((x) => x.id === i.id);
              return (
                <tr key={i.id}>
                  <td>{i.source_table_name}</td>
                  <td>{i.target_table_name}</td>
                  <td>
                    <span className={`badge badge-run-${i.status}`}>{i.status}</span>
                  </td>
                  <td>
                    {i.rows_written === null ? "—" : formatNumber(i.rows_written)}
                    {i.approximate_row_count !== null ? ` / ~${formatNumber(i.approximate_row_count)}` : ""}
                    {ip?.percent != null ? ` (${ip.percent.toFixed(0)}%)` : ""}
                  </td>
                  <td className="reason">{i.error_reason ?? ""}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
}

function TriggerDrawer({ pipelines, initial, onClose, onDone }: { pipelines: Pipeline[]; initial?: string; onClose: () => void; onDone: () => void }) {
  const [pipelineId, setPipelineId] = useState(initial ?? pipelines[0]?.id ?? "");
  const subs = useLoad((sig) => (pipelineId ? get<Page<Subscription>>(`/pipelines/${pipelineId}/subscriptions?limit=200`, sig) : Promise.resolve(null)), [pipelineId]);
  const [chosen, setChosen] = useState<Set<string> | null>(null);
  const [truncate, setTruncate] = useState(false);
  const [partition, setPartition] = useState<Record<string, string>>({});
  const { busy, error, run } = useSubmit();
  const all = subs.data?.items ?? [];
  const selected = chosen ?? new Set(all.map((s) => s.id));
  return (
    <Drawer title="Trigger a backfill" onClose={onClose}>
      <label>
        Pipeline
        <select aria-label="Backfill pipeline" value={pipelineId} onChange={(e) => { setPipelineId(e.target.value); setChosen(null); }}>
          {pipelines.map((p) => (
            <option key={p.id} value={p.id}>
              {p.name}
            </option>
          ))}
        </select>
      </label>
      <h3>Tables</h3>
      {!subs.data ? (
        <Loading />
      ) : (
        all.map((s) => (
          <div key={s.id} className="row">
            <label className="check">
              <input
                type="checkbox"
                checked={selected.has(s.id)}
                onChange={() => {
                  const n = new Set(selected);
                  if (n.has(s.id)) n.delete(s.id);
                  else n.add(s.id);
                  setChosen(n);
                }}
              />{" "}
              {s.name} → {s.target_table_name}
            </label>
            <input className="narrow-wide" placeholder="partition column (optional)" aria-label={`partition column ${s.name}`} value={partition[s.id] ?? ""} onChange={(e) => setPartition({ ...partition, [s.id]: e.target.value })} />
          </div>
        ))
      )}
      <label className="check">
        <input type="checkbox" aria-label="Truncate destination" checked={truncate} onChange={(e) => setTruncate(e.target.checked)} /> Empty the destination tables first
      </label>
      {truncate && (
        <div className="warning" role="alert">
          Truncation deletes every row in the destination tables before copying. If the backfill fails or is cancelled, those tables stay empty until a backfill completes.
        </div>
      )}
      <ErrorBox error={error} />
      <button
        disabled={busy || selected.size === 0}
        onClick={() =>
          run(async () => {
            const tables: Record<string, unknown> = {};
            for (const id of selected) if (partition[id]) tables[id] = { partition_column: partition[id] };
            await post(`/backfills`, {
              origin: "pipeline",
              pipeline_id: pipelineId,
              subscription_ids: [...selected],
              truncate_history: truncate,
              tables: Object.keys(tables).length ? tables : undefined,
            });
            onDone();
          })
        }
      >
        Start backfill
      </button>
    </Drawer>
  );
}

export function BackfillPanel({ pipelineId, teamId }: { pipelineId?: string; teamId: string }) {
  const runs = useLoad((sig) => get<Page<Run>>(`/teams/${teamId}/backfills?limit=20${pipelineId ? `&pipeline_id=${pipelineId}` : ""}`, sig), [teamId, pipelineId], 5000);
  const pipelines = useLoad((sig) => get<Page<Pipeline>>(`/teams/${teamId}/pipelines?limit=200`, sig), [teamId]);
  const [open, setOpen] = useState(false);
  return (
    <div>
      <div className="actions">
        <button onClick={() => setOpen(true)} disabled={!pipelines.data?.items.length}>
          Trigger backfill
        </button>
      </div>
      <ErrorBox error={runs.error} />
      {!runs.data ? <Loading what="backfills" /> : runs.data.items.length === 0 ? <p className="muted">No backfills yet.</p> : runs.data.items.map((r) => <RunCard key={r.id} run={r} onChange={runs.reload} />)}
      {open && pipelines.data && (
        <TriggerDrawer
          pipelines={pipelines.data.items}
          initial={pipelineId}
          onClose={() => setOpen(false)}
          onDone={() => {
            setOpen(false);
            runs.reload();
          }}
        />
      )}
    </div>
  );
}

export function BackfillsPage() {
  const s = useSession();
  if (!s.team) return <p className="muted">Choose a team first (<Link to="/teams">Teams</Link>).</p>;
  return (
    <div className="page">
      <h1>Backfills</h1>
      <BackfillPanel teamId={s.team.id} />
    </div>
  );
}
