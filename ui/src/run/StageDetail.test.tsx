// @vitest-environment happy-dom
import { describe, expect, it } from 'vitest';

import type { Event, StageRecord } from '../api';
import { cleanup, renderNow } from '../render.test-helper';
import { CONTAINER, ev, FAILED_EVENTS, FAILED_STAGES, SANDBOX_ENGINE, sandboxedEvents, stage } from './fixture.test-data';
import { StageDetail } from './StageDetail';
import type { FilesLoad } from './useRun';

const NO_FILES: FilesLoad = { kind: 'ready', seq: 0, files: { prompt: null, response: null, stdout: null, stderr: null, status: null, script: null, truncated: [] } };

function where(s: StageRecord, events: readonly Event[]): string | null {
  const container = renderNow(<StageDetail stage={s} files={NO_FILES} events={events} />);
  const line = container.querySelector('[data-testid=stage-container]')?.textContent ?? null;
  cleanup();
  return line;
}

const [start, build, push] = FAILED_STAGES as [StageRecord, StageRecord, StageRecord];

describe('the stage panel of a sandboxed run', () => {
  it('says which container and image the stage ran in', () => {
    expect(where(build, sandboxedEvents())).toBe(`Ran in container ${CONTAINER} (weft-test:latest)`);
  });

  it('says when a resume after a crash reused the container', () => {
    expect(where(push, sandboxedEvents())).toBe(`Ran in container ${CONTAINER} (weft-test:latest) (reused after a restart)`);
  });

  it('says nothing for a stage that ran nothing in the container, nor in a run on the host', () => {
    expect(where(start, sandboxedEvents())).toBeNull();
    expect(where(build, FAILED_EVENTS)).toBeNull();
  });

  it('shows the visit it is on, and a running stage in the present tense', () => {
    const ready = (visit: number, id: string) =>
      ev(20 + visit, 'test', visit, { event: 'sandbox.ready', properties: { container: id, image: 'rust:1', engine: SANDBOX_ENGINE, attach: 'running' } });
    const events = [ready(1, 'aaaaaaaaaaaa'), ready(2, 'bbbbbbbbbbbb')];
    expect(where(stage('test', 1, 4, 'failed', 20, 21), events)).toBe('Ran in container aaaaaaaaaaaa (rust:1)');
    expect(where(stage('test', 2, 5, 'running', 22, null), events)).toBe('Runs in container bbbbbbbbbbbb (rust:1)');
  });
});
