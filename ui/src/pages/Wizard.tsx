// The pipeline wizard: source → tables → target → mapping, then one
// POST /teams/{team}/pipeline-wizard that creates everything or nothing.
import { useState } from "react";
import { get, post } from "../api";
import { ErrorBox, Loading, useLoad, useSubmit } from "../components";
import { navigate } from "../router";
import { useSession } from "../session";

interface ConnectorType {
  id: string;
  way: "source" | "target";
  title: string;
  configuration_schema: {
    properties: Record<string, { type: string; description: string; secret?: boolean; default?: unknown; enum?: string[] }>;
    required: string[];
  };
}
interface Connector {
  id: string;
  name: string;
  type: string;
  way: string;
}

interface ConnectorChoice {
  existing: string; // connector id, or "" for a new one
  name: string;
  type: string;
  config: Record<string, string>;
}

const STEPS = ["Source", "Tables", "Target", "Mapping"] as const;

// Connection fields in the order people think of them, required first.
const FIELD_ORDER = ["host", "port", "database", "user", "password", "url", "topic", "directory"];
function fieldRank(key: string, required: Set<string>) {
  const i = FIELD_ORDER.indexOf(key);
  if (i >= 0) return i;
  if (key === "shards") return 1000;
  return required.has(key) ? 100 : 500;
}

function ConfigFields({ type, values, onChange }: { type: ConnectorType; values: Record<string, string>; onChange: (v: Record<string, string>) => void }) {
  const props = type.configuration_schema.properties;
  const required = new Set(type.configuration_schema.required);
  return (
    <div className="fields">
      {Object.entries(props)
        .sort(([a], [b]) => fieldRank(a, required) - fieldRank(b, required) || a.localeCompare(b))
        .map(([key, p]) => {
        const label = `${key}${required.has(key) ? " *" : ""}`;
        const set = (v: string) => onChange({ ...values, [key]: v });
        if (p.type === "object") return null; // headers etc.: set through the API
        return (
          <label key={key} title={p.description}>
            {label}
            {p.enum ? (
              <select aria-label={key} value={values[key] ?? ""} onChange={(e) => set(e.target.value)}>
                <option value="">{p.default !== undefined ? `default (${p.default})` : "—"}</option>
                {p.enum.map((o) => (
                  <option key={o}>{o}</option>
                ))}
              </select>
            ) : p.type === "boolean" ? (
              <select aria-label={key} value={values[key] ?? ""} onChange={(e) => set(e.target.value)}>
                <option value="">—</option>
                <option>true</option>
                <option>false</option>
              </select>
            ) : (
              <input
                aria-label={key}
                type={p.secret ? "password" : p.type === "integer" ? "number" : "text"}
                autoComplete={p.secret ? "new-password" : "off"}
                placeholder={p.default !== undefined ? String(p.default) : p.description}
                value={values[key] ?? ""}
                onChange={(e) => set(e.target.value)}
              />
            )}
          </label>
        );
      })}
    </div>
  );
}

// Only what the user filled in is sent; the API applies defaults and says
// what is missing or wrong.
function configBody(type: ConnectorType | undefined, values: Record<string, string>) {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(values)) {
    if (v === "") continue;
    const t = type?.configuration_schema.properties[k]?.type;
    out[k] = t === "integer" ? Number(v) : t === "boolean" ? v === "true" : v;
  }
  return out;
}

function ConnectorStep({ way, types, connectors, choice, setChoice }: { way: "source" | "target"; types: ConnectorType[]; connectors: Connector[]; choice: ConnectorChoice; setChoice: (c: ConnectorChoice) => void }) {
  const mine = connectors.filter((c) => c.way === way);
  const ofWay = types.filter((t) => t.way === way);
  const type = ofWay.find((t) => t.id === choice.type);
  return (
    <div>
      <label>
        {way === "source" ? "Source connector" : "Target connector"}
        <select aria-label={`${way} connector`} value={choice.existing} onChange={(e) => setChoice({ ...choice, existing: e.target.value })}>
          <option value="">New {way} connector…</option>
          {mine.map((c) => (
            <option key={c.id} value={c.id}>
              {c.name} ({c.type})
            </option>
          ))}
        </select>
      </label>
      {!choice.existing && (
        <>
          <label>
            Name
            <input aria-label={`${way} name`} value={choice.name} onChange={(e) => setChoice({ ...choice, name: e.target.value })} />
          </label>
          <label>
            Type
            <select aria-label={`${way} type`} value={choice.type} onChange={(e) => setChoice({ ...choice, type: e.target.value, config: {} })}>
              {ofWay.map((t) => (
                <option key={t.id} value={t.id}>
                  {t.title}
                </option>
              ))}
            </select>
          </label>
          {type && <ConfigFields type={type} values={choice.config} onChange={(config) => setChoice({ ...choice, config })} />}
        </>
      )}
    </div>
  );
}

interface TableRow {
  schema: string;
  table: string;
  target: string;
}

// GET /connectors/{id}/tables: what an existing source could capture.
interface ListedTable {
  name: string;
  schema: string;
  table: string;
  has_primary_key: boolean;
}

// The table picker of an existing source: its tables, read from the source,
// each a checkbox that adds or removes the table's row.
function TablePicker({ listed, error, tables, setTables }: { listed: ListedTable[] | undefined; error: string | null; tables: TableRow[]; setTables: (t: TableRow[]) => void }) {
  if (error) return <ErrorBox error={`The source's tables could not be listed: ${error}`} />;
  if (!listed) return <Loading what="the source's tables" />;
  if (listed.length === 0) return <p className="muted">The source shows no tables to this connector's user.</p>;
  const chosen = (l: ListedTable) => tables.some((t) => t.schema === l.schema && t.table === l.table);
  const toggle = (l: ListedTable, on: boolean) => {
    const rest = tables.filter((t) => t.table.trim() && !(t.schema === l.schema && t.table === l.table));
    const next = on ? [...rest, { schema: l.schema, table: l.table, target: "" }] : rest;
    setTables(next.length ? next : [{ schema: l.schema, table: "", target: "" }]);
  };
  return (
    <ul className="table-picker" aria-label="source tables">
      {listed.map((l) => (
        <li key={l.name}>
          <label>
            <input type="checkbox" aria-label={l.name} checked={chosen(l)} onChange={(e) => toggle(l, e.target.checked)} /> {l.name}
            {!l.has_primary_key && <span className="muted"> (no primary key)</span>}
          </label>
        </li>
      ))}
    </ul>
  );
}

export function WizardPage() {
  const s = useSession();
  const team = s.team;
  const types = useLoad((sig) => get<{ items: ConnectorType[] }>("/connector-types", sig), []);
  const connectors = useLoad((sig) => (team ? get<{ items: Connector[] }>(`/teams/${team.id}/connectors?limit=200`, sig) : Promise.resolve({ items: [] })), [team?.id]);
  const [step, setStep] = useState(0);
  const [source, setSource] = useState<ConnectorChoice>({ existing: "", name: "", type: "postgresql-source", config: {} });
  const [target, setTarget] = useState<ConnectorChoice>({ existing: "", name: "", type: "postgresql-target", config: {} });
  const [tables, setTables] = useState<TableRow[]>([{ schema: "public", table: "", target: "" }]);
  const [name, setName] = useState("");
  const [unique, setUnique] = useState(true);
  const [errorTables, setErrorTables] = useState(false);
  const [startNow, setStartNow] = useState(true);
  const { busy, error, run } = useSubmit();
  // An existing source lists its tables; a new one is not saved yet, so its
  // tables are typed in.
  const listed = useLoad(
    (sig) => (source.existing ? get<{ items: ListedTable[] }>(`/connectors/${source.existing}/tables`, sig).then((r) => ({ id: source.existing, items: r.items })) : Promise.resolve(null)),
    [source.existing],
  );

  if (!team) return <p className="muted">Choose a team first.</p>;
  if (!types.data || !connectors.data) return <><ErrorBox error={types.error ?? connectors.error} /><Loading /></>;
  const allTypes = types.data.items;

  // A MySQL/MariaDB source names its tables by database (it has no schemas):
  // the first column is the connector's database.
  const sourceType = source.existing ? connectors.data.items.find((c) => c.id === source.existing)?.type ?? "" : source.type;
  const mysql = sourceType === "mysql-source" || sourceType === "mysql";
  const namespace = mysql ? "database" : "schema";
  const defaultNamespace = mysql ? (source.existing ? "" : source.config.database ?? "") : "public";
  const connectorBody = (c: ConnectorChoice) =>
    c.existing ? undefined : { name: c.name, type: c.type, configuration: configBody(allTypes.find((t) => t.id === c.type), c.config) };

  const submit = () =>
    run(async () => {
      const body: Record<string, unknown> = {
        name,
        tables: tables
          .filter((t) => t.table.trim())
          .map((t) => ({
            // MySQL: the namespace is the connector's database (source_schema stays NULL).
            schema: mysql ? undefined : t.schema.trim() || undefined,
            table: t.table.trim(),
            target_table_name: t.target.trim() || undefined,
          })),
        requires_unique_destination: unique,
        error_table_enabled: errorTables,
      };
      if (source.existing) body.source_connector_id = source.existing;
      else body.source = connectorBody(source);
      if (target.existing) body.target_connector_id = target.existing;
      else body.target = connectorBody(target);
      const res = await post(`/teams/${team.id}/pipeline-wizard`, body);
      if (startNow) {
        try {
          await post(`/pipelines/${res.pipeline.id}/start`);
        } catch {
          /* the detail page shows the state and the start button */
        }
      }
      navigate(`/pipelines/${res.pipeline.id}`);
    });

  return (
    <div className="page wizard">
      <h1>New pipeline</h1>
      <ol className="steps">
        {STEPS.map((label, i) => (
          <li key={label} className={i === step ? "active" : i < step ? "done" : ""}>
            <button className="ghost" onClick={() => setStep(i)}>
              {i + 1}. {label}
            </button>
          </li>
        ))}
      </ol>
      <section className="card">
        {step === 0 && <ConnectorStep way="source" types={allTypes} connectors={connectors.data.items} choice={source} setChoice={setSource} />}
        {step === 1 && (
          <div>
            <p className="muted">Tables captured from the source ({namespace} and table name).</p>
            {source.existing && (
              <TablePicker listed={listed.data?.id === source.existing ? listed.data.items : undefined} error={listed.error} tables={tables} setTables={setTables} />
            )}
            {tables.map((t, i) => (
              <div className="row" key={i}>
                <input aria-label={`${namespace} ${i + 1}`} placeholder={namespace} disabled={mysql} value={mysql ? defaultNamespace : t.schema} onChange={(e) => setTables(tables.map((x, j) => (j === i ? { ...x, schema: e.target.value } : x)))} />
                <input aria-label={`table ${i + 1}`} placeholder="table" value={t.table} onChange={(e) => setTables(tables.map((x, j) => (j === i ? { ...x, table: e.target.value } : x)))} />
                <button className="ghost small" onClick={() => setTables(tables.filter((_, j) => j !== i))} disabled={tables.length === 1}>
                  remove
                </button>
              </div>
            ))}
            <button className="secondary small" onClick={() => setTables([...tables, { schema: defaultNamespace, table: "", target: "" }])}>
              Add table
            </button>
          </div>
        )}
        {step === 2 && <ConnectorStep way="target" types={allTypes} connectors={connectors.data.items} choice={target} setChoice={setTarget} />}
        {step === 3 && (
          <div>
            <label>
              Pipeline name
              <input aria-label="Pipeline name" value={name} onChange={(e) => setName(e.target.value)} />
            </label>
            <table>
              <thead>
                <tr>
                  <th>Source table</th>
                  <th>Target table</th>
                </tr>
              </thead>
              <tbody>
                {tables
                  .filter((t) => t.table.trim())
                  .map((t) => (
                    <tr key={t.schema + "." + t.table}>
                      <td>
                        {((mysql ? defaultNamespace : t.schema) || defaultNamespace) && `${(mysql ? defaultNamespace : t.schema) || defaultNamespace}.`}
                        {t.table}
                      </td>
                      <td>
                        <input
                          aria-label={`target table for ${t.table}`}
                          placeholder={t.table}
                          value={t.target}
                          onChange={(e) => setTables(tables.map((x) => (x === t ? { ...x, target: e.target.value } : x)))}
                        />
                      </td>
                    </tr>
                  ))}
              </tbody>
            </table>
            <label className="check">
              <input type="checkbox" checked={unique} onChange={(e) => setUnique(e.target.checked)} /> Requires a unique destination
            </label>
            <label className="check">
              <input type="checkbox" checked={errorTables} onChange={(e) => setErrorTables(e.target.checked)} /> Write refused rows to an error table
            </label>
            <label className="check">
              <input type="checkbox" checked={startNow} onChange={(e) => setStartNow(e.target.checked)} /> Start it now
            </label>
          </div>
        )}
        <ErrorBox error={error} />
        <div className="wizard-nav">
          <button className="secondary" disabled={step === 0} onClick={() => setStep(step - 1)}>
            Back
          </button>
          {step < STEPS.length - 1 ? (
            <button onClick={() => setStep(step + 1)}>Next</button>
          ) : (
            <button onClick={submit} disabled={busy}>
              {busy ? "Creating…" : "Create pipeline"}
            </button>
          )}
        </div>
      </section>
    </div>
  );
}
