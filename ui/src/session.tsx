// Who is logged in, which env is active (the user's active_env_id) and which
// team the team-scoped pages work in (remembered in localStorage).
import { createContext, useCallback, useContext, useEffect, useState, type ReactNode } from "react";
import { get, patch } from "./api";

export interface Env {
  id: string;
  name: string | null;
  role: string | null;
}
export interface Team {
  id: string;
  name: string | null;
  description: string | null;
  env_id: string | null;
}
export interface Me {
  id: string;
  email: string;
  is_superuser: boolean;
  active_env_id: string | null;
  envs: { env_id: string; name: string | null; role: string }[];
  teams: { team_id: string; name: string | null; env_id: string | null; admin: boolean }[];
}

interface Session {
  me: Me;
  envs: Env[];
  env: Env | null;
  teams: Team[];
  team: Team | null;
  setEnv: (id: string) => Promise<void>;
  setTeam: (id: string) => void;
  reload: () => Promise<void>;
}

const Ctx = createContext<Session | null>(null);
const TEAM_KEY = "sluice.team";

export function useSession(): Session {
  const s = useContext(Ctx);
  if (!s) throw new Error("no session");
  return s;
}

export function SessionProvider({ children, fallback }: { children: ReactNode; fallback: ReactNode }) {
  const [me, setMe] = useState<Me | null>(null);
  const [envs, setEnvs] = useState<Env[]>([]);
  const [teams, setTeams] = useState<Team[]>([]);
  const [teamId, setTeamId] = useState<string | null>(() => localStorage.getItem(TEAM_KEY));

  const reload = useCallback(async () => {
    const m = await get<Me>("/me");
    const e = await get<{ items: Env[] }>("/envs?limit=200");
    let active = m.active_env_id;
    // No preference yet: the first env one can see becomes the active one.
    if (!active && e.items.length > 0) {
      active = e.items[0].id;
      await patch("/me", { active_env_id: active });
      m.active_env_id = active;
    }
    const t = active ? await get<{ items: Team[] }>(`/envs/${active}/teams?limit=200`) : { items: [] };
    setMe(m);
    setEnvs(e.items);
    setTeams(t.items);
  }, []);

  useEffect(() => {
    reload().catch(() => setMe(null));
  }, [reload]);

  if (!me) return <>{fallback}</>;
  const env = envs.find((e) => e.id === me.active_env_id) ?? null;
  const team = teams.find((t) => t.id === teamId) ?? teams[0] ?? null;
  const value: Session = {
    me,
    envs,
    env,
    teams,
    team,
    reload,
    setEnv: async (id) => {
      await patch("/me", { active_env_id: id });
      await reload();
    },
    setTeam: (id) => {
      localStorage.setItem(TEAM_KEY, id);
      setTeamId(id);
    },
  };
  return <Ctx.Provider value={value}>{children}</Ctx.Provider>;
}
