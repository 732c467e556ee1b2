import { useEffect, useMemo, useState } from 'react';

import type { AnswerBy, Host, QuestionRecord } from '../api';
import { typingIn, withModifier } from '../components/keyboard';
import { choiceForKey, choicesOf, type Choice } from './accelerator';
import { ActionStatus, useDaemonAction } from './daemonAction';
import { optionHint, optionKind, PermissionDetails, toneOf } from './permission';
import './gates.css';

export interface QuestionPanelProps {
  host: Host;
  question: QuestionRecord;
  /** The work that led to the question (the previous stage's output). */
  context?: { title: string; text: string } | null;
  /** The gate's timeout and default answer, when the workflow sets them. */
  timeout?: string | null;
  defaultChoice?: string | null;
  /** Whether key presses answer (only one panel on screen should). */
  keyboard?: boolean;
  /** A link to the run, for the gates inbox. */
  runLink?: { href: string; title: string } | null;
  onAnswered?: (question: QuestionRecord) => void;
}

/**
 * The question text, with the agent's name in bold when it is an external
 * agent's permission request (`{agent} asks permission: {title}`).
 */
function QuestionText({ question }: { question: QuestionRecord }) {
  const agent = question.permission?.agent;
  const rest = agent && question.text.startsWith(agent) ? question.text.slice(agent.length) : null;
  return (
    <p className="question__text" data-testid="question-text">
      {rest === null ? (
        question.text
      ) : (
        <>
          <strong>{agent}</strong>
          {rest}
        </>
      )}
    </p>
  );
}

/**
 * A human gate's question: its text, what led to it, one button per option
 * (showing its accelerator; pressing the key answers when `keyboard` is on
 * and focus is not in a text field), and a text box when free text is
 * allowed. Answers go through `host.questionAnswer`.
 *
 * An external agent's permission request (`question.permission`) shows as
 * such: the kind of call, its paths and command or input, and the agent's
 * options styled by what they grant (allow or reject); the previous stage's
 * work is not shown, the request is what the answer is about.
 */
export function QuestionPanel({
  host,
  question,
  context,
  timeout,
  defaultChoice,
  keyboard = true,
  runLink,
  onAnswered,
}: QuestionPanelProps) {
  const choices = useMemo(() => choicesOf(question.options), [question.options]);
  const permission = question.permission ?? null;
  const [text, setText] = useState('');
  const [sent, setSent] = useState<string | null>(null);
  const action = useDaemonAction(host);
  const pending = question.status === 'pending' && sent === null;
  const busy = action.state.kind === 'busy';

  const answer = (by: AnswerBy, shown: string) => {
    void action.run('Answering', async () => {
      const result = await host.questionAnswer(question.id, by);
      setSent(shown);
      onAnswered?.(result);
      return `Answered: ${shown}`;
    });
  };
  const answerChoice = (choice: Choice, byKey: boolean) =>
    answer(byKey && choice.key ? { key: choice.key } : { label: choice.label }, choice.text);

  useEffect(() => {
    if (!keyboard || !pending || busy) return;
    const onKey = (e: KeyboardEvent) => {
      if (withModifier(e) || e.repeat || typingIn(e.target)) return;
      const choice = choiceForKey(choices, e.key);
      if (!choice) return;
      e.preventDefault();
      answerChoice(choice, true);
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
    // answerChoice is recreated each render; the listener only needs the latest choices.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [keyboard, pending, busy, choices, question.id]);

  const previous =
    question.status !== 'pending' && sent === null
      ? `This question was ${question.status.replace('_', ' ')}${question.answer != null ? `: ${JSON.stringify(question.answer)}` : ''}.`
      : null;

  return (
    <section
      className={permission ? 'question question--permission' : 'question'}
      aria-label={permission ? 'Permission request' : 'Question'}
      data-testid="question-panel"
      data-question-id={question.id}
      data-permission={permission ? permission.tool_kind : undefined}
    >
      <header className="question__head">
        <span className="question__gate">
          {permission ? 'Permission request at ' : 'Waiting on you at '}
          <strong>{question.node_id}</strong>
          {question.visit > 1 ? `@${question.visit}` : ''}
        </span>
        {runLink && (
          <a className="question__run" href={runLink.href}>
            {runLink.title}
          </a>
        )}
      </header>
      <QuestionText question={question} />
      {permission && <PermissionDetails permission={permission} />}
      {!permission && context && context.text && (
        <details className="question__context" open>
          <summary>{context.title}</summary>
          <pre>{context.text}</pre>
        </details>
      )}
      {(timeout || defaultChoice) && (
        <p className="muted">
          {timeout ? `Times out after ${timeout}` : 'No timeout'}
          {defaultChoice ? `; then answers “${defaultChoice}”.` : '.'}
        </p>
      )}
      {previous && <p className="muted">{previous}</p>}
      <div className="question__options" role="group" aria-label="Answers">
        {choices.map((c, i) => {
          const kind = permission ? optionKind(permission, c.label, i) : null;
          const tone = toneOf(kind);
          return (
            <button
              key={c.label}
              type="button"
              className={tone ? `question__option question__option--${tone}` : 'question__option'}
              data-kind={kind ?? undefined}
              title={optionHint(kind)}
              disabled={!pending || busy}
              onClick={() => answerChoice(c, false)}
              aria-keyshortcuts={keyboard && c.hotkey ? c.hotkey : undefined}
            >
              {(c.key ?? (keyboard ? c.hotkey : null)) && <kbd>{c.key ?? c.hotkey}</kbd>}
              {c.text}
            </button>
          );
        })}
      </div>
      {question.freeform && (
        <form
          className="question__freeform"
          onSubmit={(e) => {
            e.preventDefault();
            if (text.trim()) answer({ text: text.trim() }, text.trim());
          }}
        >
          <textarea
            aria-label="Your answer"
            placeholder="Or write an answer…"
            value={text}
            disabled={!pending || busy}
            onChange={(e) => setText(e.target.value)}
          />
          <button type="submit" disabled={!pending || busy || !text.trim()}>
            Send
          </button>
        </form>
      )}
      <ActionStatus state={action.state} onStartDaemon={() => void action.startDaemon()} />
    </section>
  );
}
