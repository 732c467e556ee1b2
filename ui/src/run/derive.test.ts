import { describe, expect, it } from 'vitest';

import { choiceForKey, choicesOf, parseAccelerator } from '../gates/accelerator';
import {
  containerShellCommand,
  deriveGraph,
  failureSummary,
  followedStage,
  nodeAttribute,
  routingOf,
  runContainer,
  stageBefore,
  stageContainers,
  timelineOf,
} from './derive';
import { CONTAINER, ev, FAILED_EVENTS, FAILED_STAGES, failedView, GRAPH, QUESTION, SANDBOX_ENGINE, sandboxedEvents, stage } from './fixture.test-data';

describe('deriveGraph', () => {
  it('colours each node by its latest stage and follows the taken edges', () => {
    const d = deriveGraph(FAILED_STAGES, FAILED_EVENTS, []);
    expect(d.states).toEqual({ start: 'succeeded', build: 'succeeded', push: 'failed' });
    expect(d.takenEdges).toEqual([
      ['start', 'build'],
      ['build', 'push'],
    ]);
    expect(d.visits).toEqual({ start: 1, build: 1, push: 1 });
  });

  it('takes the latest visit of a node, and the max visit as its badge', () => {
    const stages = [stage('build', 1, 1, 'failed', 0, 1), stage('build', 2, 2, 'succeeded', 1, 2)];
    const d = deriveGraph(stages, [], []);
    expect(d.states.build).toBe('succeeded');
    expect(d.visits.build).toBe(2);
  });

  it('moves on with live events: running, then retrying, then the outcome', () => {
    const started = ev(0, 'test', 1, { event: 'stage.started', properties: { handler: 'command', attempt: 1 } });
    expect(deriveGraph([], [started], []).states.test).toBe('running');
    const retrying = ev(1, 'test', 1, { event: 'stage.retrying', properties: { attempt: 1, delay_ms: 10, reason: 'x' } });
    expect(deriveGraph([], [started, retrying], []).states.test).toBe('retrying');
    // A stale view (stage still running) does not override a later event.
    expect(deriveGraph([stage('test', 1, 1, 'running', 0, null)], [started, retrying], []).states.test).toBe('retrying');
  });

  it('shows a node with a pending question as waiting, until an answer event arrives', () => {
    const stages = [stage('approve', 1, 1, 'running', 0, null, { handler: 'human' })];
    expect(deriveGraph(stages, [], [QUESTION]).states.approve).toBe('waiting');
    const answered = ev(5, 'approve', 1, { event: 'interview.completed', properties: { question_id: 'q1', selected: '[S] Ship' } });
    expect(deriveGraph(stages, [answered], [QUESTION]).states.approve).toBe('running');
  });
});

describe('failureSummary', () => {
  it('names the failing stage and its reason in plain words', () => {
    const f = failureSummary(failedView());
    expect(f).toMatchObject({ node: 'push', visit: 1, reason: 'command exited with status 1: error: host unreachable' });
    // The run's reason adds the policy that stopped the run.
    expect(f?.runReason).toContain('on_failure=exit');
  });

  it('falls back to the run reason when no stage failed (a stalled run)', () => {
    const view = failedView();
    view.stages = FAILED_STAGES.slice(0, 2);
    view.run.failure_reason = 'stalled: no activity for 1800s';
    expect(failureSummary(view)).toEqual({ node: null, visit: null, reason: 'stalled: no activity for 1800s', runReason: null });
  });

  it('is null unless the run failed', () => {
    const view = failedView();
    view.run.status = 'succeeded';
    expect(failureSummary(view)).toBeNull();
  });
});

describe('followedStage', () => {
  const at = (view: ReturnType<typeof failedView>) => {
    const s = followedStage(view);
    return s && `${s.node_id}@${s.visit}`;
  };

  it('follows a live run to the stage that started last', () => {
    const view = failedView();
    view.run.status = 'running';
    view.stages = [stage('start', 1, 1, 'succeeded', 0, 0), stage('build', 1, 2, 'running', 0, null)];
    expect(at(view)).toBe('build@1');
    view.stages = [...view.stages.slice(0, 1), stage('build', 1, 2, 'succeeded', 0, 10), stage('push', 1, 3, 'running', 10, null)];
    expect(at(view)).toBe('push@1');
  });

  it('shows the failed stage of a failed run, even when stages ran after it', () => {
    const view = failedView();
    view.stages = [...FAILED_STAGES, stage('notify', 1, 4, 'succeeded', 12, 13)];
    expect(at(view)).toBe('push@1');
  });

  it('shows the last stage that did work once a run succeeded, not its exit', () => {
    const view = failedView();
    view.run.status = 'succeeded';
    view.stages = [
      stage('start', 1, 1, 'succeeded', 0, 0, { handler: 'start' }),
      stage('build', 1, 2, 'succeeded', 0, 10),
      stage('exit', 1, 3, 'succeeded', 10, 10, { handler: 'exit' }),
    ];
    expect(at(view)).toBe('build@1');
  });

  it('shows the start node while nothing else has started', () => {
    const view = failedView();
    view.run.status = 'running';
    view.stages = [stage('start', 1, 1, 'running', 0, null, { handler: 'start' })];
    expect(at(view)).toBe('start@1');
  });

  it('takes a stage restarted on resume as the latest, though it keeps its rank', () => {
    const view = failedView();
    view.run.status = 'running';
    view.stages = [stage('start', 1, 1, 'succeeded', 0, 0), stage('build', 1, 2, 'running', 60, null), stage('lint', 1, 3, 'interrupted', 5, 6)];
    expect(at(view)).toBe('build@1');
  });

  it('is nothing before any stage started', () => {
    const view = failedView();
    view.run.status = 'queued';
    view.stages = [];
    expect(followedStage(view)).toBeUndefined();
  });
});

describe('timelineOf', () => {
  it('splits a retried stage into one bar per attempt', () => {
    const tl = timelineOf(FAILED_STAGES, FAILED_EVENTS, 0);
    expect(tl.lanes).toHaveLength(1);
    const build = tl.lanes[0]!.bars.filter((b) => b.node === 'build');
    expect(build.map((b) => [b.attempt, b.status])).toEqual([
      [1, 'retried'],
      [2, 'succeeded'],
    ]);
    // The first attempt ends where the retry was announced (4 s in).
    expect(build[0]!.end - build[0]!.start).toBe(4000);
  });

  it('puts parallel branches side by side in their own lanes, main line first', () => {
    const stages = [
      stage('fan', 1, 1, 'succeeded', 0, 10, { handler: 'parallel' }),
      stage('lint', 1, 2, 'succeeded', 1, 4, { branch: 'lint' }),
      stage('test', 1, 3, 'failed', 1, 8, { branch: 'test' }),
      stage('join', 1, 4, 'succeeded', 10, 11),
    ];
    const tl = timelineOf(stages, [], 0);
    expect(tl.lanes.map((l) => l.branch)).toEqual([null, 'lint', 'test']);
    expect(tl.lanes[0]!.bars.map((b) => b.node)).toEqual(['fan', 'join']);
    // lint and test overlap in time: side by side, not one after the other.
    expect(tl.lanes[1]!.bars[0]!.start).toBe(tl.lanes[2]!.bars[0]!.start);
    expect(tl.end - tl.start).toBe(11_000);
  });

  it('runs an unfinished stage up to now', () => {
    const s = stage('slow', 1, 1, 'running', 0, null);
    const now = Date.parse(s.started_at) + 5000;
    const bar = timelineOf([s], [], now).lanes[0]!.bars[0]!;
    expect(bar.open).toBe(true);
    expect(bar.end - bar.start).toBe(5000);
  });
});

describe('routing and graph attributes', () => {
  it('finds the edge a stage took and why', () => {
    const [edge] = routingOf(FAILED_EVENTS, 'build', 1);
    expect(edge?.event === 'edge.selected' && edge.properties.to_node).toBe('push');
  });

  it('reads a gate node timeout and default choice, not an edge attribute', () => {
    expect(nodeAttribute(GRAPH, 'approve', 'timeout')).toBe('15m');
    expect(nodeAttribute(GRAPH, 'approve', 'human.default_choice')).toBe('[H] Hold');
    expect(nodeAttribute(GRAPH, 'build', 'timeout')).toBeNull();
  });

  it('finds the work before a gate, skipping conditionals', () => {
    const stages = [
      stage('build', 1, 1, 'succeeded', 0, 1),
      stage('check', 1, 2, 'succeeded', 1, 1, { handler: 'conditional' }),
      stage('approve', 1, 3, 'running', 1, null, { handler: 'human' }),
    ];
    expect(stageBefore(stages, 'approve', 1)?.node_id).toBe('build');
  });
});

describe('accelerators', () => {
  it('parses the three formats as the engine does', () => {
    expect(parseAccelerator('[A] Approve')).toEqual({ key: 'A', text: 'Approve' });
    expect(parseAccelerator('Y) Yes')).toEqual({ key: 'Y', text: 'Yes' });
    expect(parseAccelerator('Yes - ship it')).toEqual({ key: 'Yes', text: 'ship it' });
    expect(parseAccelerator('A-B test')).toEqual({ key: null, text: 'A-B test' });
    expect(parseAccelerator('Approve - with notes')).toEqual({ key: null, text: 'Approve - with notes' });
    expect(parseAccelerator('[A]')).toEqual({ key: null, text: '[A]' });
  });

  it('gives keyless options their number and keeps the first of two equal keys', () => {
    const choices = choicesOf(['[S] Ship', 'Later', '[s] Skip']);
    expect(choices.map((c) => c.hotkey)).toEqual(['s', '2', null]);
    expect(choiceForKey(choices, 'S')?.text).toBe('Ship');
    expect(choiceForKey(choices, 'x')).toBeUndefined();
  });
});

describe('where a sandboxed run ran', () => {
  const ready = (at: number, node: string, visit: number, container: string, attach: string) =>
    ev(at, node, visit, { event: 'sandbox.ready', properties: { container, image: 'weft-test:latest', engine: SANDBOX_ENGINE, attach } });

  it('gives a stage the container its attempts ran in, once, and says when a restart reused it', () => {
    const events = sandboxedEvents();
    expect(stageContainers(events, 'build', 1)).toEqual([{ container: CONTAINER, image: 'weft-test:latest', engine: SANDBOX_ENGINE, reused: false }]);
    expect(stageContainers(events, 'push', 1)).toEqual([{ container: CONTAINER, image: 'weft-test:latest', engine: SANDBOX_ENGINE, reused: true }]);
  });

  it('gives nothing for a stage that ran nothing in the container, nor for a run on the host', () => {
    expect(stageContainers(sandboxedEvents(), 'start', 1)).toEqual([]);
    expect(stageContainers(FAILED_EVENTS, 'build', 1)).toEqual([]);
  });

  it('keeps visits apart and lists each container a visit moved to, in recording order', () => {
    const first = ready(1, 'test', 1, 'aaaaaaaaaaaa', 'created');
    const second = ready(3, 'test', 1, 'bbbbbbbbbbbb', 'created');
    const events = [second, first, ready(5, 'test', 2, 'cccccccccccc', 'reused')];
    expect(stageContainers(events, 'test', 1).map((c) => c.container)).toEqual(['aaaaaaaaaaaa', 'bbbbbbbbbbbb']);
    expect(stageContainers(events, 'test', 2)).toMatchObject([{ container: 'cccccccccccc', reused: true }]);
  });

  it("tells the run's container in use, then removed or kept at the run's end", () => {
    expect(runContainer(FAILED_EVENTS)).toBeNull();
    expect(runContainer(sandboxedEvents().filter((e) => e.event !== 'sandbox.kept'))).toEqual({ state: 'in_use', container: CONTAINER, engine: SANDBOX_ENGINE });
    expect(runContainer(sandboxedEvents('kept'))).toEqual({ state: 'kept', container: CONTAINER, engine: SANDBOX_ENGINE });
    expect(runContainer(sandboxedEvents('removed'))).toEqual({ state: 'removed', container: CONTAINER });
  });

  it('follows a resumed run back into its container after an earlier end, whatever order the events come in', () => {
    const kept = ev(10, null, null, { event: 'sandbox.kept', properties: { engine: SANDBOX_ENGINE, container: CONTAINER } });
    const again = ready(20, 'push', 2, CONTAINER, 'running');
    expect(runContainer([kept, again])?.state).toBe('in_use');
    expect(runContainer([again, kept])?.state, 'the later seq wins, not the later place').toBe('in_use');
    expect(runContainer([{ ...again, seq: 1 }, { ...kept, seq: 2 }])?.state).toBe('kept');
  });

  it('names DOCKER_HOST in the shell command only for an engine other than the usual socket', () => {
    expect(containerShellCommand(SANDBOX_ENGINE, CONTAINER)).toBe(`docker exec -it ${CONTAINER} sh`);
    expect(containerShellCommand('ssh://deploy@build1', CONTAINER)).toBe(`DOCKER_HOST=ssh://deploy@build1 docker exec -it ${CONTAINER} sh`);
  });
});
