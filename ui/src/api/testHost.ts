import { EMPTY, type Fixtures } from './fixtures';
import type { Event, Host, RunSummary } from './host';

/**
 * The version the test host reports. Deliberately not a real release number,
 * so a test that sees it knows the page talked to the test host.
 */
export const TEST_APP_VERSION = '0.0.0-test';

function notFound(what: string): Promise<never> {
  return Promise.reject({ code: 'run.not_found', message: `no run matches ${what}` });
}

/**
 * A backend over fixed fixtures, used when the UI runs in a plain browser:
 * history queries are answered from `fixtures`; live actions change them in
 * memory and notify subscribers, as weftd would.
 */
export function makeTestHost(fixtures: Fixtures = EMPTY): Host {
  const listeners = new Set<{ run: string | null; onEvent: (e: Event) => void }>();
  const find = (run: string) =>
    fixtures.views.find((v) => v.run.id.toLowerCase().startsWith(run.toLowerCase()));
  const matches = (r: RunSummary, text: string | null | undefined) =>
    !text ||
    [r.id, r.workflow_name, r.goal ?? ''].some((s) => s.toLowerCase().includes(text.toLowerCase()));
  return {
    appVersion: () => Promise.resolve(TEST_APP_VERSION),
    initialRoute: () => Promise.resolve(null),

    runsPage: (q) => {
      const all = fixtures.views
        .map((v) => v.run)
        .filter(
          (r) =>
            (!q.status || r.status === q.status) &&
            (!q.workflow || r.workflow_name === q.workflow) &&
            (!q.label || r.labels.includes(q.label)) &&
            matches(r, q.text),
        );
      const offset = q.offset ?? 0;
      const runs = all.slice(offset, q.limit == null ? undefined : offset + q.limit);
      const open_questions: Record<string, number> = {};
      for (const question of fixtures.questions) {
        if (question.status === 'pending') {
          open_questions[question.run_id] = (open_questions[question.run_id] ?? 0) + 1;
        }
      }
      return Promise.resolve({ runs, total: all.length, open_questions });
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
    searchLogs: () => Promise.resolve([]),

    daemonStatus: () => Promise.reject({ code: 'daemon.not_running', message: 'weftd is not running (test host)' }),
    daemonStart: () => Promise.reject({ code: 'daemon.start_failed', message: 'the test host has no daemon' }),
    runStart: () => Promise.reject({ code: 'daemon.not_running', message: 'the test host has no daemon' }),
    runCancel: () => Promise.reject({ code: 'daemon.not_running', message: 'the test host has no daemon' }),
    runResume: () => Promise.reject({ code: 'daemon.not_running', message: 'the test host has no daemon' }),
    questionList: (run) =>
      Promise.resolve(fixtures.questions.filter((q) => q.status === 'pending' && (!run || q.run_id === run))),
    questionAnswer: (id) => {
      const question = fixtures.questions.find((q) => q.id === id);
      if (!question) return Promise.reject({ code: 'question.not_found', message: `no question ${id}` });
      return Promise.resolve(question);
    },
    validateWorkflow: () => Promise.resolve([]),
    subscribe: (run, _afterSeq, onEvent) => {
      const entry = { run, onEvent };
      listeners.add(entry);
      return Promise.resolve(() => listeners.delete(entry));
    },
  };
}

/** The test host of a plain browser page. */
export const testHost: Host = makeTestHost();
