import { useCallback, useEffect, useState } from 'react';

import { appError, type Host, type QuestionRecord, type RunSummary } from '../api';
import { routeHash } from '../app/route';
import { QuestionPanel } from './QuestionPanel';
import './gates.css';

/** How many recent runs the fallback looks through for pending questions. */
const FALLBACK_RUNS = 200;

type Inbox =
  | { kind: 'loading' }
  | { kind: 'failed'; message: string }
  | { kind: 'ready'; questions: QuestionRecord[]; runs: Record<string, RunSummary>; daemonDown: boolean };

/**
 * Pending questions of the daemon's history, read from the database when the
 * daemon is down: the runs with open questions, then their views.
 */
async function pendingFromHistory(host: Host) {
  const page = await host.runsPage({ limit: FALLBACK_RUNS });
  const ids = page.runs.filter((r) => (page.open_questions[r.id] ?? 0) > 0).map((r) => r.id);
  const views = await Promise.all(ids.map((id) => host.runView(id)));
  return views.flatMap((v) => v.questions.filter((q) => q.status === 'pending'));
}

/** Every pending question across runs, each answerable in place. */
export function GatesScreen({ host }: { host: Host }) {
  const [inbox, setInbox] = useState<Inbox>({ kind: 'loading' });
  const [active, setActive] = useState<string | null>(null);
  const [answered, setAnswered] = useState<Set<string>>(new Set());

  const load = useCallback(async () => {
    let questions: QuestionRecord[];
    let daemonDown = false;
    try {
      questions = await host.questionList();
    } catch (e) {
      if (appError(e).code !== 'daemon.not_running') throw e;
      daemonDown = true;
      questions = await pendingFromHistory(host);
    }
    const page = await host.runsPage({ limit: FALLBACK_RUNS });
    const runs: Record<string, RunSummary> = {};
    for (const r of page.runs) runs[r.id] = r;
    // Oldest first: the one that has waited longest is answered first.
    questions.sort((a, b) => a.asked_at.localeCompare(b.asked_at));
    return { kind: 'ready' as const, questions, runs, daemonDown };
  }, [host]);

  useEffect(() => {
    let live = true;
    load().then(
      (i) => live && setInbox(i),
      (e: unknown) => live && setInbox({ kind: 'failed', message: appError(e).message }),
    );
    return () => {
      live = false;
    };
  }, [load]);

  if (inbox.kind === 'loading') return <p className="muted">Loading questions…</p>;
  if (inbox.kind === 'failed') return <p className="error">Could not list the questions: {inbox.message}</p>;
  const open = inbox.questions.filter((q) => !answered.has(q.id));
  const keyboardFor = active && open.some((q) => q.id === active) ? active : (open[0]?.id ?? null);

  return (
    <div className="gates" data-testid="gates-screen">
      <h2>Waiting on you</h2>
      {inbox.daemonDown && (
        <p className="muted" role="status" data-testid="gates-daemon-down">
          The daemon is not running: these questions come from the run history. Answering one starts nothing by
          itself; you will be offered to start the daemon.
        </p>
      )}
      {inbox.questions.length === 0 && <p className="muted">No gate is waiting for an answer.</p>}
      {inbox.questions.map((q) => {
        const run = inbox.runs[q.run_id];
        return (
          <div key={q.id} onFocusCapture={() => setActive(q.id)} onPointerDown={() => setActive(q.id)}>
            <QuestionPanel
              host={host}
              question={q}
              keyboard={keyboardFor === q.id}
              runLink={{
                href: routeHash({ screen: 'run', run: q.run_id, question: q.id }),
                title: run ? `${run.workflow_name}${run.goal ? ` — ${run.goal}` : ''}` : q.run_id,
              }}
              onAnswered={() => setAnswered((s) => new Set(s).add(q.id))}
            />
          </div>
        );
      })}
    </div>
  );
}
