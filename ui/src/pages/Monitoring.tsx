// Resource events, folded: errors only by default, a level filter, the
// folded count with first/last seen, and each row's details JSON on demand.
import { Fragment, useState } from "react";
import { get } from "../api";
import { ErrorBox, JsonView, Loading, formatTime, useLoad } from "../components";
import { TeamPipelinePage } from "./TeamPipelinePage";

interface Event {
  id: string;
  ts: string;
  first_ts: string;
  closed_at: string | null;
  level: string;
  type: string;
  code: string;
  message: string;
  reason: string | null;
  details: unknown;
  count: number;
  connector_name: string | null;
  datamodel_name: string | null;
  subscription_name: string | null;
  pod: string | null;
}

const LEVELS = ["critical", "error", "warn", "info"];

export function EventList({ path }: { path: string }) {
  const [levels, setLevels] = useState<string[]>(["critical", "error"]);
  const [open, setOpen] = useState<Set<string>>(new Set());
  const [more, setMore] = useState<Event[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const q = `level=${levels.length === LEVELS.length ? "all" : levels.join(",")}&limit=50`;
  const events = useLoad(
    async (sig) => {
      const r = await get<{ items: Event[]; next_cursor: string | null }>(`${path}?${q}`, sig);
      setMore([]);
      setCursor(r.next_cursor);
      return r;
    },
    [path, q],
    5000,
  );
  const toggle = (l: string) => setLevels(levels.includes(l) ? levels.filter((x) => x !== l) : LEVELS.filter((x) => x === l || levels.includes(x)));
  const rows = [...(events.data?.items ?? []), ...more];
  return (
    <section className="card events">
      <div className="filters" role="group" aria-label="Levels">
        <span className="muted">Levels:</span>
        {LEVELS.map((l) => (
          <label key={l} className="check">
            <input type="checkbox" aria-label={`level ${l}`} checked={levels.includes(l)} onChange={() => toggle(l)} /> {l}
          </label>
        ))}
        <button className="small ghost" onClick={() => setLevels(["critical", "error"])}>
          errors only
        </button>
        <button className="small ghost" onClick={() => setLevels(LEVELS)}>
          all
        </button>
      </div>
      <ErrorBox error={events.error} />
      {levels.length === 0 ? (
        <p className="muted">Choose at least one level.</p>
      ) : !events.data ? (
        <Loading what="events" />
      ) : rows.length === 0 ? (
        <p className="muted empty-events">No {levels.join("/")} events. All quiet.</p>
      ) : (
        <table className="event-table">
          <thead>
            <tr>
              <th />
              <th>Level</th>
              <th>Event</th>
              <th>Where</th>
              <th>Count</th>
              <th>First seen</th>
              <th>Last seen</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((e) => {
              const isOpen = open.has(e.id);
              return (
                <Fragment key={e.id}>
                  <tr
                    className={`event level-${e.level}`}
                    data-code={e.code}
                    onClick={() => {
                      const n = new Set(open);
                      if (isOpen) n.delete(e.id);
                      else n.add(e.id);
                      setOpen(n);
                    }}
                  >
                    <td>{isOpen ? "▾" : "▸"}</td>
                    <td>
                      <span className={`badge badge-level-${e.level}`}>{e.level}</span>
                    </td>
                    <td>
                      <div>{e.message}</div>
                      <div className="muted code">
                        {e.code}
                        {e.closed_at ? ` · resolved ${formatTime(e.closed_at)}` : ""}
                      </div>
                    </td>
                    <td>{[e.connector_name, e.datamodel_name, e.subscription_name].filter(Boolean).join(" › ") || "—"}</td>
                    <td className="count">×{e.count}</td>
                    <td>{formatTime(e.first_ts)}</td>
                    <td>{formatTime(e.ts)}</td>
                  </tr>
                  {isOpen && (
                    <tr className="event-details">
                      <td />
                      <td colSpan={6}>
                        {e.reason && (
                          <p>
                            <b>Reason:</b> {e.reason}
                          </p>
                        )}
                        {e.pod && <p className="muted">pod {e.pod}</p>}
                        <JsonView value={e.details} />
                      </td>
                    </tr>
                  )}
                </Fragment>
              );
            })}
          </tbody>
        </table>
      )}
      {cursor && (
        <button
          className="secondary small"
          onClick={async () => {
            const r = await get<{ items: Event[]; next_cursor: string | null }>(`${path}?${q}&cursor=${encodeURIComponent(cursor)}`);
            setMore([...more, ...r.items]);
            setCursor(r.next_cursor);
          }}
        >
          Load older
        </button>
      )}
    </section>
  );
}

// The Monitoring tab across the team: pick a pipeline (or see all of them).
export function MonitoringPage() {
  return (
    <TeamPipelinePage title="Monitoring" empty="No pipelines to monitor yet." noTeamHint>
      {(id) => <EventList key={id} path={`/pipelines/${id}/events`} />}
    </TeamPipelinePage>
  );
}
