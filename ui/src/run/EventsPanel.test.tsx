// @vitest-environment happy-dom
import { act } from 'react';
import { describe, expect, it } from 'vitest';

import type { Event } from '../api';
import { renderNow } from '../render.test-helper';
import { agentEvents } from './agent.test-data';
import { EVENT_ROW_HEIGHT, eventSummary, EventsPanel } from './EventsPanel';
import { CONTAINER, RUN, sandboxedEvents } from './fixture.test-data';

/** `count` command output lines, with one failed stage in the middle. */
function manyEvents(count: number): Event[] {
  return Array.from({ length: count }, (_, i): Event => {
    const base = { seq: i + 1, ts: '2026-12-02T10:00:00.000Z', run_id: RUN, node_id: 'build', visit: 1 };
    return i === count / 2
      ? ({ ...base, event: 'stage.failed', properties: { status: 'failed', outcome: { failure: { message: 'boom' } } } } as unknown as Event)
      : ({ ...base, event: 'command.output', properties: { stream: 'stdout', text: `line ${i + 1}` } } as unknown as Event);
  });
}

describe('the events panel', () => {
  const show = (events: Event[]): HTMLElement => renderNow(<EventsPanel runId={RUN} events={events} />);
  const seqs = (el: HTMLElement) =>
    [...el.querySelectorAll('[data-testid=events-all] li')].map((li) => Number(li.textContent?.match(/#(\d+)/)?.[1]));

  it('keeps failures in view and renders no other event while the list is closed', () => {
    const panel = show(manyEvents(20_000));
    expect(panel.querySelectorAll('[data-testid=event-alerts] li')).toHaveLength(1);
    expect(panel.querySelector('summary')?.textContent).toContain('All 20000 events');
    expect(panel.querySelector('[data-testid=events-all]'), 'nothing of the full list until it is opened').toBeNull();
    expect(panel.querySelectorAll('li').length).toBe(1);
  });

  it('renders only the rows in view of 20,000 events, and follows the scroll', () => {
    const panel = show(manyEvents(20_000));
    const details = panel.querySelector('details');
    act(() => {
      if (details) details.open = true;
      details?.dispatchEvent(new Event('toggle'));
    });
    const first = seqs(panel);
    expect(first[0]).toBe(1);
    expect(first.length, 'a window, not 20,000 rows').toBeLessThan(60);

    const list = panel.querySelector<HTMLElement>('[data-testid=events-all]');
    act(() => {
      if (list) list.scrollTop = 10_000 * EVENT_ROW_HEIGHT;
      list?.dispatchEvent(new Event('scroll'));
    });
    const later = seqs(panel);
    expect(later).toContain(10_001);
    expect(later.length).toBeLessThan(60);
    const spacer = list?.querySelector<HTMLElement>('ul');
    expect(spacer?.style.height).toBe(`${20_000 * EVENT_ROW_HEIGHT}px`);
  });
});

describe('eventSummary of agent events', () => {
  it('says what the agent did, as `weft events` does', () => {
    const lines = agentEvents(false)
      .filter((e) => e.event.startsWith('agent.'))
      .map((e) => `${e.event} ${eventSummary(e)}`);
    expect(lines).toContain('agent.tool.started shell cargo test');
    expect(lines).toContain('agent.tool.completed write_file failed in 0.0s: src/main.rs exists and has not been read: read it before writing it');
    expect(lines).toContain('agent.tool.completed shell done in 4.0s');
    expect(lines).toContain('agent.turn.completed turn 1: 2 tool call(s), 2.4k in / 120 out, 1.8s');
    expect(lines).toContain('agent.steered steered: Keep the public API unchanged.');
    expect(lines.every((l) => l.split(' ').length > 1 && !l.endsWith(' '))).toBe(true);
  });
});

describe('eventSummary of sandbox events', () => {
  it('says where the stage ran and what became of the container, with the shell command for a kept one', () => {
    const lines = sandboxedEvents('kept')
      .filter((e) => e.event.startsWith('sandbox.'))
      .map((e) => `${e.event} ${e.node_id ?? '-'} ${eventSummary(e)}`);
    expect(lines).toEqual([
      `sandbox.ready build created container ${CONTAINER} (weft-test:latest)`,
      `sandbox.ready build in container ${CONTAINER} (weft-test:latest)`,
      `sandbox.ready push reused container ${CONTAINER} (weft-test:latest) after a restart`,
      `sandbox.kept - container ${CONTAINER} kept: docker exec -it ${CONTAINER} sh`,
    ]);
    const removed = sandboxedEvents('removed').at(-1);
    expect(removed && eventSummary(removed)).toBe(`container ${CONTAINER} removed`);
  });
});
