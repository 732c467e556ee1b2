// @vitest-environment happy-dom
import { act } from 'react';
import { afterEach, describe, expect, it } from 'vitest';

import type { Forked, Host, RunApplied, RunStatus, RunView } from '../api';
import { makeTestHost } from '../api/testHost';
import { cleanup, render as mount, until } from '../render.test-helper';
import { FAILED_EVENTS, failedView, RUN, stage } from './fixture.test-data';
import { RunScreen } from './RunScreen';

let container: HTMLElement;

afterEach(() => {
  cleanup();
  window.location.hash = '';
});

const GIT = { base_sha: 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678', run_branch: `weft/run/${RUN}`, meta_branch: `weft/meta/${RUN}`, repo: '/home/me/shop', final_git_commit_sha: null };

/** The failed fixture run with `status`, git facts unless `git` is false, and `archived`. */
function view({ status = 'failed', git = true, archived = false }: { status?: RunStatus; git?: boolean; archived?: boolean } = {}): RunView {
  const v = failedView();
  return { ...v, run: { ...v.run, status, archived }, ...(git ? { git: GIT } : {}) };
}

/** Calls the actions made, in order, as `[command, ...args]`. */
type Calls = unknown[][];

/**
 * The test host over `v`, its `runApply` answering with `apply` (a result or
 * a rejection) and `runFork` with a new run, both recording their calls.
 */
function hostOf(v: RunView, apply?: (patch: boolean, force: boolean) => Promise<RunApplied>) {
  const calls: Calls = [];
  const h: Host = {
    ...makeTestHost({ views: [v], events: { [RUN]: FAILED_EVENTS }, stageFiles: {}, questions: [] }),
    runApply: (run, patch, force) => {
      calls.push(['runApply', run, patch, force]);
      return apply ? apply(patch, force) : Promise.reject({ code: 'daemon.not_running', message: 'no daemon' });
    },
    runFork: (run, target, rewind) => {
      calls.push(['runFork', run, target, rewind]);
      const from = { ordinal: 2, node_id: target?.split('@')[0] ?? 'build', visit: 1, status: 'succeeded', seq: 6, ts: '', next_node: null, checkpoint: {} };
      return Promise.resolve({ run_id: '01HFORKED', run_dir: '/runs/f', source: run, from, archived_source: rewind } satisfies Forked);
    },
  };
  return { host: h, calls };
}

async function render(h: Host, node?: string) {
  container = await mount(<RunScreen host={h} route={{ screen: 'run', run: RUN, ...(node ? { node } : {}) }} />);
  await until(() => container.querySelector('[data-testid=run-header]') !== null);
}

const q = (sel: string) => container.querySelector<HTMLElement>(sel);

async function click(sel: string) {
  const el = q(sel);
  if (!el) throw new Error(`nothing matches ${sel}`);
  await act(async () => el.click());
}

const merged: RunApplied = { run_id: RUN, run_branch: GIT.run_branch, repo: GIT.repo, action: 'merged', branch: 'main', from: 'f00dfeed00000000', commit: 'c0ffee1234567890', worktree_updated: true };

describe('Apply', () => {
  it('is offered for a git-checkpointed run that is not going, and not otherwise', async () => {
    for (const [v, shown] of [
      [view({ status: 'succeeded' }), true],
      [view({ status: 'failed' }), true],
      [view({ status: 'cancelled' }), true],
      [view({ status: 'running' }), false],
      [view({ status: 'blocked' }), false],
      [view({ status: 'succeeded', git: false }), false],
    ] as const) {
      await render(hostOf(v).host);
      expect(q('[data-testid=apply-run]') !== null, `${v.run.status}, git ${!!v.git}`).toBe(shown);
      cleanup();
    }
  });

  it('merges by default and says what it did', async () => {
    const { host, calls } = hostOf(view({ status: 'succeeded' }), () => Promise.resolve(merged));
    await render(host);
    await click('[data-testid=apply-run]');
    expect(q('[data-testid=apply-dialog]')?.textContent).toContain('/home/me/shop');
    expect((q('input[value=merge]') as HTMLInputElement).checked, 'merge is the default').toBe(true);
    await click('[data-testid=apply-confirm]');
    await until(() => q('[data-testid=apply-result]') !== null);
    expect(calls).toEqual([['runApply', RUN, false, false]]);
    expect(q('[data-testid=apply-result]')?.textContent).toContain(`Merged weft/run/${RUN} into main as commit c0ffee12`);
    expect(q('[data-testid=apply-confirm]'), 'applied once, the dialog only closes').toBeNull();
  });

  it('applies final.patch to the working tree when asked, naming the files', async () => {
    const patched: RunApplied = { run_id: RUN, run_branch: GIT.run_branch, repo: GIT.repo, action: 'patched', files: ['src/a.rs', 'README.md'] };
    const { host, calls } = hostOf(view({ status: 'succeeded' }), () => Promise.resolve(patched));
    await render(host);
    await click('[data-testid=apply-run]');
    await click('input[value=patch]');
    await click('[data-testid=apply-confirm]');
    await until(() => q('[data-testid=apply-result]') !== null);
    expect(calls).toEqual([['runApply', RUN, true, false]]);
    const result = q('[data-testid=apply-result]')?.textContent ?? '';
    expect(result).toContain('Patched 2 files in the working tree at /home/me/shop');
    expect(result).toContain('src/a.rs');
  });

  it('shows a refusal with the paths the daemon named, and changes nothing more', async () => {
    const dirty = { code: 'apply.dirty', message: 'the checkout at /home/me/shop has uncommitted changes (notes.txt, src/lib.rs)', paths: ['notes.txt', 'src/lib.rs'] };
    const { host, calls } = hostOf(view({ status: 'succeeded' }), () => Promise.reject(dirty));
    await render(host);
    await click('[data-testid=apply-run]');
    await click('[data-testid=apply-confirm]');
    await until(() => q('[data-testid=apply-refused]') !== null);
    expect(q('[data-testid=apply-refused]')?.getAttribute('data-code')).toBe('apply.dirty');
    expect(q('[data-testid=apply-refused]')?.textContent).toContain('uncommitted changes');
    expect([...container.querySelectorAll('[data-testid=apply-paths] li')].map((li) => li.textContent)).toEqual(['notes.txt', 'src/lib.rs']);
    expect(q('[data-testid=apply-anyway]'), 'force is no answer to a dirty checkout').toBeNull();
    expect(calls).toHaveLength(1);
  });

  it('offers "Apply anyway" for a failed run the daemon wants forced, and sends force', async () => {
    const { host, calls } = hostOf(view({ status: 'failed' }), (_patch, force) =>
      force ? Promise.resolve({ ...merged, action: 'fast_forwarded', from: 'a1b2c3d4e5', to: 'c0ffee1234' } as RunApplied) : Promise.reject({ code: 'apply.needs_force', message: `run ${RUN} failed: its branch holds only the work of the stages that completed; pass --force to apply it anyway` }),
    );
    await render(host);
    await click('[data-testid=apply-run]');
    await click('[data-testid=apply-confirm]');
    await until(() => q('[data-testid=apply-anyway]') !== null);
    await click('[data-testid=apply-anyway]');
    await until(() => q('[data-testid=apply-result]') !== null);
    expect(calls).toEqual([
      ['runApply', RUN, false, false],
      ['runApply', RUN, false, true],
    ]);
    expect(q('[data-testid=apply-result]')?.textContent).toContain('Fast-forwarded main from a1b2c3d4 to c0ffee12');
  });

  it('says the daemon is not running and offers to start it', async () => {
    const { host } = hostOf(view({ status: 'succeeded' }));
    await render(host);
    await click('[data-testid=apply-run]');
    await click('[data-testid=apply-confirm]');
    await until(() => q('[data-testid=apply-refused]') !== null);
    expect(q('[data-testid=apply-refused]')?.getAttribute('data-code')).toBe('daemon.not_running');
    expect(q('[data-testid=apply-refused]')?.textContent).toContain('Start daemon');
  });

  it('starts the daemon when asked and applies then', async () => {
    let daemon = false;
    const { host, calls } = hostOf(view({ status: 'succeeded' }), () =>
      daemon ? Promise.resolve(merged) : Promise.reject({ code: 'daemon.not_running', message: 'no daemon' }),
    );
    host.daemonStart = () => {
      daemon = true;
      return Promise.resolve({ version: '0', protocol: 1, pid: 1, uptime_ms: 0, runs_running: 0, runs_queued: 0, home: '', db_path: '', socket_path: '' });
    };
    await render(host);
    await click('[data-testid=apply-run]');
    await click('[data-testid=apply-confirm]');
    await until(() => q('[data-testid=apply-refused]') !== null);
    const start = [...container.querySelectorAll<HTMLButtonElement>('[data-testid=apply-refused] button')].find((b) => b.textContent === 'Start daemon');
    await act(async () => start?.click());
    await until(() => q('[data-testid=apply-result]') !== null);
    expect(calls).toEqual([
      ['runApply', RUN, false, false],
      ['runApply', RUN, false, false],
    ]);
  });
});

describe('Fork and rewind', () => {
  it('offers both in the stage menu of an ended run, and only fork once it is archived or cancelled', async () => {
    for (const [v, fork, rewind] of [
      [view({ status: 'failed' }), true, true],
      [view({ status: 'succeeded', git: false }), true, true],
      [view({ status: 'failed', archived: true }), true, false],
      [view({ status: 'cancelled' }), true, false],
      [view({ status: 'running' }), false, false],
    ] as const) {
      await render(hostOf(v).host, 'build');
      const label = `${v.run.status}${v.run.archived ? ', archived' : ''}`;
      expect(q('[data-testid=fork-here]') !== null, `fork, ${label}`).toBe(fork);
      expect(q('[data-testid=rewind-here]') !== null, `rewind, ${label}`).toBe(rewind);
      expect(q('[data-testid=fork-run]') !== null, `header fork, ${label}`).toBe(fork);
      cleanup();
    }
  });

  it('has no checkpoint menu on a stage still running', async () => {
    const v = view({ status: 'cancelled' });
    v.stages = [...v.stages, stage('approve', 1, 4, 'running', 12, null)];
    await render(hostOf(v).host, 'approve');
    expect(q('[data-testid=stage-detail]')?.getAttribute('data-node')).toBe('approve');
    expect(q('[data-testid=stage-menu]')).toBeNull();
  });

  it('forks from the stage shown and opens the new run', async () => {
    const { host, calls } = hostOf(view({ status: 'failed' }));
    await render(host, 'build');
    await click('[data-testid=fork-here]');
    await until(() => window.location.hash !== '');
    expect(calls).toEqual([['runFork', RUN, 'build@1', false]]);
    expect(window.location.hash).toBe('#/run/01HFORKED');
  });

  it('rewinds only after the user confirms', async () => {
    const { host, calls } = hostOf(view({ status: 'succeeded' }));
    await render(host, 'build');
    await click('[data-testid=rewind-here]');
    expect(calls, 'nothing sent before the confirmation').toEqual([]);
    expect(q('[data-testid=rewind-confirm]')?.textContent).toContain(`run ${RUN} is archived`);
    const rewind = [...container.querySelectorAll<HTMLButtonElement>('[data-testid=rewind-confirm] button')].find((b) => b.textContent === 'Rewind');
    await act(async () => rewind?.click());
    await until(() => window.location.hash !== '');
    expect(calls).toEqual([['runFork', RUN, 'build@1', true]]);
  });

  it('forks the latest checkpoint from the run header', async () => {
    const { host, calls } = hostOf(view({ status: 'succeeded' }));
    await render(host);
    await click('[data-testid=fork-run]');
    await until(() => calls.length > 0);
    expect(calls).toEqual([['runFork', RUN, null, false]]);
  });

  it('shows a refusal from the daemon in the stage panel', async () => {
    const { host } = hostOf(view({ status: 'failed' }));
    host.runFork = () => Promise.reject({ code: 'checkpoint.not_found', message: 'run has no checkpoint build@1' });
    await render(host, 'build');
    await click('[data-testid=fork-here]');
    await until(() => q('[data-testid=stage-menu] [role=alert]') !== null);
    expect(q('[data-testid=stage-menu] [role=alert]')?.textContent).toContain('Forking failed: run has no checkpoint build@1');
  });

  it('a forked run waiting to be resumed says so beside Resume', async () => {
    const reason = `forked from run 01HSOURCE at build@1; resume it to continue`;
    const v = view({ status: 'cancelled' });
    v.run = { ...v.run, failure_reason: reason };
    await render(hostOf(v).host);
    expect(q('[data-testid=run-stopped-reason]')?.textContent).toBe(reason);
    expect([...container.querySelectorAll('[data-testid=run-header] button')].some((b) => b.textContent === 'Resume')).toBe(true);
  });
});
