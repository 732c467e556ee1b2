import type { Event } from '../api';
import { downloadText } from '../logs/download';
import { ALERT_EVENTS } from './derive';

/** A one-line summary of an event's properties. */
export function eventSummary(e: Event): string {
  switch (e.event) {
    case 'run.failed':
    case 'run.cancelled':
    case 'run.interrupted':
      return e.properties.reason;
    case 'stage.failed':
    case 'stage.completed':
      return e.properties.outcome.failure?.message ?? e.properties.status;
    case 'stage.retrying':
      return `attempt ${e.properties.attempt}: ${e.properties.reason}`;
    case 'edge.selected':
      return `${e.properties.from_node} → ${e.properties.to_node} (${e.properties.reason})`;
    case 'llm.retry':
      return `${e.properties.provider}/${e.properties.model} retry ${e.properties.retry}: ${e.properties.error}`;
    case 'llm.failover':
      return `${e.properties.from} → ${e.properties.to}: ${e.properties.error}`;
    case 'command.output':
      return `${e.properties.stream}: ${e.properties.text.slice(0, 120)}`;
    case 'interview.started':
      return e.properties.question;
    case 'run.notice':
      return e.properties.message;
    default:
      return '';
  }
}

function EventRow({ e }: { e: Event }) {
  return (
    <li className={ALERT_EVENTS.has(e.event) ? 'events__alert' : undefined} data-event={e.event}>
      <span className="run-mono muted">#{e.seq}</span> <span className="run-mono">{e.event}</span>
      {e.node_id ? <span className="muted"> {e.node_id}{(e.visit ?? 1) > 1 ? `@${e.visit}` : ''}</span> : null}{' '}
      {eventSummary(e)}
    </li>
  );
}

/**
 * The run's events: failures always in view, the rest collapsed, and an
 * export of every event as JSON Lines.
 */
export function EventsPanel({ runId, events }: { runId: string; events: readonly Event[] }) {
  const alerts = events.filter((e) => ALERT_EVENTS.has(e.event));
  return (
    <section className="events" aria-label="Events" data-testid="events">
      {alerts.length > 0 && (
        <ul className="events__list" data-testid="event-alerts">
          {alerts.map((e) => (
            <EventRow key={e.seq} e={e} />
          ))}
        </ul>
      )}
      <details>
        <summary>
          All {events.length} events{' '}
          <button
            type="button"
            disabled={events.length === 0}
            onClick={(ev) => {
              ev.preventDefault();
              downloadText(`${runId}-events.jsonl`, events.map((e) => JSON.stringify(e)).join('\n') + '\n', 'application/x-ndjson');
            }}
          >
            Export JSONL
          </button>
        </summary>
        <ul className="events__list">
          {events.map((e) => (
            <EventRow key={e.seq} e={e} />
          ))}
        </ul>
      </details>
    </section>
  );
}
