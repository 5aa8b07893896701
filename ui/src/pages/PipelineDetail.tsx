// One pipeline: its state, per-shard workers (heartbeat age, reason, config
// drift), its source's replication slots (lag, wal_status), subscriptions, lifecycle buttons, and its events/metrics/backfills.
import { useState } from "react";
import { get, post, del, type Page } from "../api";
import { ErrorBox, Loading, StateBadge, Tabs, formatAge, formatTime, useLoad, useSubmit } from "../components";
import { navigate } from "../router";
import { EventList } from "./Monitoring";
import { PipelineMetrics } from "./Metrics";
import { BackfillPanel } from "./Backfills";
import type { Pipeline } from "./Pipelines";

interface Worker {
  id: string;
  connector_id: string;
  shard_index: number;
  state: string;
  reason: string | null;
  last_heartbeat_at: string | null;
  heartbeat_age_seconds: number | null;
  config_outdated: boolean | null;
  stop_requested_at: string | null;
}
// A source shard's replication slot as its worker last read it.
interface SourceSlot {
  connector_id: string;
  shard_index: number;
  slot_name: string;
  wal_status: string;
  safe_wal_size: number | null;
  lag_bytes: number;
  lag_seconds: number;
  level: "ok" | "warn" | "critical";
  measured_at: string;
}
function formatBytes(n: number | null): string {
  if (n === null) return "unlimited";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(1)} ${units[i]}`;
}
interface Subscription {
  id: string;
  name: string;
  target_table_name: string | null;
  datamodel_id: string | null;
  enabled: boolean;
  error_table_enabled: boolean;
  error_table_name: string | null;
  shard_index: number | null;
}
interface Connector {
  id: string;
  name: string;
  type: string;
  way: string;
  configuration: Record<string, unknown>;
}

function Drift({ outdated }: { outdated: boolean | null }) {
  if (outdated === null) return <span className="badge badge-muted" title="not measured yet">unmeasured</span>;
  return outdated ? (
    <span className="badge badge-warn" title="the worker runs an older configuration; restart to apply">config drift</span>
  ) : (
    <span className="badge badge-ok">current</span>
  );
}

function ConnectorCard({ id, role }: { id: string | null; role: string }) {
  const c = useLoad((sig) => (id ? get<Connector>(`/connectors/${id}`, sig) : Promise.resolve(null)), [id]);
  if (!id) return <div className="card small-card"><h3>{role}</h3><p className="muted">not chosen</p></div>;
  return (
    <div className="card small-card">
      <h3>{role}</h3>
      <ErrorBox error={c.error} />
      {c.data && (
        <>
          <b>{c.data.name}</b> <span className="muted">{c.data.type}</span>
          <dl className="config">
            {Object.entries(c.data.configuration ?? {}).map(([k, v]) => (
              <div key={k}>
                <dt>{k}</dt>
                <dd>{typeof v === "object" ? JSON.stringify(v) : String(v)}</dd>
              </div>
            ))}
          </dl>
        </>
      )}
    </div>
  );
}

export function PipelineDetailPage({ id }: { id: string }) {
  const [tab, setTab] = useState("Overview");
  const pipeline = useLoad((sig) => get<Pipeline>(`/pipelines/${id}`, sig), [id]);
  const status = useLoad((sig) => get<{ state: string; workers: Worker[]; source_slots?: SourceSlot[] }>(`/pipelines/${id}/status`, sig), [id], 3000);
  const subs = useLoad((sig) => get<Page<Subscription>>(`/pipelines/${id}/subscriptions?limit=200`, sig), [id]);
  const action = useSubmit();
  // A pause or stop leaves running the connectors other pipelines run on.
  const [kept, setKept] = useState<string[]>([]);
  const act = (verb: string) =>
    action.run(async () => {
      const r = await post<{ kept_running?: { running_pipelines: { name: string }[] }[] }>(`/pipelines/${id}/${verb}`);
      setKept((r.kept_running ?? []).flatMap((k) => k.running_pipelines.map((o) => o.name)));
      status.reload();
    });
  if (pipeline.error) return <ErrorBox error={pipeline.error} />;
  if (!pipeline.data) return <Loading what="pipeline" />;
  const p = pipeline.data;
  const state = status.data?.state ?? p.state;
  const connectorName = (cid: string) => (cid === p.source_connector_id ? "source" : cid === p.target_connector_id ? "target" : cid.slice(0, 8));
  return (
    <div className="page">
      <div className="page-head">
        <h1>
          {p.name} <StateBadge state={p.draft && state === "PAUSED" ? "DRAFT" : state} />
        </h1>
        <div className="actions">
          {["start", "pause", "resume", "restart", "stop"].map((v) => (
            <button key={v} className={v === "start" ? "" : "secondary"} disabled={action.busy} onClick={() => act(v)}>
              {v[0].toUpperCase() + v.slice(1)}
            </button>
          ))}
          <button
            className="danger"
            disabled={action.busy}
            onClick={() => {
              if (confirm(`Delete pipeline ${p.name}?`)) action.run(async () => { await del(`/pipelines/${id}`); navigate("/pipelines"); });
            }}
          >
            Delete
          </button>
        </div>
      </div>
      <ErrorBox error={action.error} />
      {kept.length > 0 && (
        <p className="muted" data-testid="kept-running">
          A shared connector keeps running for {Array.from(new Set(kept)).join(", ")}.
        </p>
      )}
      <Tabs tabs={["Overview", "Monitoring", "Metrics", "Backfills"]} active={tab} onChange={setTab} />
      {tab === "Overview" && (
        <>
          <div className="grid2">
            <ConnectorCard id={p.source_connector_id} role="Source" />
            <ConnectorCard id={p.target_connector_id} role="Target" />
          </div>
          <section className="card">
            <h2>Workers</h2>
            <ErrorBox error={status.error} />
            {!status.data ? (
              <Loading />
            ) : status.data.workers.length === 0 ? (
              <p className="muted">No workers yet: start the pipeline.</p>
            ) : (
              <table className="workers">
                <thead>
                  <tr>
                    <th>Connector</th>
                    <th>Shard</th>
                    <th>State</th>
                    <th>Heartbeat</th>
                    <th>Reason</th>
                    <th>Config</th>
                  </tr>
                </thead>
                <tbody>
                  {status.data.workers.map((w) => (
                    <tr key={w.id} data-worker={`${connectorName(w.connector_id)}-${w.shard_index}`}>
                      <td>{connectorName(w.connector_id)}</td>
                      <td>{w.shard_index}</td>
                      <td>
                        <StateBadge state={w.state} />
                      </td>
                      <td title={formatTime(w.last_heartbeat_at)}>{formatAge(w.heartbeat_age_seconds)}</td>
                      <td className="reason">{w.reason ?? "—"}</td>
                      <td>
                        <Drift outdated={w.config_outdated} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </section>
          {status.data?.source_slots && status.data.source_slots.length > 0 && (
            <section className="card">
              <h2>Replication slots</h2>
              <table className="slots">
                <thead>
                  <tr>
                    <th>Slot</th>
                    <th>Lag</th>
                    <th>Behind</th>
                    <th>WAL status</th>
                    <th>Safe WAL size</th>
                  </tr>
                </thead>
                <tbody>
                  {status.data.source_slots.map((s) => (
                    <tr key={s.slot_name} data-slot={s.slot_name} data-level={s.level}>
                      <td title={`shard ${s.shard_index}, read ${formatTime(s.measured_at)}`}>{s.slot_name}</td>
                      <td className="lag-bytes">{formatBytes(s.lag_bytes)}</td>
                      <td className="lag-seconds">{Math.round(s.lag_seconds)} s</td>
                      <td>
                        <StateBadge state={s.wal_status || "unknown"} />
                      </td>
                      <td>{formatBytes(s.safe_wal_size)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </section>
          )}
          <section className="card">
            <h2>Subscriptions</h2>
            <ErrorBox error={subs.error} />
            {subs.data && (
              <table>
                <thead>
                  <tr>
                    <th>Name</th>
                    <th>Target table</th>
                    <th>Error table</th>
                    <th>Shard</th>
                    <th>Enabled</th>
                  </tr>
                </thead>
                <tbody>
                  {subs.data.items.map((s) => (
                    <tr key={s.id}>
                      <td>{s.name}</td>
                      <td>{s.target_table_name ?? "—"}</td>
                      <td>{s.error_table_enabled ? s.error_table_name : "off"}</td>
                      <td>{s.shard_index ?? "—"}</td>
                      <td>{s.enabled ? "yes" : "no"}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </section>
        </>
      )}
      {tab === "Monitoring" && <EventList path={`/pipelines/${id}/events`} />}
      {tab === "Metrics" && <PipelineMetrics id={id} />}
      {tab === "Backfills" && <BackfillPanel pipelineId={id} teamId={p.team_id} />}
    </div>
  );
}
