// The API client: bearer tokens kept in sessionStorage, one refresh attempt
// on 401 (shared by concurrent requests: refresh tokens are single-use), and
// errors carrying the API's own message ({"error":{code,message}}).

export class ApiError extends Error {
  constructor(
    public status: number,
    public code: string,
    message: string,
  ) {
    super(message);
  }
}

const TOKENS = "sluice.tokens";

interface Tokens {
  access_token: string;
  refresh_token: string;
}

function load(): Tokens | null {
  try {
    return JSON.parse(sessionStorage.getItem(TOKENS) ?? "null");
  } catch {
    return null;
  }
}

export function saveTokens(t: Tokens | null) {
  if (t) sessionStorage.setItem(TOKENS, JSON.stringify({ access_token: t.access_token, refresh_token: t.refresh_token }));
  else sessionStorage.removeItem(TOKENS);
}

export function loggedIn() {
  return load() !== null;
}

let onUnauthenticated: () => void = () => {};
export function setUnauthenticatedHandler(f: () => void) {
  onUnauthenticated = f;
}

async function send(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<[Response, string | null]> {
  const headers: Record<string, string> = {};
  const t = load();
  if (t) headers["Authorization"] = `Bearer ${t.access_token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(`/api/v1${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  return [res, t?.access_token ?? null];
}

// Refresh tokens are single-use: the server answers each refresh with a new
// pair, and presenting a spent refresh token again ends the whole session.
// So one refresh at a time (concurrent 401s share it), the new pair is
// stored before anything else runs, and a request that failed with an
// access token already replaced just retries with the new one.
let refreshing: Promise<boolean> | null = null;

async function doRefresh(): Promise<boolean> {
  const t = load();
  if (!t) return false;
  const res = await fetch("/api/v1/auth/refresh", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ refresh_token: t.refresh_token }),
  });
  if (!res.ok) return false;
  saveTokens(await res.json());
  return true;
}

async function refresh(failedAccessToken: string | null): Promise<boolean> {
  const t = load();
  if (!t) return false;
  if (failedAccessToken !== null && t.access_token !== failedAccessToken) return true;
  if (!refreshing) {
    refreshing = doRefresh().finally(() => {
      refreshing = null;
    });
  }
  return refreshing;
}

export async function api<T = any>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  let [res, used] = await send(method, path, body, signal);
  // A logout with an expired access token still has to reach the server,
  // or the session would outlive it.
  const renewable = !path.startsWith("/auth/") || path === "/auth/logout";
  if (res.status === 401 && renewable && (await refresh(used))) {
    [res] = await send(method, path, body, signal);
  }
  if (res.status === 401 && !path.startsWith("/auth/")) {
    saveTokens(null);
    onUnauthenticated();
  }
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  let json: any = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (!res.ok) {
    const e = json?.error;
    throw new ApiError(res.status, e?.code ?? "http_" + res.status, e?.message ?? `${res.status} ${res.statusText}`);
  }
  return json as T;
}

export const get = <T = any>(p: string, signal?: AbortSignal) => api<T>("GET", p, undefined, signal);
export const post = <T = any>(p: string, body?: unknown, signal?: AbortSignal) => api<T>("POST", p, body ?? {}, signal);
export const patch = <T = any>(p: string, body: unknown) => api<T>("PATCH", p, body);
export const del = <T = any>(p: string) => api<T>("DELETE", p);

export async function login(email: string, password: string) {
  const res = await api("POST", "/auth/login", { email, password });
  saveTokens(res);
  return res;
}

export async function logout() {
  try {
    await api("POST", "/auth/logout", {});
  } catch {
    /* the session ends here either way */
  }
  saveTokens(null);
}

export interface Page<T> {
  items: T[];
  next_offset: number | null;
}

export function errorText(e: unknown): string {
  if (e instanceof ApiError) return e.message;
  if (e instanceof Error) return e.message;
  return String(e);
}
