// A page about one of the team's pipelines, picked in its header (the first
// one until the user picks): the Metrics and Monitoring tabs share it.
import { useState, type ReactNode } from "react";
import { get, type Page } from "../api";
import { ErrorBox, useLoad } from "../components";
import { useSession } from "../session";
import type { Pipeline } from "./Pipelines";

export function TeamPipelinePage({
  title,
  empty,
  noTeamHint = false,
  children,
}: {
  title: string;
  empty: string; // shown when the team has no pipeline
  noTeamHint?: boolean; // say so when no team is chosen
  children: (id: string) => ReactNode;
}) {
  const s = useSession();
  const team = s.team;
  const pipelines = useLoad((sig) => (team ? get<Page<Pipeline>>(`/teams/${team.id}/pipelines?limit=200`, sig) : Promise.resolve(null)), [team?.id]);
  const [chosen, setChosen] = useState("");
  const list = pipelines.data?.items ?? [];
  const id = chosen || list[0]?.id || "";
  return (
    <div className="page">
      <div className="page-head">
        <h1>{title}</h1>
        <label>
          Pipeline{" "}
          <select aria-label="Pipeline" value={id} onChange={(e) => setChosen(e.target.value)}>
            {list.map((p) => (
              <option key={p.id} value={p.id}>
                {p.name}
              </option>
            ))}
          </select>
        </label>
      </div>
      <ErrorBox error={pipelines.error} />
      {noTeamHint && !team && <p className="muted">Choose a team first.</p>}
      {pipelines.data && list.length === 0 && <p className="muted">{empty}</p>}
      {id && children(id)}
    </div>
  );
}
