// @vitest-environment happy-dom
import React, { act } from 'react';
import { describe, expect, it } from 'vitest';

import type { Changes, Host, RunView } from '../api';
import { makeTestHost } from '../api/testHost';
import { renderNow, until } from '../render.test-helper';
import { failedView, RUN, stage } from '../run/fixture.test-data';
import { RunScreen } from '../run/RunScreen';
import { DIFF_ROW_HEIGHT } from './DiffView';
import { FilesChanged, PatchView, STAGES_LISTED_MAX, type ChangesSource } from './FilesChanged';
import { GIT_PATCH } from './patch.test-data';

function recorded(patch: string, extra: Partial<Changes> = {}): Changes {
  return { state: 'recorded', patch, size: patch.length, truncated: false, incomplete: false, ...extra };
}

const rowsOf = (el: HTMLElement, kind: string) => [...el.querySelectorAll<HTMLElement>(`[data-testid=diff-view] [data-row=${kind}]`)];
const click = (el: Element | null | undefined) => act(() => (el as HTMLElement | null)?.click());

describe('the diff viewer', () => {
  it('shows a unified diff with both line numbers, signs and highlighted code', async () => {
    const el = renderNow(<PatchView changes={recorded(GIT_PATCH)} />);
    // The highlighter loads with the first diff.
    await until(() => el.querySelector('.hljs-keyword') !== null);
    expect(el.querySelector('[data-testid=changes-totals]')?.textContent).toBe('6 files changed +2 −2');
    const lines = rowsOf(el, 'line').map((r) => r.textContent);
    expect(lines).toContain('2-    println!("hi");');
    expect(lines).toContain('2+    println!("hello");');
    // main.rs is Rust: `fn` is a keyword; old.txt has no language and stays plain.
    const fnRow = rowsOf(el, 'line').find((r) => r.textContent?.includes('fn main'));
    expect(fnRow?.querySelector('.hljs-keyword')?.textContent).toBe('fn');
    const gone = rowsOf(el, 'line').find((r) => r.textContent?.endsWith('gone'));
    expect(gone?.querySelector('[class^=hljs]')).toBeNull();
  });

  it('names a binary file and shows none of its bytes', () => {
    const el = renderNow(<PatchView changes={recorded(GIT_PATCH)} />);
    const binary = rowsOf(el, 'binary');
    expect(binary.map((r) => r.textContent)).toEqual(['Binary file logo.png: not shown.']);
    expect(el.textContent).not.toContain('PNG');
    const header = rowsOf(el, 'file').find((r) => r.textContent?.includes('logo.png'));
    expect(header?.textContent).toBe('Alogo.pngbinary');
  });

  it('sets removed lines beside added ones in split mode', () => {
    const el = renderNow(<PatchView changes={recorded(GIT_PATCH)} />);
    click([...el.querySelectorAll('[role=tab]')].find((b) => b.textContent === 'Split'));
    expect(el.querySelector('[data-testid=diff-view]')?.getAttribute('data-mode')).toBe('split');
    expect(rowsOf(el, 'line').filter((r) => !r.textContent?.includes('No newline'))).toEqual([]);
    const changed = rowsOf(el, 'pair').find((r) => r.textContent?.includes('hello'));
    const [left, right] = [...(changed?.querySelectorAll('.diff__side') ?? [])];
    expect(left?.className).toContain('diff__side--del');
    expect(left?.textContent).toBe('2    println!("hi");');
    expect(right?.className).toContain('diff__side--add');
    expect(right?.textContent).toBe('2    println!("hello");');
    // The deleted file's line has nothing beside it.
    const gone = rowsOf(el, 'pair').find((r) => r.textContent?.includes('gone'));
    expect(gone?.querySelectorAll('.diff__side--none')).toHaveLength(1);
  });

  it('keeps the DOM small for a 50,000-line diff and follows the scroll', () => {
    const n = 50_000;
    const body = Array.from({ length: n }, (_, i) => `+const line${i} = ${i};`).join('\n');
    const patch = `diff --git a/big.ts b/big.ts\nnew file mode 100644\n--- /dev/null\n+++ b/big.ts\n@@ -0,0 +1,${n} @@\n${body}\n`;
    const el = renderNow(<PatchView changes={recorded(patch)} />);
    const view = el.querySelector<HTMLElement>('[data-testid=diff-view]');
    expect(view?.querySelectorAll('.diff__row').length, 'a window of rows, not 50,000').toBeLessThan(120);
    const spacer = view?.querySelector<HTMLElement>('.diff__spacer');
    expect(spacer?.style.height).toBe(`${(n + 2) * DIFF_ROW_HEIGHT}px`);

    act(() => {
      if (view) view.scrollTop = 30_000 * DIFF_ROW_HEIGHT;
      view?.dispatchEvent(new Event('scroll'));
    });
    const shown = rowsOf(el, 'line').map((r) => r.textContent ?? '');
    expect(shown.some((t) => t.includes('const line29998 = 29998;'))).toBe(true);
    expect(view?.querySelectorAll('.diff__row').length).toBeLessThan(120);
  });

  it('scrolls to a file picked in the tree', () => {
    const files = Array.from({ length: 40 }, (_, i) => `diff --git a/f${i}.txt b/f${i}.txt\n--- a/f${i}.txt\n+++ b/f${i}.txt\n@@ -1,20 +1,20 @@\n${'-a\n+b\n'.repeat(20)}`).join('');
    const el = renderNow(<PatchView changes={recorded(files)} />);
    expect(rowsOf(el, 'file').some((r) => r.textContent?.includes('f39.txt'))).toBe(false);
    click(el.querySelector('[data-testid=changes-tree] [data-path="f39.txt"]'));
    expect(rowsOf(el, 'file').some((r) => r.textContent?.includes('f39.txt'))).toBe(true);
    expect(el.querySelector('[data-path="f39.txt"]')?.getAttribute('aria-selected')).toBe('true');
  });

  it('says when the patch was cut, by the engine, the read or the parser', () => {
    const el = renderNow(<PatchView changes={recorded(GIT_PATCH, { truncated: true, incomplete: true, size: 40 * 1024 * 1024 })} />);
    const notes = [...el.querySelectorAll('[role=note]')].map((n) => n.textContent);
    expect(notes).toEqual([
      "The engine kept only the start of this stage's patch (32 MiB); its commit holds the whole change.",
      'Only the start of the patch is shown: it is 40.0 MB, the view reads at most 4 MiB.',
    ]);
  });
});

describe('the Files Changed panel', () => {
  const checkpointed = (status: RunView['run']['status'] = 'failed'): RunView => ({
    ...failedView(),
    run: { ...failedView().run, status },
    git: { base_sha: 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678', run_branch: `weft/run/${RUN}`, meta_branch: null, repo: '/home/me/shop', final_git_commit_sha: null },
  });
  const hostWith = (view: RunView, changes: Record<string, Changes>): Host =>
    makeTestHost({ views: [view], events: {}, stageFiles: {}, questions: [], changes });

  function Panel({ host, view, initial = null }: { host: Host; view: RunView; initial?: ChangesSource }) {
    const [source, setSource] = React.useState<ChangesSource>(initial);
    return <FilesChanged host={host} view={view} source={source} onSource={setSource} />;
  }

  it('says a run without checkpoints has no changes, without asking for any', () => {
    const host: Host = { ...makeTestHost(), runChanges: () => Promise.reject(new Error('must not be asked')) };
    const el = renderNow(<Panel host={host} view={failedView()} />);
    expect(el.querySelector('[data-testid=changes-note]')?.textContent).toMatch(/no git checkpoints/);
  });

  it('shows the whole run by default, and a stage picked from the list', async () => {
    const view = checkpointed();
    const host = hostWith(view, { [RUN]: recorded(GIT_PATCH), [`${RUN}/build/1`]: recorded('diff --git a/Makefile b/Makefile\n--- a/Makefile\n+++ b/Makefile\n@@ -1 +1 @@\n-all:\n+all: build\n') });
    const el = renderNow(<Panel host={host} view={view} />);
    await until(() => el.querySelector('[data-testid=changes-totals]') !== null);
    expect(el.querySelector('[data-testid=changes-totals]')?.textContent).toContain('6 files changed');
    click([...el.querySelectorAll('[role=tab]')].find((b) => b.textContent === 'Split'));
    const select = el.querySelector('select');
    act(() => {
      if (select) select.value = 'build@1';
      select?.dispatchEvent(new Event('change', { bubbles: true }));
    });
    await until(() => el.querySelector('[data-testid=files-changed]')?.getAttribute('data-source') === 'build@1' && !!el.querySelector('[data-testid=changes-totals]'));
    expect(el.querySelector('[data-testid=changes-totals]')?.textContent).toContain('1 file changed');
    expect(el.querySelector('[data-testid=diff-view]')?.getAttribute('data-mode'), 'split stays chosen across stages').toBe('split');
    expect(el.querySelector('[data-path=Makefile]')).not.toBeNull();
  });

  it("while the run goes on, says the final patch comes at its end and lists the stages", async () => {
    const view = checkpointed('running');
    const host = hostWith(view, { [`${RUN}/push/1`]: { state: 'empty', patch: '', size: 0, truncated: false, incomplete: false } });
    const el = renderNow(<Panel host={host} view={view} />);
    await until(() => el.querySelector('[data-testid=changes-stages]') !== null);
    expect(el.querySelector('[data-testid=changes-note]')?.textContent).toMatch(/final patch is written when it ends/);
    click([...el.querySelectorAll('[data-testid=changes-stages] button')].find((b) => b.textContent === 'push'));
    await until(() => el.querySelector('[data-testid=changes-note]')?.textContent === 'push changed no file.');
  });

  it('lists at most STAGES_LISTED_MAX stages under the note, the rest stay in the picker', async () => {
    const many = Array.from({ length: STAGES_LISTED_MAX + 100 }, (_, i) => stage('loop', i + 1, i + 1, 'succeeded', 0, 1));
    const view = { ...checkpointed('running'), stages: many };
    const el = renderNow(<Panel host={hostWith(view, {})} view={view} />);
    await until(() => el.querySelector('[data-testid=changes-stages]') !== null);
    expect(el.querySelectorAll('[data-testid=changes-stages] button')).toHaveLength(STAGES_LISTED_MAX);
    expect(el.querySelector('[data-testid=changes-stages]')?.textContent).toContain('and 100 more');
    expect(el.querySelectorAll('select option')).toHaveLength(STAGES_LISTED_MAX + 101);
  });

  it('opens from the stage panel of a checkpointed run, and the header shows branch and base', async () => {
    const view = checkpointed();
    const host = hostWith(view, { [`${RUN}/push/1`]: recorded('diff --git a/deploy.sh b/deploy.sh\n--- a/deploy.sh\n+++ b/deploy.sh\n@@ -1 +1 @@\n-old\n+new\n') });
    const el = renderNow(<RunScreen host={host} route={{ screen: 'run', run: RUN, node: 'push' }} />);
    await until(() => el.querySelector('[data-testid=stage-changes-link]') !== null);
    expect(el.querySelector('[data-testid=run-git]')?.textContent).toBe(`Gitweft/run/${RUN} from a1b2c3d4`);
    click(el.querySelector('[data-testid=stage-changes-link]'));
    await until(() => el.querySelector('[data-path="deploy.sh"]') !== null);
    expect(el.querySelector('[data-testid=files-changed]')?.getAttribute('data-source')).toBe('push@1');
  });

  it('offers no stage link and no git facts for a run without checkpoints', async () => {
    const host = makeTestHost({ views: [failedView()], events: {}, stageFiles: {}, questions: [] });
    const el = renderNow(<RunScreen host={host} route={{ screen: 'run', run: RUN, node: 'push' }} />);
    await until(() => el.querySelector('[data-testid=stage-detail]') !== null);
    expect(el.querySelector('[data-testid=stage-changes-link]')).toBeNull();
    expect(el.querySelector('[data-testid=run-git]')).toBeNull();
  });
});
