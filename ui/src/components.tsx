import { useCallback, useEffect, useRef, useState, type ReactNode } from "react";
import { errorText } from "./api";

// Loads on mount and whenever deps change; `reload` re-runs it, `every` polls.
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[], every?: number) {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  useEffect(() => {
    const ctl = new AbortController();
    loadRef
      .current(ctl.signal)
      .then((d) => {
        if (!ctl.signal.aborted) {
          setData(d);
          setError(null);
        }
      })
      .catch((e) => {
        if (!ctl.signal.aborted) setError(errorText(e));
      });
    return () => ctl.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);
  useEffect(() => {
    if (!every) return;
    const id = setInterval(() => setTick((t) => t + 1), every);
    return () => clearInterval(id);
  }, [every]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, reload };
}

export function ErrorBox({ error }: { error: string | null | undefined }) {
  if (!error) return null;
  return (
    <div className="error" role="alert">
      {error}
    </div>
  );
}

export function Loading({ what }: { what?: string }) {
  return <div className="muted">Loading{what ? ` ${what}` : ""}…</div>;
}

const STATE_CLASS: Record<string, string> = {
  LIVE: "live",
  DRAFT: "draft",
  PAUSED: "paused",
  STOPPED: "paused",
  ERROR: "error",
  STARTING: "starting",
  STOPPING: "starting",
};

export function StateBadge({ state }: { state: string | null | undefined }) {
  const s = (state ?? "PAUSED").toUpperCase();
  return <span className={`badge badge-${STATE_CLASS[s] ?? "paused"}`} data-state={s.toLowerCase()}>{s.toLowerCase()}</span>;
}

export function Drawer({ title, onClose, children }: { title: string; onClose: () => void; children: ReactNode }) {
  return (
    <div className="drawer-backdrop" onClick={onClose}>
      <aside className="drawer" role="dialog" aria-label={title} onClick={(e) => e.stopPropagation()}>
        <header>
          <h2>{title}</h2>
          <button className="ghost" onClick={onClose} aria-label="Close">
            ×
          </button>
        </header>
        {children}
      </aside>
    </div>
  );
}

export function Tabs({ tabs, active, onChange }: { tabs: string[]; active: string; onChange: (t: string) => void }) {
  return (
    <nav className="tabs" role="tablist">
      {tabs.map((t) => (
        <button key={t} role="tab" aria-selected={t === active} className={t === active ? "active" : ""} onClick={() => onChange(t)}>
          {t}
        </button>
      ))}
    </nav>
  );
}

export function Sparkline({ values, width = 120, height = 28 }: { values: number[]; width?: number; height?: number }) {
  if (values.length < 2) return <svg className="sparkline empty" width={width} height={height} />;
  const max = Math.max(...values, 1);
  const step = width / (values.length - 1);
  const pts = values.map((v, i) => `${(i * step).toFixed(1)},${(height - 2 - (v / max) * (height - 4)).toFixed(1)}`);
  return (
    <svg className="sparkline" width={width} height={height} viewBox={`0 0 ${width} ${height}`}>
      <polyline points={pts.join(" ")} fill="none" stroke="currentColor" strokeWidth="1.5" />
    </svg>
  );
}

export interface Series {
  name: string;
  color: string;
  points: { t: number; v: number }[];
}

// A plain SVG line chart with a time axis and a max label.
export function LineChart({ series, height = 180, unit = "" }: { series: Series[]; height?: number; unit?: string }) {
  const width = 1000;
  const all = series.flatMap((s) => s.points);
  if (all.length === 0) return <div className="chart-empty muted">No data in this range</div>;
  const t0 = Math.min(...all.map((p) => p.t));
  const t1 = Math.max(...all.map((p) => p.t), t0 + 1);
  const max = Math.max(...all.map((p) => p.v), 1);
  const x = (t: number) => 40 + ((t - t0) / (t1 - t0)) * (width - 50);
  const y = (v: number) => height - 20 - (v / max) * (height - 30);
  const fmt = (t: number) => new Date(t).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  return (
    <div className="chart">
      <svg viewBox={`0 0 ${width} ${height}`} width="100%" height={height}>
        <line x1={40} y1={height - 20} x2={width - 10} y2={height - 20} stroke="#ccd" />
        <text x={0} y={14} fontSize="11" fill="#667">
          {formatNumber(max)}
          {unit}
        </text>
        <text x={0} y={height - 22} fontSize="11" fill="#667">
          0
        </text>
        <text x={40} y={height - 4} fontSize="11" fill="#667">
          {fmt(t0)}
        </text>
        <text x={width - 10} y={height - 4} fontSize="11" fill="#667" textAnchor="end">
          {fmt(t1)}
        </text>
        {series.map((s) => (
          <polyline
            key={s.name}
            fill="none"
            stroke={s.color}
            strokeWidth="2"
            points={s.points.map((p) => `${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`).join(" ")}
          />
        ))}
      </svg>
      <div className="legend">
        {series.map((s) => (
          <span key={s.name}>
            <i style={{ background: s.color }} /> {s.name}
          </span>
        ))}
      </div>
    </div>
  );
}

export function formatNumber(n: number) {
  if (Math.abs(n) >= 1e9) return (n / 1e9).toFixed(1) + "G";
  if (Math.abs(n) >= 1e6) return (n / 1e6).toFixed(1) + "M";
  if (Math.abs(n) >= 1e3) return (n / 1e3).toFixed(1) + "k";
  return Number.isInteger(n) ? String(n) : n.toFixed(2);
}

export function formatAge(seconds: number | null | undefined) {
  if (seconds === null || seconds === undefined) return "never";
  if (seconds < 60) return `${seconds}s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)}h ago`;
  return `${Math.floor(seconds / 86400)}d ago`;
}

export function formatTime(iso: string | null | undefined) {
  if (!iso) return "—";
  const d = new Date(iso);
  return isNaN(d.getTime()) ? iso : d.toLocaleString();
}

export function formatDuration(seconds: number) {
  if (!isFinite(seconds) || seconds < 0) return "—";
  if (seconds < 60) return `${Math.round(seconds)}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ${Math.round(seconds % 60)}s`;
  return `${Math.floor(seconds / 3600)}h ${Math.floor((seconds % 3600) / 60)}m`;
}

export function JsonView({ value }: { value: unknown }) {
  return <pre className="json">{JSON.stringify(value, null, 2)}</pre>;
}

// A form's submit state: busy flag and the API's own error message.
export function useSubmit() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const run = useCallback(async (f: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await f();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run, setError };
}
