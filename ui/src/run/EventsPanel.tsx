import { type CSSProperties, useLayoutEffect, useMemo, useRef, useState } from 'react';

import type { Event } from '../api';
import { virtualWindow } from '../components/virtualWindow';
import { formatDuration, formatTokens } from '../format';
import { downloadText } from '../logs/download';
import { ALERT_EVENTS, containerShellCommand } from './derive';

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
    case 'sandbox.ready': {
      const { container, image, attach } = e.properties;
      if (attach === 'created') return `created container ${container} (${image})`;
      if (attach === 'reused') return `reused container ${container} (${image}) after a restart`;
      return `in container ${container} (${image})`;
    }
    case 'sandbox.removed':
      return `container ${e.properties.container} removed`;
    case 'sandbox.kept':
      return `container ${e.properties.container} kept: ${containerShellCommand(e.properties.engine, e.properties.container)}`;
    // As `weft events` says them (daemon/src/cli/events.rs).
    case 'agent.turn.started':
      return `turn ${e.properties.turn}`;
    case 'agent.text':
      return e.properties.text.trim().slice(0, 120);
    case 'agent.turn.completed':
      return `turn ${e.properties.turn}: ${e.properties.tool_calls} tool call(s), ${formatTokens(e.properties.input_tokens)} in / ${formatTokens(e.properties.output_tokens)} out, ${formatDuration(e.properties.duration_ms)}`;
    case 'agent.tool.started':
      return `${e.properties.tool} ${e.properties.summary}`;
    case 'agent.tool.completed':
      return e.properties.is_error
        ? `${e.properties.tool} failed in ${formatDuration(e.properties.duration_ms)}: ${e.properties.preview.trim().slice(0, 120)}`
        : `${e.properties.tool} done in ${formatDuration(e.properties.duration_ms)}`;
    case 'agent.compaction':
      return `compacted ${e.properties.original_turns} turns (kept the last ${e.properties.preserved_turns})`;
    case 'agent.loop_detected':
      return `loop detected: ${e.properties.tools.join(', ')}; the model was warned`;
    case 'agent.steered':
      return `steered: ${e.properties.text.slice(0, 120)}`;
    default:
      return '';
  }
}

/** One event's line; `style` places it in the windowed list. */
function EventRow({ e, style }: { e: Event; style?: CSSProperties }) {
  return (
    <li className={ALERT_EVENTS.has(e.event) ? 'events__alert' : undefined} data-event={e.event} style={style}>
      <span className="run-mono muted">#{e.seq}</span> <span className="run-mono">{e.event}</span>
      {e.node_id ? <span className="muted"> {e.node_id}{(e.visit ?? 1) > 1 ? `@${e.visit}` : ''}</span> : null}{' '}
      {eventSummary(e)}
    </li>
  );
}

/** Fixed row height (px) of the full list: the window's maths depend on it. */
export const EVENT_ROW_HEIGHT = 20;
/** The full list's viewport height (px) before it has been measured. */
const LIST_HEIGHT = 320;
/** Rows rendered beyond each edge of the viewport. */
const OVERSCAN = 10;

/**
 * Every event, windowed like the runs list: a run may have tens of
 * thousands, and a row each in the DOM made opening a 20,000-event run take
 * seconds (docs/performance.md). Rendered only while the list is open.
 */
function AllEvents({ events }: { events: readonly Event[] }) {
  const [scrollTop, setScrollTop] = useState(0);
  const [height, setHeight] = useState(LIST_HEIGHT);
  const list = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    if (list.current?.clientHeight) setHeight(list.current.clientHeight);
  }, []);
  const { start, end } = virtualWindow(scrollTop, height, EVENT_ROW_HEIGHT, events.length, OVERSCAN);
  return (
    <div ref={list} className="events__all" data-testid="events-all" onScroll={(ev) => setScrollTop(ev.currentTarget.scrollTop)}>
      <ul className="events__list events__spacer" style={{ height: events.length * EVENT_ROW_HEIGHT }}>
        {events.slice(start, end).map((e, i) => (
          <EventRow key={e.seq} e={e} style={{ top: (start + i) * EVENT_ROW_HEIGHT }} />
        ))}
      </ul>
    </div>
  );
}

/**
 * The run's events: failures always in view, the rest collapsed, and an
 * export of every event as JSON Lines.
 */
export function EventsPanel({ runId, events }: { runId: string; events: readonly Event[] }) {
  const alerts = useMemo(() => events.filter((e) => ALERT_EVENTS.has(e.event)), [events]);
  const [open, setOpen] = useState(false);
  return (
    <section className="events" aria-label="Events" data-testid="events">
      {alerts.length > 0 && (
        <ul className="events__list" data-testid="event-alerts">
          {alerts.map((e) => (
            <EventRow key={e.seq} e={e} />
          ))}
        </ul>
      )}
      <details open={open} onToggle={(ev) => setOpen(ev.currentTarget.open)}>
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
        {open && <AllEvents events={events} />}
      </details>
    </section>
  );
}
