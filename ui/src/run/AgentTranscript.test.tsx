// @vitest-environment happy-dom
import { act } from 'react';
import { describe, expect, it } from 'vitest';

import { renderNow } from '../render.test-helper';
import { AGENT_NODE, agentEvents, agentStage } from './agent.test-data';
import { timelineOf } from './derive';
import { ev } from './fixture.test-data';
import { StageDetail } from './StageDetail';
import { TimelineView } from './Timeline';
import type { FilesLoad } from './useRun';

let container: HTMLElement;

function render(node: React.ReactNode) {
  container = renderNow(node);
}

const NO_FILES: FilesLoad = { kind: 'ready', seq: 0, files: { prompt: null, response: null, stdout: null, stderr: null, status: null, script: null, truncated: [] } };

const q = (selector: string) => [...container.querySelectorAll<HTMLElement>(selector)];

describe('the stage panel of an agent stage', () => {
  it('opens on the transcript: each turn’s text as Markdown, raw HTML shown as text', () => {
    render(<StageDetail stage={agentStage(false)} files={NO_FILES} events={agentEvents(false)} />);
    expect(container.querySelector('[role=tab][aria-selected=true]')?.textContent).toBe('Transcript');
    const [first, second] = q('[data-testid=agent-text]');
    expect(first?.querySelector('strong')?.textContent).toBe('read');
    expect(first?.querySelectorAll('li code')[0]?.textContent).toBe('src/lib.rs');
    // The model's "<script>" is text, never an element.
    expect(first?.querySelector('script')).toBeNull();
    expect(first?.textContent).toContain('<script>alert(1)</script>');
    expect(second?.textContent).toBe('Fixing the sign and running the tests.');
    expect(q('[data-testid=agent-turn]').map((t) => t.querySelector('.transcript__turn-head')?.textContent)).toEqual([
      'Turn 1 · 2.4k in · 120 out · 1.8s',
      'Turn 2 · 3.1k in · 90 out · 1.5s',
    ]);
  });

  it('shows one collapsed row per tool call, its arguments and output once expanded, a failed one as an error', () => {
    render(<StageDetail stage={agentStage(false)} files={NO_FILES} events={agentEvents(false)} />);
    const rows = q('[data-testid=tool-call]');
    expect(rows.map((r) => [r.dataset.tool, r.dataset.state, r.querySelector('.tool-call__summary')?.textContent])).toEqual([
      ['read_file', 'succeeded', 'src/lib.rs'],
      ['write_file', 'failed', 'src/main.rs'],
      ['edit_file', 'succeeded', 'src/lib.rs'],
      ['shell', 'succeeded', 'cargo test'],
    ]);
    expect(rows[1]?.querySelector('.tool-call__state')?.textContent).toBe('error');
    expect(rows[3]?.querySelector('.tool-call__time')?.textContent).toBe('4.0s');
    // Collapsed: no body built yet.
    expect(rows[1]?.querySelector('[data-testid=tool-arguments]')).toBeNull();
    act(() => {
      const row = rows[1] as HTMLDetailsElement;
      row.open = true;
      row.dispatchEvent(new Event('toggle'));
    });
    expect(JSON.parse(rows[1]?.querySelector('[data-testid=tool-arguments]')?.textContent ?? '')).toEqual({ path: 'src/main.rs', content: 'fn main() {}\n' });
    expect(rows[1]?.querySelector('[data-testid=tool-output]')?.textContent).toContain('has not been read');
  });

  it('gives the steering message as an inline notice between the turns', () => {
    render(<StageDetail stage={agentStage(false)} files={NO_FILES} events={agentEvents(false)} />);
    const entries = q('.transcript__entries > li').map((li) => li.dataset.testid);
    expect(entries).toEqual(['agent-turn', 'agent-notice', 'agent-turn']);
    expect(q('[data-testid=agent-notice]')[0]?.textContent).toBe('Steered: “Keep the public API unchanged.”');
  });

  it('shows the outcome’s spend and files touched once the stage ended', () => {
    render(<StageDetail stage={agentStage(false)} files={NO_FILES} events={agentEvents(false)} />);
    expect(container.querySelector('[data-testid=agent-spend]')?.textContent).toBe('5.5k in · 210 out · $0.02 · 2 calls');
    expect(q('[data-testid=files-touched] li').map((li) => li.textContent)).toEqual(['src/lib.rs']);
  });

  it('while running: the spend and files so far from the events, the last call running', () => {
    render(<StageDetail stage={agentStage(true)} files={NO_FILES} events={agentEvents(true)} />);
    expect(container.querySelector('[data-testid=agent-spend]')?.textContent).toBe('5.5k in · 210 out · $0.02 · 2 calls');
    expect(q('[data-testid=files-touched] li').map((li) => li.textContent)).toEqual(['src/lib.rs']);
    const last = q('[data-testid=tool-call]').at(-1);
    expect([last?.dataset.tool, last?.dataset.state, last?.querySelector('.tool-call__state')?.textContent]).toEqual(['shell', 'running', 'running…']);
  });

  it('a command stage has no transcript tab', () => {
    render(<StageDetail stage={{ ...agentStage(false), handler: 'command', outcome: null }} files={NO_FILES} events={[]} />);
    expect(q('[role=tab]').map((t) => t.textContent)).not.toContain('Transcript');
    expect(container.querySelector('[data-testid=agent-facts]')).toBeNull();
  });
});

describe('tool-call ticks on the timeline', () => {
  it('draws a tick per call on the agent stage’s bar, with the tool and its summary in the tooltip', () => {
    const events = agentEvents(false);
    const timeline = timelineOf([agentStage(false)], events, 0);
    expect(timeline.lanes[0]?.bars[0]?.ticks.map((t) => t.tool)).toEqual(['read_file', 'write_file', 'edit_file', 'shell']);
    render(<TimelineView timeline={timeline} selected={null} onSelect={() => {}} />);
    const ticks = q('[data-testid=tool-tick]');
    expect(ticks.map((t) => t.getAttribute('title'))).toEqual([
      `${AGENT_NODE}: read_file src/lib.rs (1.0s)`,
      `${AGENT_NODE}: write_file src/main.rs (1.0s, error)`,
      `${AGENT_NODE}: edit_file src/lib.rs (0.0s)`,
      `${AGENT_NODE}: shell cargo test (4.0s)`,
    ]);
    expect(ticks[1]?.className).toContain('timeline__tick--failed');
    // The shell call ran from 26 s to 30 s of an 11 s stage that started at 20 s.
    expect(parseFloat(ticks[3]?.style.left ?? '')).toBeCloseTo((6 / 11) * 100, 5);
    expect(parseFloat(ticks[3]?.style.width ?? '')).toBeCloseTo((4 / 11) * 100, 5);
  });

  it('gives each call to the attempt it started in', () => {
    const events = agentEvents(false);
    // A retry at 24 s: the calls of the first 4 s belong to attempt 1.
    const retried = [
      ...events.slice(0, 11),
      ev(24, AGENT_NODE, 1, { event: 'stage.retrying', properties: { attempt: 1, delay_ms: 0, reason: 'llm.overloaded' } }),
      ev(24, AGENT_NODE, 1, { event: 'stage.started', properties: { handler: 'agent', attempt: 2 } }),
      ...events.slice(11),
    ];
    const bars = timelineOf([agentStage(false)], retried, 0).lanes[0]!.bars;
    expect(bars.map((b) => [b.attempt, b.ticks.map((t) => t.tool)])).toEqual([
      [1, ['read_file', 'write_file']],
      [2, ['edit_file', 'shell']],
    ]);
  });
});
