import { StrictMode, useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import "./styles.css";
import { loggedIn, logout, setUnauthenticatedHandler } from "./api";
import { Link, match, navigate, useLocation } from "./router";
import { SessionProvider, useSession } from "./session";
import { Loading } from "./components";
import { LoginPage } from "./pages/Login";
import { TeamsPage } from "./pages/Teams";
import { PipelinesPage } from "./pages/Pipelines";
import { WizardPage } from "./pages/Wizard";
import { PipelineDetailPage } from "./pages/PipelineDetail";
import { MonitoringPage } from "./pages/Monitoring";
import { MetricsPage } from "./pages/Metrics";
import { WorkspacePage } from "./pages/Workspace";
import { BackfillsPage } from "./pages/Backfills";

const NAV: [string, string][] = [
  ["/pipelines", "Pipelines"],
  ["/monitoring", "Monitoring"],
  ["/metrics", "Metrics"],
  ["/workspace", "Workspace"],
  ["/backfills", "Backfills"],
  ["/teams", "Teams"],
];

function Shell() {
  const { path } = useLocation();
  const s = useSession();
  const page = (() => {
    let m;
    if (path === "/" || path === "/pipelines") return <PipelinesPage />;
    if (path === "/pipelines/new") return <WizardPage />;
    if ((m = match("/pipelines/:id", path))) return <PipelineDetailPage id={m.id} />;
    if (path === "/monitoring") return <MonitoringPage />;
    if (path === "/metrics") return <MetricsPage />;
    if (path === "/workspace") return <WorkspacePage />;
    if (path === "/backfills") return <BackfillsPage />;
    if (path === "/teams") return <TeamsPage />;
    return <div className="card">No page at {path}. <Link to="/pipelines">Go to pipelines</Link></div>;
  })();
  return (
    <div className="shell">
      <header className="topbar">
        <Link to="/pipelines" className="brand">
          ≋ Sluice
        </Link>
        <label className="switcher">
          Env
          <select
            aria-label="Env"
            value={s.env?.id ?? ""}
            onChange={(e) => s.setEnv(e.target.value)}
          >
            {s.envs.length === 0 && <option value="">no env</option>}
            {s.envs.map((e) => (
              <option key={e.id} value={e.id}>
                {e.name ?? e.id}
              </option>
            ))}
          </select>
        </label>
        <label className="switcher">
          Team
          <select aria-label="Team" value={s.team?.id ?? ""} onChange={(e) => s.setTeam(e.target.value)}>
            {s.teams.length === 0 && <option value="">no team</option>}
            {s.teams.map((t) => (
              <option key={t.id} value={t.id}>
                {t.name ?? t.id}
              </option>
            ))}
          </select>
        </label>
        <span className="spacer" />
        <span className="muted">{s.me.email}</span>
        <button
          className="ghost"
          onClick={async () => {
            await logout();
            location.href = "/login";
          }}
        >
          Log out
        </button>
      </header>
      <div className="body">
        <nav className="sidenav">
          {NAV.map(([to, label]) => (
            <Link key={to} to={to} className={path.startsWith(to) || (to === "/pipelines" && path === "/") ? "active" : ""}>
              {label}
            </Link>
          ))}
        </nav>
        <main>{page}</main>
      </div>
    </div>
  );
}

function App() {
  const { path } = useLocation();
  const [authed, setAuthed] = useState(loggedIn());
  useEffect(() => {
    setUnauthenticatedHandler(() => {
      setAuthed(false);
      navigate("/login", true);
    });
  }, []);
  if (!authed || path === "/login") {
    return (
      <LoginPage
        onLogin={() => {
          setAuthed(true);
          const next = new URLSearchParams(location.search).get("next");
          navigate(next && next.startsWith("/") ? next : "/pipelines", true);
        }}
      />
    );
  }
  return (
    <SessionProvider fallback={<div className="center"><Loading /></div>}>
      <Shell />
    </SessionProvider>
  );
}

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
