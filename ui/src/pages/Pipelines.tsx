import { get, type Page } from "../api";
import { ErrorBox, Loading, Sparkline, StateBadge, formatTime, useLoad } from "../components";
import { Link } from "../router";
import { useSession } from "../session";
import { usePipelineThroughput } from "../metrics";

export interface Pipeline {
  id: string;
  name: string;
  state: string | null;
  draft: boolean;
  version: number;
  team_id: string;
  source_connector_id: string | null;
  target_connector_id: string | null;
  created_at: string;
  updated_at: string;
}

function Throughput({ id }: { id: string }) {
  const values = usePipelineThroughput(id);
  return <Sparkline values={values} />;
}

// The list shows the displayed state: a worker's ERROR wins, an incomplete
// pipeline is a draft.
export function PipelinesPage() {
  const s = useSession();
  const team = s.team;
  const list = useLoad(
    (sig) => (team ? get<Page<Pipeline>>(`/teams/${team.id}/pipelines?limit=200`, sig) : Promise.resolve(null)),
    [team?.id],
    5000,
  );
  return (
    <div className="page">
      <div className="page-head">
        <h1>Pipelines</h1>
        {team && (
          <Link to="/pipelines/new" className="button">
            New pipeline
          </Link>
        )}
      </div>
      {!team && <p className="muted">Choose or create a team first (Teams page).</p>}
      <ErrorBox error={list.error} />
      {team && !list.data && !list.error && <Loading what="pipelines" />}
      {list.data && (
        <table className="pipelines">
          <thead>
            <tr>
              <th>Name</th>
              <th>State</th>
              <th>Throughput (1h)</th>
              <th>Version</th>
              <th>Updated</th>
            </tr>
          </thead>
          <tbody>
            {list.data.items.map((p) => (
              <tr key={p.id} data-pipeline={p.name}>
                <td>
                  <Link to={`/pipelines/${p.id}`}>{p.name}</Link>
                </td>
                <td>
                  <StateBadge state={p.draft ? "DRAFT" : p.state} />
                </td>
                <td>
                  <Throughput id={p.id} />
                </td>
                <td>{p.version}</td>
                <td>{formatTime(p.updated_at)}</td>
              </tr>
            ))}
            {list.data.items.length === 0 && (
              <tr>
                <td colSpan={5} className="muted">
                  No pipelines in {team?.name} yet.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      )}
    </div>
  );
}
