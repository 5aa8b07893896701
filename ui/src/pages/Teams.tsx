// Teams of the active env, their members, invitations and join requests;
// env creation for superusers.
import { useState } from "react";
import { get, post, del, type Page } from "../api";
import { ErrorBox, Loading, formatTime, useLoad, useSubmit } from "../components";
import { useSession } from "../session";

interface Member {
  user_id: string;
  email: string;
  admin?: boolean;
  role?: string;
}
interface RequestRow {
  id: string;
  kind: "invite" | "join";
  from_user_id: string;
  to_user_id: string;
  status: string;
  role?: string;
  admin?: boolean;
  created_at: string;
}

function NewTeam() {
  const s = useSession();
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const { busy, error, run } = useSubmit();
  if (!s.env) return null;
  return (
    <form
      className="card inline-form"
      onSubmit={(e) => {
        e.preventDefault();
        run(async () => {
          const t = await post(`/envs/${s.env!.id}/teams`, { name, description: description || undefined });
          setName("");
          setDescription("");
          await s.reload();
          s.setTeam(t.id);
        });
      }}
    >
      <h3>New team in {s.env.name}</h3>
      <input placeholder="Team name" aria-label="Team name" value={name} onChange={(e) => setName(e.target.value)} />
      <input placeholder="Description" aria-label="Description" value={description} onChange={(e) => setDescription(e.target.value)} />
      <button disabled={busy}>Create team</button>
      <ErrorBox error={error} />
    </form>
  );
}

function NewEnv() {
  const s = useSession();
  const [name, setName] = useState("");
  const [broker, setBroker] = useState("");
  const { busy, error, run } = useSubmit();
  if (!s.me.is_superuser) return null;
  return (
    <form
      className="card inline-form"
      onSubmit={(e) => {
        e.preventDefault();
        run(async () => {
          const retention_configuration = broker ? { bootstrap_servers: broker, security_protocol: "plaintext" } : undefined;
          const env = await post(`/envs`, { name, retention_configuration });
          setName("");
          await s.setEnv(env.id);
        });
      }}
    >
      <h3>New env</h3>
      <input placeholder="Env name" aria-label="Env name" value={name} onChange={(e) => setName(e.target.value)} />
      <input placeholder="Broker bootstrap servers (host:port)" aria-label="Broker" value={broker} onChange={(e) => setBroker(e.target.value)} />
      <button disabled={busy}>Create env</button>
      <ErrorBox error={error} />
    </form>
  );
}

function RequestTable({ rows, scope, emails, onChange }: { rows: RequestRow[]; scope: "team" | "env"; emails: Map<string, string>; onChange: () => void }) {
  const { error, run } = useSubmit();
  const me = useSession().me.id;
  const who = (id: string) => emails.get(id) ?? id.slice(0, 8);
  // An invitation is answered by its invitee, a join request by an admin;
  // whoever sent it may withdraw it. The API has the last word.
  const verbs = (r: RequestRow) => {
    const answer = r.kind === "invite" ? r.to_user_id === me : r.from_user_id !== me;
    return [...(answer ? ["accept", "decline"] : []), ...(r.from_user_id === me ? ["cancel"] : [])];
  };
  if (rows.length === 0) return <p className="muted">No requests.</p>;
  return (
    <>
      <table>
        <thead>
          <tr>
            <th>Kind</th>
            <th>From</th>
            <th>To</th>
            <th>Status</th>
            <th>Created</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.id}>
              <td>{r.kind === "invite" ? "invitation" : "join request"}</td>
              <td>{who(r.from_user_id)}</td>
              <td>{who(r.to_user_id)}</td>
              <td>
                <span className={`badge badge-req-${r.status}`}>{r.status}</span>
              </td>
              <td>{formatTime(r.created_at)}</td>
              <td className="actions">
                {r.status === "pending" &&
                  verbs(r).map((v) => (
                    <button key={v} className="small" onClick={() => run(async () => { await post(`/${scope}-requests/${r.id}/${v}`); onChange(); })}>
                      {v}
                    </button>
                  ))}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <ErrorBox error={error} />
    </>
  );
}

function TeamPanel({ teamId }: { teamId: string }) {
  const s = useSession();
  const team = s.teams.find((t) => t.id === teamId)!;
  const members = useLoad((sig) => get<Page<Member>>(`/teams/${teamId}/members?limit=200`, sig), [teamId]);
  const envMembers = useLoad(
    (sig) => (s.env ? get<Page<Member>>(`/envs/${s.env.id}/members?limit=200`, sig) : Promise.resolve({ items: [], next_offset: null })),
    [s.env?.id],
  );
  // Team requests are visible to team admins; others get a 403 we show as a note.
  const requests = useLoad((sig) => get<Page<RequestRow>>(`/teams/${teamId}/requests?limit=200`, sig), [teamId]);
  const [invitee, setInvitee] = useState("");
  const [admin, setAdmin] = useState(false);
  const invite = useSubmit();
  const join = useSubmit();
  const emails = new Map<string, string>();
  envMembers.data?.items.forEach((m) => emails.set(m.user_id, m.email));
  members.data?.items.forEach((m) => emails.set(m.user_id, m.email));
  emails.set(s.me.id, s.me.email);
  const memberIds = new Set(members.data?.items.map((m) => m.user_id));
  const candidates = (envMembers.data?.items ?? []).filter((m) => !memberIds.has(m.user_id));
  const isMember = memberIds.has(s.me.id);
  const reloadAll = () => {
    members.reload();
    requests.reload();
  };
  return (
    <section className="card" aria-label={`Team ${team.name}`}>
      <h2>{team.name}</h2>
      {team.description && <p className="muted">{team.description}</p>}
      <h3>Members</h3>
      <ErrorBox error={members.error} />
      {!members.data ? (
        <Loading />
      ) : (
        <table>
          <thead>
            <tr>
              <th>Email</th>
              <th>Role</th>
              <th>Since</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {members.data.items.map((m: any) => (
              <tr key={m.user_id}>
                <td>{m.email}</td>
                <td>{m.admin ? "admin" : "member"}</td>
                <td>{formatTime(m.timestamp)}</td>
                <td>
                  <button className="small ghost" onClick={() => invite.run(async () => { await del(`/teams/${teamId}/members/${m.user_id}`); reloadAll(); })}>
                    remove
                  </button>
                </td>
              </tr>
            ))}
            {members.data.items.length === 0 && (
              <tr>
                <td colSpan={4} className="muted">
                  No members yet.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      )}
      <form
        className="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          invite.run(async () => {
            await post(`/teams/${teamId}/requests`, { user_id: invitee || undefined, admin });
            setInvitee("");
            reloadAll();
          });
        }}
      >
        <select aria-label="Invite" value={invitee} onChange={(e) => setInvitee(e.target.value)}>
          <option value="">Invite an env member…</option>
          {candidates.map((m) => (
            <option key={m.user_id} value={m.user_id}>
              {m.email}
            </option>
          ))}
        </select>
        <label className="check">
          <input type="checkbox" checked={admin} onChange={(e) => setAdmin(e.target.checked)} /> admin
        </label>
        <button disabled={invite.busy || !invitee}>Send invitation</button>
        {!isMember && (
          <button type="button" className="secondary" disabled={join.busy} onClick={() => join.run(async () => { await post(`/teams/${teamId}/requests`, {}); reloadAll(); })}>
            Ask to join
          </button>
        )}
      </form>
      <ErrorBox error={invite.error ?? join.error} />
      <h3>Invitations and requests</h3>
      {requests.error ? (
        <p className="muted">{requests.error}</p>
      ) : !requests.data ? (
        <Loading />
      ) : (
        <RequestTable rows={requests.data.items} scope="team" emails={emails} onChange={reloadAll} />
      )}
    </section>
  );
}

function MyRequests() {
  const s = useSession();
  const mine = useLoad((sig) => get<{ env_requests: RequestRow[]; team_requests: RequestRow[] }>(`/me/requests?status=pending`, sig), []);
  if (!mine.data) return <ErrorBox error={mine.error} />;
  const emails = new Map([[s.me.id, s.me.email]]);
  const reload = () => {
    mine.reload();
    s.reload();
  };
  return (
    <section className="card">
      <h2>My pending requests</h2>
      <h3>Teams</h3>
      <RequestTable rows={mine.data.team_requests} scope="team" emails={emails} onChange={reload} />
      <h3>Envs</h3>
      <RequestTable rows={mine.data.env_requests} scope="env" emails={emails} onChange={reload} />
    </section>
  );
}

export function TeamsPage() {
  const s = useSession();
  const [selected, setSelected] = useState<string | null>(null);
  const teamId = selected ?? s.team?.id ?? null;
  return (
    <div className="page">
      <h1>Teams</h1>
      <p className="muted">
        Env <b>{s.env?.name ?? "none"}</b>
        {s.env?.role ? ` — your role: ${s.env.role}` : s.me.is_superuser ? " — superuser" : ""}
      </p>
      <div className="split">
        <div className="list">
          {s.teams.map((t) => (
            <button key={t.id} className={`list-item ${t.id === teamId ? "active" : ""}`} onClick={() => setSelected(t.id)}>
              {t.name}
            </button>
          ))}
          {s.teams.length === 0 && <p className="muted">No teams in this env yet.</p>}
        </div>
        <div className="grow">{teamId && s.teams.some((t) => t.id === teamId) && <TeamPanel key={teamId} teamId={teamId} />}</div>
      </div>
      <NewTeam />
      <NewEnv />
      <MyRequests />
    </div>
  );
}
