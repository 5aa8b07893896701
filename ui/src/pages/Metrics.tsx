// Throughput charts over a chosen range: production and consumption,
// delivered vs errored, consumer lag; summary numbers on top.
import { useState } from "react";
import { get } from "../api";
import { ErrorBox, LineChart, Loading, formatNumber, useLoad } from "../components";
import { rangeQuery, type SeriesPoint } from "../metrics";
import { TeamPipelinePage } from "./TeamPipelinePage";

const RANGES: [string, number][] = [
  ["15 min", 900],
  ["1 hour", 3600],
  ["6 hours", 6 * 3600],
  ["24 hours", 86400],
  ["7 days", 7 * 86400],
];

interface Summary {
  production: { total: number; events_per_second: number; creates: number; updates: number; deletes: number; reads: number };
  consumption: { consumed: number; delivered: number; errored: number; skipped: number; delivered_per_second: number };
  subscriptions: { id: string; name: string; topic: string; consumption: { delivered: number; errored: number }; lag: { records: number | null; source: string | null; error: string | null } }[];
}

function Stat({ label, value, unit }: { label: string; value: number | null | undefined; unit?: string }) {
  return (
    <div className="stat">
      <div className="stat-value">{value === null || value === undefined ? "—" : formatNumber(value)}{unit && value != null ? unit : ""}</div>
      <div className="muted">{label}</div>
    </div>
  );
}

export function PipelineMetrics({ id }: { id: string }) {
  const [range, setRange] = useState(3600);
  const q = rangeQuery(range);
  const summary = useLoad((sig) => get<Summary>(`/pipelines/${id}/metrics/summary?${q}`, sig), [id, range], 10000);
  const series = useLoad((sig) => get<{ step: number; points: SeriesPoint[] }>(`/pipelines/${id}/metrics/series?${q}`, sig), [id, range], 10000);
  const pts = series.data?.points ?? [];
  const t = (p: SeriesPoint) => Date.parse(p.ts);
  return (
    <section className="metrics">
      <div className="filters">
        <span className="muted">Range:</span>
        {RANGES.map(([label, s]) => (
          <button key={s} className={`small ${s === range ? "" : "ghost"}`} onClick={() => setRange(s)}>
            {label}
          </button>
        ))}
      </div>
      <ErrorBox error={summary.error ?? series.error} />
      {summary.data && (
        <div className="stats card">
          <Stat label="rows produced" value={summary.data.production.total} />
          <Stat label="produced / s" value={summary.data.production.events_per_second} />
          <Stat label="rows delivered" value={summary.data.consumption.delivered} />
          <Stat label="delivered / s" value={summary.data.consumption.delivered_per_second} />
          <Stat label="rows errored" value={summary.data.consumption.errored} />
          <Stat label="lag (records)" value={summary.data.subscriptions.reduce<number | null>((a, s) => (s.lag.records == null ? a : (a ?? 0) + s.lag.records), null)} />
        </div>
      )}
      {!series.data ? (
        <Loading what="metrics" />
      ) : (
        <div className="charts">
          <div className="card">
            <h3>Production and consumption (rows per bucket of {series.data.step}s)</h3>
            <LineChart
              series={[
                { name: "produced", color: "#3b6fd8", points: pts.map((p) => ({ t: t(p), v: p.produced ?? 0 })) },
                { name: "consumed", color: "#8a5cd0", points: pts.map((p) => ({ t: t(p), v: p.consumed })) },
              ]}
            />
          </div>
          <div className="card">
            <h3>Delivered vs errored</h3>
            <LineChart
              series={[
                { name: "delivered", color: "#1f9d55", points: pts.map((p) => ({ t: t(p), v: p.delivered })) },
                { name: "errored", color: "#d64545", points: pts.map((p) => ({ t: t(p), v: p.errored })) },
              ]}
            />
          </div>
          <div className="card">
            <h3>Consumer lag (records, as reported)</h3>
            <LineChart series={[{ name: "lag", color: "#d08a1f", points: pts.filter((p) => p.lag !== null).map((p) => ({ t: t(p), v: p.lag ?? 0 })) }]} />
          </div>
        </div>
      )}
      {summary.data && summary.data.subscriptions.length > 0 && (
        <div className="card">
          <h3>Subscriptions</h3>
          <table>
            <thead>
              <tr>
                <th>Subscription</th>
                <th>Topic</th>
                <th>Delivered</th>
                <th>Errored</th>
                <th>Lag now</th>
              </tr>
            </thead>
            <tbody>
              {summary.data.subscriptions.map((s) => (
                <tr key={s.id}>
                  <td>{s.name}</td>
                  <td className="code">{s.topic}</td>
                  <td>{formatNumber(s.consumption.delivered)}</td>
                  <td>{formatNumber(s.consumption.errored)}</td>
                  <td title={s.lag.error ?? s.lag.source ?? ""}>{s.lag.records == null ? "—" : formatNumber(s.lag.records)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

export function MetricsPage() {
  return (
    <TeamPipelinePage title="Metrics" empty="No pipelines yet.">
      {(id) => <PipelineMetrics key={id} id={id} />}
    </TeamPipelinePage>
  );
}
