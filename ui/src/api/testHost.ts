import { EMPTY, type Fixtures } from './fixtures';
import { recorded } from './fixtures/recorded';
import { syntheticRunCount, withSyntheticRuns } from './fixtures/synthetic';
import { COMMAND_KINDS, METHOD_COMMANDS, type CommandMethods } from './commands';
import type { AnswerBy, AppError, AppSettings, ArtifactContent, Changes, ChangesState, Code, Event, Host, LogMatch, LogStream, QuestionRecord, RunList, RunSummary, Spending } from './host';

/**
 * The version the test host reports. Deliberately not a real release number,
 * so a test that sees it knows the page talked to the test host.
 */
export const TEST_APP_VERSION = '0.0.0-test';

/** A rejection as the Tauri host's: an `AppError` with a real `Code`. */
function fail(code: Code, message: string): Promise<never> {
  return Promise.reject({ code, message } satisfies AppError);
}

function notFound(what: string): Promise<never> {
  return fail('run.not_found', `no run matches ${what}`);
}

function artifactNotFound(run: string, path: string): Promise<never> {
  return fail('artifact.not_found', `run ${run} captured no artifact \`${path}\``);
}

/** Spending with nothing spent. */
export function emptySpending(): Spending {
  return {
    total: { stages: 0, calls: 0, input_tokens: 0, output_tokens: 0, cost: 0, unpriced_calls: 0 },
    days: [],
    models: [],
    runs: [],
    runs_total: 0,
    stages: [],
  };
}

/** A patch read that found no patch, for `state`. */
function noChanges(state: ChangesState): Changes {
  return { state, patch: '', size: 0, truncated: false, incomplete: false };
}

/**
 * What the test host answers for a command it does not model, so that a new
 * command needs nothing here: a live command finds no daemon
 * (`daemon.not_running`, as the app with weftd stopped); any other is
 * refused as `test.unmodelled`, naming the command, until a test needs it
 * modelled.
 */
export function unmodelled(): CommandMethods {
  const methods = Object.entries(METHOD_COMMANDS).map(([method, command]) => {
    const answer =
      COMMAND_KINDS[command] === 'live'
        ? () => fail('daemon.not_running', 'the test host has no daemon')
        : () =>
            Promise.reject({
              code: 'test.unmodelled',
              message: `the test host does not model \`${command}\`: add it to ui/src/api/testHost.ts`,
            });
    return [method, answer];
  });
  return Object.fromEntries(methods) as unknown as CommandMethods;
}

/**
 * A backend over fixed fixtures, used when the UI runs in a plain browser:
 * history queries are answered from `fixtures`; live actions change them in
 * memory and notify subscribers, as weftd would; commands it does not model
 * get the answers of `unmodelled`.
 */
export function makeTestHost(fixtures: Fixtures = EMPTY): Host {
  return { ...unmodelled(), ...modelled(fixtures) };
}

/** What the test host answers itself: the commands the browser tests use. */
function modelled(fixtures: Fixtures): Partial<CommandMethods> & Omit<Host, keyof CommandMethods> {
  const listeners = new Set<{ run: string | null; onEvent: (e: Event) => void }>();
  let forks = 0;
  const find = (run: string) =>
    fixtures.views.find((v) => v.run.id.toLowerCase().startsWith(run.toLowerCase()));
  // The app's settings, in memory as app.json would hold them.
  let settings: AppSettings = { keep_in_tray: true, start_at_login: false };
  return {
    appVersion: () => Promise.resolve(TEST_APP_VERSION),
    initialRoute: () => Promise.resolve(null),
    appSettings: () => Promise.resolve({ ...settings }),
    setAppSettings: (next) => {
      settings = { ...next };
      return Promise.resolve({ ...settings });
    },

    runsPage: (q) => {
      const runs = recordedRuns(fixtures, q) ?? unfilteredRuns(fixtures, q);
      if (!runs) {
        return Promise.reject({
          code: 'test.unrecorded_query',
          message: `no recorded page for ${JSON.stringify(q)}: record it in tests/tests/it/ui_fixtures.rs`,
        });
      }
      const listed = new Set(runs.runs.map((r) => r.id));
      // Counted from the questions now, which answers change in memory.
      const open_questions: Record<string, number> = {};
      for (const question of fixtures.questions) {
        if (question.status === 'pending' && listed.has(question.run_id)) {
          open_questions[question.run_id] = (open_questions[question.run_id] ?? 0) + 1;
        }
      }
      return Promise.resolve({ ...runs, open_questions });
    },
    runView: (run) => {
      const view = find(run);
      return view ? Promise.resolve(view) : notFound(run);
    },
    runEvents: (run, afterSeq, limit) => {
      const events = (fixtures.events[find(run)?.run.id ?? run] ?? []).filter((e) => e.seq > afterSeq);
      return Promise.resolve(limit == null ? events : events.slice(0, limit));
    },
    stageFiles: (run, node, visit) => {
      const files = fixtures.stageFiles[`${find(run)?.run.id ?? run}/${node}/${visit}`];
      return Promise.resolve(
        files ?? { prompt: null, response: null, stdout: null, stderr: null, status: null, script: null, truncated: [] },
      );
    },
    // The recorded retros (of the runs recorded with `--retro`); the other
    // runs have none, as retros are off by default.
    runRetro: (run) => {
      const view = find(run);
      return view ? Promise.resolve(fixtures.retro?.[view.run.id] ?? null) : notFound(run);
    },
    retros: () => Promise.resolve(fixtures.retros ?? []),
    searchLogs: (run, query) => {
      const view = find(run);
      if (!view) return notFound(run);
      return Promise.resolve(searchStageFiles(fixtures, view.run.id, view.stages, query));
    },

    // The recorded spending, whatever the window; of one run, that run's
    // lines (its totals are its line's figures).
    spending: (query) => {
      const all = fixtures.spending ?? emptySpending();
      if (!query.run) return Promise.resolve(all);
      const view = find(query.run);
      if (!view) return notFound(query.run);
      const line = all.runs.find((r) => r.run_id === view.run.id);
      const stages = all.stages.filter((s) => s.run_id === view.run.id);
      return Promise.resolve({
        ...all,
        run: view.run.id,
        total: line ? { stages: line.stages, calls: line.calls, input_tokens: line.input_tokens, output_tokens: line.output_tokens, cost: line.cost, unpriced_calls: line.unpriced_calls } : emptySpending().total,
        runs: line ? [line] : [],
        runs_total: line ? 1 : 0,
        stages,
      });
    },

    artifactContent: (run, path) => {
      const view = find(run);
      const record = view?.artifacts.filter((a) => a.path === path).at(-1);
      if (!view || !record) return artifactNotFound(run, path);
      return Promise.resolve(fixtures.artifacts?.[`${view.run.id}/${path}`] ?? syntheticArtifact(path, record.size));
    },
    // The patches a checkpointed run's directory holds, as `Views::run_changes`
    // and `stage_changes` tell their absence.
    runChanges: (run) => {
      const view = find(run);
      if (!view) return notFound(run);
      if (!view.git) return Promise.resolve(noChanges('not_checkpointed'));
      const ended = view.run.status === 'succeeded' || view.run.status === 'failed';
      return Promise.resolve(fixtures.changes?.[view.run.id] ?? noChanges(ended ? 'missing' : 'pending'));
    },
    stageChanges: (run, node, visit) => {
      const view = find(run);
      if (!view) return notFound(run);
      if (!view.git) return Promise.resolve(noChanges('not_checkpointed'));
      const running = view.stages.some((s) => s.node_id === node && s.visit === visit && s.status === 'running');
      return Promise.resolve(fixtures.changes?.[`${view.run.id}/${node}/${visit}`] ?? noChanges(running ? 'pending' : 'missing'));
    },
    // No file manager in a browser: say where the app would have put it.
    revealArtifact: (run, path) => {
      const view = find(run);
      if (!view?.artifacts.some((a) => a.path === path)) return artifactNotFound(run, path);
      return Promise.resolve(`${view.run.run_dir}/artifacts/${path}`);
    },

    daemonStart: () => fail('daemon.start_failed', 'the test host has no daemon'),
    // weftd's `run.fork` over the fixtures: the new run holds the source's
    // stages up to the checkpoint and their events, and waits, cancelled,
    // for a resume; a rewind archives the source. The timeline is the
    // stages that are not running, in the order they ran.
    runFork: (run, target, rewind) => {
      const view = find(run);
      if (!view) return notFound(run);
      const source = view.run;
      if (['running', 'queued', 'blocked'].includes(source.status)) {
        return fail('run.not_forkable', `run ${source.id} is ${source.status}: wait for it to end, or cancel it first`);
      }
      if (rewind && (!['succeeded', 'failed'].includes(source.status) || source.archived)) {
        return fail('run.not_forkable', `run ${source.id} is ${source.status}; only a run that succeeded or failed can be rewound`);
      }
      const timeline = view.stages.filter((s) => s.status !== 'running').sort((a, b) => a.rank - b.rank);
      const entry = target == null ? timeline.at(-1) : timeline.find((s) => `${s.node_id}@${s.visit}` === target);
      if (!entry) return fail('checkpoint.not_found', `run ${source.id} has no checkpoint ${target ?? ''}`.trim());
      forks += 1;
      const id = `${source.id.slice(0, 20)}F${String(forks).padStart(5, '0')}`;
      const reason = `${rewind ? 'rewound' : 'forked'} from run ${source.id} at ${entry.node_id}@${entry.visit}; resume it to continue`;
      const events = fixtures.events[source.id] ?? [];
      const lastSeq = Math.max(0, ...events.filter((e) => e.node_id === entry.node_id && e.visit === entry.visit).map((e) => e.seq));
      fixtures.events[id] = events.filter((e) => e.seq <= lastSeq).map((e) => ({ ...e, run_id: id }));
      fixtures.views.unshift({
        ...view,
        run: { ...source, id, status: 'cancelled', failure_reason: reason, archived: false, finished_at: null, last_seq: lastSeq },
        stages: timeline.filter((s) => s.rank <= entry.rank).map((s) => ({ ...s, run_id: id })),
        questions: [],
      });
      if (rewind) view.run = { ...source, archived: true };
      const from = { ordinal: timeline.indexOf(entry) + 1, node_id: entry.node_id, visit: entry.visit, status: entry.status, seq: lastSeq, ts: entry.finished_at ?? '', checkpoint: {} };
      return Promise.resolve({ run_id: id, run_dir: `${source.run_dir}-fork`, source: source.id, from, archived_source: rewind });
    },
    runArchive: (run, archived) => {
      const view = find(run);
      if (!view) return notFound(run);
      view.run = { ...view.run, archived };
      return Promise.resolve(view.run);
    },
    questionList: (run) =>
      Promise.resolve(fixtures.questions.filter((q) => q.status === 'pending' && (!run || q.run_id === run))),
    questionAnswer: (id, answer) => {
      const index = fixtures.questions.findIndex((q) => q.id === id);
      const question = fixtures.questions[index];
      if (!question) return fail('question.not_found', `no question ${id}`);
      // Idempotent, as weftd's: an answered question stays as answered.
      if (question.status !== 'pending') return Promise.resolve(question);
      const selected = selectedOption(question.options, answer);
      const answered: QuestionRecord = {
        ...question,
        status: 'answered',
        answer: answer as QuestionRecord['answer'],
        answered_at: new Date().toISOString(),
      };
      fixtures.questions[index] = answered;
      const events = fixtures.events[question.run_id] ?? [];
      const event: Event = {
        seq: (events.at(-1)?.seq ?? 0) + 1,
        ts: answered.answered_at ?? '',
        run_id: question.run_id,
        node_id: question.node_id,
        visit: question.visit,
        event: 'interview.completed',
        properties: { question_id: id, selected, text: 'text' in answer ? answer.text : null },
      };
      fixtures.events[question.run_id] = [...events, event];
      for (const l of listeners) if (l.run === null || l.run === question.run_id) l.onEvent(event);
      return Promise.resolve(answered);
    },
    // weftd queues the message and the run records `agent.steered` when the
    // agent takes it before its next turn; the test host records it at once.
    steerStage: (run, node, text) => {
      const view = find(run);
      if (!view) return notFound(run);
      const stage = view.stages.find((s) => s.node_id === node && s.handler === 'agent' && s.status === 'running');
      if (!stage) return fail('agent.not_running', `no agent stage ${node} is running in run ${view.run.id}`);
      const events = fixtures.events[view.run.id] ?? [];
      const event: Event = {
        seq: (events.at(-1)?.seq ?? 0) + 1,
        ts: new Date().toISOString(),
        run_id: view.run.id,
        node_id: node,
        visit: stage.visit,
        event: 'agent.steered',
        properties: { text },
      };
      fixtures.events[view.run.id] = [...events, event];
      for (const l of listeners) if (l.run === null || l.run === view.run.id) l.onEvent(event);
      return Promise.resolve({ run_id: view.run.id, node_id: node, visit: stage.visit });
    },
    // The models the fixtures' runs asked for: there is no catalog here.
    modelNames: () =>
      Promise.resolve([...new Set(fixtures.views.flatMap((v) => v.options.model.model ?? []))].sort()),
    // A path naming a "broken" workflow gets the error a workflow without an
    // exit node gets, so tests can show diagnostics without a backend.
    validateWorkflow: (path) =>
      Promise.resolve(
        path.includes('broken')
          ? [
              {
                rule: 'exit_node',
                severity: 'error' as const,
                message: 'the workflow has no exit node (shape=Msquare)',
                span: { start: 0, end: 7, line: 1, column: 1 },
                node_id: null,
                edge: null,
                hint: 'add `exit [shape=Msquare]` and an edge into it',
              },
            ]
          : [],
      ),
    subscribe: (run, _afterSeq, onEvent) => {
      const entry = { run, onEvent };
      listeners.add(entry);
      return Promise.resolve(() => listeners.delete(entry));
    },
  };
}

/** `q` without what it leaves unset, as JSON with sorted keys: equal queries, equal keys. */
function queryKey(q: RunList): string {
  const set = Object.entries(q).filter(([, v]) => v != null);
  return JSON.stringify(Object.fromEntries(set.sort(([a], [b]) => a.localeCompare(b))));
}

/**
 * The store's recorded answer to exactly `q` (`fixtures.pages`), its runs
 * as the fixtures hold them now (an archive done in memory shows).
 */
function recordedRuns(fixtures: Fixtures, q: RunList): { runs: RunSummary[]; total: number } | null {
  const key = queryKey(q);
  const recorded = fixtures.pages?.find((p) => queryKey(p.query) === key);
  if (!recorded) return null;
  const now = new Map(fixtures.views.map((v) => [v.run.id, v.run]));
  return { runs: recorded.page.runs.map((r) => now.get(r.id) ?? r), total: recorded.page.total };
}

/**
 * A page of the whole list, for a query that filters nothing: every run the
 * fixtures hold, newest first as they are held, archived ones left out when
 * `archived: false` (the list's default); null for any filter, whose pages
 * must be recorded.
 */
function unfilteredRuns(fixtures: Fixtures, q: RunList): { runs: RunSummary[]; total: number } | null {
  if (q.status != null || q.workflow != null || q.label != null || q.text != null || q.archived === true) return null;
  const all = fixtures.views.map((v) => v.run).filter((r) => q.archived == null || !r.archived);
  const offset = q.offset ?? 0;
  return { runs: all.slice(offset, q.limit == null ? undefined : offset + q.limit), total: all.length };
}

/** The most matches `searchLogs` returns, as the app's command does. */
const LOG_MATCHES_MAX = 1_000;
/** A matching line is cut to this many characters, as the backend does. */
const LOG_LINE_MAX = 1_000;

/**
 * Lines containing `query` (ignoring case) in each stage's stdout, stderr
 * and response, in execution order: `Views::search_logs` over fixtures.
 */
function searchStageFiles(
  fixtures: Fixtures,
  run: string,
  stages: { node_id: string; visit: number }[],
  query: string,
): LogMatch[] {
  const needle = query.toLowerCase();
  const matches: LogMatch[] = [];
  if (!needle) return matches;
  for (const stage of stages) {
    const files = fixtures.stageFiles[`${run}/${stage.node_id}/${stage.visit}`];
    if (!files) continue;
    for (const stream of ['stdout', 'stderr', 'response'] as LogStream[]) {
      const text = files[stream];
      if (!text) continue;
      const lines = text.split('\n');
      if (lines[lines.length - 1] === '') lines.pop();
      for (const [i, raw] of lines.entries()) {
        const line = raw.replace(/\r$/, '');
        if (!line.toLowerCase().includes(needle)) continue;
        matches.push({ node_id: stage.node_id, visit: stage.visit, stream, line_number: i + 1, line: line.slice(0, LOG_LINE_MAX) });
        if (matches.length >= LOG_MATCHES_MAX) return matches;
      }
    }
  }
  return matches;
}

/**
 * The fixtures of a plain browser page: the recorded history, plus `N`
 * synthetic older runs when the page's URL has `?runs=N` (the runs list's
 * virtualisation and performance checks).
 */
export function pageFixtures(search: string): Fixtures {
  return withSyntheticRuns(recorded, syntheticRunCount(search));
}

/** The test host of a plain browser page. */
export const testHost: Host = makeTestHost(pageFixtures(globalThis.location?.search ?? ''));

/** The option label an answer picks (`freeform` for free text). */
function selectedOption(options: string[], answer: AnswerBy): string {
  if ('text' in answer) return 'freeform';
  if ('label' in answer) return options.find((o) => o.includes(answer.label)) ?? answer.label;
  const key = answer.key.toLowerCase();
  return options.find((o) => o.toLowerCase().startsWith(`[${key}]`) || o.toLowerCase().startsWith(`${key})`)) ?? answer.key;
}

/**
 * The fixtures record artifacts but not their bytes, so the test host
 * synthesises a small content from the path (media guessed from the
 * extension as the app does): markdown, JSON and text get a short text
 * naming the path, anything else no bytes at all. This keeps previews
 * testable without storing blobs in the fixtures.
 */
function syntheticArtifact(path: string, size: number): ArtifactContent {
  const ext = path.includes('.') ? path.slice(path.lastIndexOf('.') + 1).toLowerCase() : '';
  const base = { path, size, base64: null, truncated: false };
  if (ext === 'md' || ext === 'markdown') {
    return { ...base, media: 'text/markdown', text: `# ${path}\n\nA synthetic artifact.\n\n- one\n- two\n` };
  }
  if (ext === 'json') return { ...base, media: 'application/json', text: JSON.stringify({ path, size }) };
  if (['txt', 'log', 'csv', 'yaml', 'yml', 'toml'].includes(ext)) {
    return { ...base, media: 'text/plain', text: `${path}\n` };
  }
  return { ...base, media: 'application/octet-stream', text: null };
}
