import { useState } from "react";
import { login } from "../api";
import { ErrorBox, useSubmit } from "../components";

export function LoginPage({ onLogin }: { onLogin: () => void }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const { busy, error, run } = useSubmit();
  return (
    <div className="center">
      <form
        className="card login"
        onSubmit={(e) => {
          e.preventDefault();
          run(async () => {
            await login(email, password);
            onLogin();
          });
        }}
      >
        <h1>≋ Sluice</h1>
        <p className="muted">Sign in to manage your pipelines.</p>
        <label>
          Email
          <input type="email" autoComplete="username" value={email} onChange={(e) => setEmail(e.target.value)} required />
        </label>
        <label>
          Password
          <input type="password" autoComplete="current-password" value={password} onChange={(e) => setPassword(e.target.value)} required />
        </label>
        <ErrorBox error={error} />
        <button type="submit" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </div>
  );
}
