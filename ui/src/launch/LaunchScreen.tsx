import { useEffect, useState } from 'react';

import { appError, type AppError, type Diagnostic, type Host, type RunStart } from '../api';
import { navigate } from '../app/route';
import './launch.css';

/** How many recent workflows are remembered. */
const RECENT_LIMIT = 8;
const RECENT_KEY = 'weft.recentWorkflows';
/** Validation waits this long after the last keystroke. */
const VALIDATE_DELAY_MS = 300;

/** The workflows launched most recently, newest first. */
export function recentWorkflows(storage: Pick<Storage, 'getItem'> = localStorage): string[] {
  try {
    const parsed: unknown = JSON.parse(storage.getItem(RECENT_KEY) ?? '[]');
    return Array.isArray(parsed) ? parsed.filter((p): p is string => typeof p === 'string') : [];
  } catch {
    return [];
  }
}

/** Puts `path` first among the recent workflows. */
export function remember(path: string, storage: Pick<Storage, 'getItem' | 'setItem'> = localStorage) {
  const next = [path, ...recentWorkflows(storage).filter((p) => p !== path)].slice(0, RECENT_LIMIT);
  storage.setItem(RECENT_KEY, JSON.stringify(next));
}

/** The directory part of an absolute path (`/a/b/flow.fabro` → `/a/b`). */
export function dirname(path: string): string {
  const cut = path.lastIndexOf('/');
  return cut > 0 ? path.slice(0, cut) : '/';
}

/** `NAME=VALUE` lines as inputs; a line without `=` is an error. */
export function parseInputs(text: string): { inputs: Record<string, string>; error?: string } {
  const inputs: Record<string, string> = {};
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (!line) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) return { inputs, error: `line ${i + 1}: expected NAME=VALUE` };
    inputs[line.slice(0, eq).trim()] = line.slice(eq + 1);
  }
  return { inputs };
}

/** The request to start `path` with the form's values. */
export function startRequest(form: {
  path: string;
  workDir: string;
  goal: string;
  inputs: Record<string, string>;
  autoApprove: boolean;
  dryRun: boolean;
  model: string;
}): RunStart {
  return {
    workflow: { path: form.path },
    work_dir: form.workDir || dirname(form.path),
    goal: form.goal.trim() || null,
    inputs: form.inputs,
    dry_run: form.dryRun,
    auto_approve: form.autoApprove,
    labels: ['app'],
    model: form.model.trim() ? { model: form.model.trim() } : {},
  };
}

type Validation =
  | { state: 'idle' }
  | { state: 'checking' }
  | { state: 'done'; diagnostics: Diagnostic[] }
  | { state: 'failed'; message: string };

/** Choose a workflow, see its problems, set goal and inputs, start it. */
export function LaunchScreen({ host }: { host: Host }) {
  const [path, setPath] = useState('');
  const [workDir, setWorkDir] = useState('');
  const [goal, setGoal] = useState('');
  const [inputsText, setInputsText] = useState('');
  const [model, setModel] = useState('');
  const [autoApprove, setAutoApprove] = useState(false);
  const [dryRun, setDryRun] = useState(false);
  const [validation, setValidation] = useState<Validation>({ state: 'idle' });
  const [startError, setStartError] = useState<AppError | null>(null);
  const [starting, setStarting] = useState(false);
  const [recent, setRecent] = useState<string[]>(() => recentWorkflows());
  const [models, setModels] = useState<string[]>([]);

  // Suggestions for the model field; without them the name is typed freely.
  useEffect(() => {
    let live = true;
    host.modelNames().then(
      (names) => live && setModels(names),
      () => {},
    );
    return () => {
      live = false;
    };
  }, [host]);

  useEffect(() => {
    if (!path.trim()) {
      setValidation({ state: 'idle' });
      return;
    }
    let live = true;
    setValidation({ state: 'checking' });
    const timer = setTimeout(() => {
      host.validateWorkflow(path.trim()).then(
        (diagnostics) => live && setValidation({ state: 'done', diagnostics }),
        (e: unknown) => live && setValidation({ state: 'failed', message: appError(e).message }),
      );
    }, VALIDATE_DELAY_MS);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [host, path]);

  const { inputs, error: inputsError } = parseInputs(inputsText);
  const errors =
    validation.state === 'done' ? validation.diagnostics.filter((d) => d.severity === 'error') : [];
  const canStart =
    validation.state === 'done' && errors.length === 0 && !inputsError && !starting;

  const start = async () => {
    setStarting(true);
    setStartError(null);
    const request = startRequest({ path: path.trim(), workDir, goal, inputs, autoApprove, dryRun, model });
    try {
      const started = await host.runStart(request);
      remember(path.trim());
      setRecent(recentWorkflows());
      navigate({ screen: 'run', run: started.run_id });
    } catch (e) {
      setStartError(appError(e));
    } finally {
      setStarting(false);
    }
  };

  const startDaemonAndRetry = async () => {
    try {
      await host.daemonStart();
      await start();
    } catch (e) {
      setStartError(appError(e));
    }
  };

  return (
    <section className="launch" aria-labelledby="launch-title">
      <h2 id="launch-title">Launch a workflow</h2>
      <label className="launch__field">
        <span>Workflow file</span>
        <input
          name="workflow"
          value={path}
          placeholder="/path/to/workflow.fabro"
          spellCheck={false}
          onChange={(e) => setPath(e.target.value)}
        />
      </label>
      {host.pickWorkflow && (
        <button
          type="button"
          className="launch__browse"
          onClick={() => {
            void host.pickWorkflow?.().then((chosen) => chosen && setPath(chosen));
          }}
        >
          Browse…
        </button>
      )}
      {recent.length > 0 && (
        <div className="launch__recent" aria-label="Recent workflows">
          {recent.map((p) => (
            <button key={p} type="button" className="link" onClick={() => setPath(p)}>
              {p}
            </button>
          ))}
        </div>
      )}
      <Diagnostics validation={validation} />
      <label className="launch__field">
        <span>Goal (optional; replaces the graph's goal)</span>
        <textarea name="goal" rows={2} value={goal} onChange={(e) => setGoal(e.target.value)} />
      </label>
      <label className="launch__field">
        <span>Inputs, one NAME=VALUE per line</span>
        <textarea
          name="inputs"
          rows={3}
          value={inputsText}
          spellCheck={false}
          onChange={(e) => setInputsText(e.target.value)}
        />
      </label>
      {inputsError && (
        <p className="error" role="alert">
          {inputsError}
        </p>
      )}
      <div className="launch__row">
        <label className="launch__field">
          <span>Working directory</span>
          <input
            name="work_dir"
            value={workDir}
            placeholder={path ? dirname(path.trim()) : 'the workflow file’s folder'}
            spellCheck={false}
            onChange={(e) => setWorkDir(e.target.value)}
          />
        </label>
        <label className="launch__field">
          <span>Model (optional)</span>
          <input
            name="model"
            value={model}
            placeholder="e.g. sonnet"
            list="launch-models"
            onChange={(e) => setModel(e.target.value)}
          />
          <datalist id="launch-models" data-testid="launch-models">
            {models.map((name) => (
              <option key={name} value={name} />
            ))}
          </datalist>
        </label>
      </div>
      <div className="launch__row">
        <label>
          <input type="checkbox" checked={autoApprove} onChange={(e) => setAutoApprove(e.target.checked)} /> Approve
          every gate automatically
        </label>
        <label>
          <input type="checkbox" checked={dryRun} onChange={(e) => setDryRun(e.target.checked)} /> Dry run (simulate
          model calls)
        </label>
      </div>
      <button type="button" className="primary" disabled={!canStart} onClick={() => void start()}>
        {starting ? 'Starting…' : 'Start run'}
      </button>
      {startError && (
        <div className="error" role="alert">
          {startError.code === 'daemon.not_running' ? (
            <>
              The Weft daemon is not running, and runs execute in it.{' '}
              <button type="button" onClick={() => void startDaemonAndRetry()}>
                Start the daemon and launch
              </button>
            </>
          ) : (
            startError.message
          )}
        </div>
      )}
    </section>
  );
}

/** The workflow's validation result, inline under the file field. */
function Diagnostics({ validation }: { validation: Validation }) {
  switch (validation.state) {
    case 'idle':
      return null;
    case 'checking':
      return (
        <p className="muted" aria-busy="true">
          Checking the workflow…
        </p>
      );
    case 'failed':
      return (
        <p className="error" role="alert">
          {validation.message}
        </p>
      );
    case 'done': {
      // Warnings do not stop a run: say it is valid above them.
      const errors = validation.diagnostics.filter((d) => d.severity === 'error').length;
      const warnings = validation.diagnostics.length - errors;
      if (validation.diagnostics.length === 0) {
        return <p className="launch__ok">The workflow is valid.</p>;
      }
      return (
        <>
          {errors === 0 && (
            <p className="launch__ok">
              The workflow is valid. {warnings === 1 ? '1 warning:' : `${warnings} warnings:`}
            </p>
          )}
          <DiagnosticList diagnostics={validation.diagnostics} />
        </>
      );
    }
  }
}

function DiagnosticList({ diagnostics }: { diagnostics: Diagnostic[] }) {
  return (
        <ul className="launch__diagnostics" aria-label="Problems in the workflow">
          {diagnostics.map((d, i) => (
            <li key={i} data-severity={d.severity}>
              <strong>{d.severity}</strong>
              {d.span ? ` line ${d.span.line}:${d.span.column}` : ''} — {d.message}
              {d.hint && <div className="muted">hint: {d.hint}</div>}
            </li>
          ))}
        </ul>
  );
}
