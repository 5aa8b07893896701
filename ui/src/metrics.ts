// Metric series (GET /pipelines/{id}/metrics/series) for charts and the
// list's sparklines.
import { useEffect, useState } from "react";
import { get } from "./api";

export interface SeriesPoint {
  ts: string;
  produced?: number;
  produced_per_second?: number;
  consumed: number;
  delivered: number;
  skipped: number;
  errored: number;
  delivered_per_second: number;
  errored_per_second: number;
  lag: number | null;
}

export function rangeQuery(seconds: number, step?: number) {
  const to = new Date();
  const from = new Date(to.getTime() - seconds * 1000);
  return `from=${from.toISOString()}&to=${to.toISOString()}${step ? `&step=${step}` : ""}`;
}

export function usePipelineThroughput(id: string): number[] {
  const [values, setValues] = useState<number[]>([]);
  useEffect(() => {
    const ctl = new AbortController();
    get<{ points: SeriesPoint[] }>(`/pipelines/${id}/metrics/series?${rangeQuery(3600, 120)}`, ctl.signal)
      .then((m) => setValues(m.points.map((p) => (p.produced ?? 0) + p.delivered)))
      .catch(() => setValues([]));
    return () => ctl.abort();
  }, [id]);
  return values;
}
