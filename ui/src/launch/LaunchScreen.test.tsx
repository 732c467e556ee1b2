// @vitest-environment happy-dom
import { act } from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';

import type { Diagnostic, Host, RunStart } from '../api';
import { recorded } from '../api/fixtures/recorded';
import { makeTestHost } from '../api/testHost';
import { cleanup, render } from '../render.test-helper';
import { LaunchScreen, dirname, parseInputs, remember, recentWorkflows, startRequest } from './LaunchScreen';

const missingExit: Diagnostic = {
  rule: 'exit_node',
  severity: 'error',
  message: 'the workflow has no exit node',
  span: { start: 0, end: 5, line: 1, column: 1 },
  node_id: null,
  edge: null,
  hint: 'add a node with shape=Msquare',
};

function memoryStorage(): Storage {
  const map = new Map<string, string>();
  return {
    getItem: (k) => map.get(k) ?? null,
    setItem: (k, v) => void map.set(k, v),
    removeItem: (k) => void map.delete(k),
    clear: () => map.clear(),
    key: () => null,
    get length() {
      return map.size;
    },
  };
}

describe('the launch form', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('parses NAME=VALUE inputs and names the line of a bad one', () => {
    expect(parseInputs('a=1\n\nb = two=2\n')).toEqual({ inputs: { a: '1', 'b': ' two=2' } });
    expect(parseInputs('a=1\noops').error).toBe('line 2: expected NAME=VALUE');
  });

  it('builds a start request that runs in the workflow folder unless told otherwise', () => {
    const request: RunStart = startRequest({
      path: '/w/flows/ci.fabro',
      workDir: '',
      goal: '  ',
      inputs: { branch: 'main' },
      autoApprove: true,
      dryRun: false,
      model: 'sonnet',
    });
    expect(request.work_dir).toBe('/w/flows');
    expect(request.goal).toBeNull();
    expect(request.model).toEqual({ model: 'sonnet' });
    expect(request.workflow).toEqual({ path: '/w/flows/ci.fabro' });
    expect(dirname('/flow.fabro')).toBe('/');
  });

  it('suggests the model names the backend knows for the model field', async () => {
    const div = await render(<LaunchScreen host={makeTestHost(recorded)} />);
    const input = div.querySelector<HTMLInputElement>('input[name="model"]');
    const list = div.querySelector('[data-testid=launch-models]');
    expect(input?.getAttribute('list')).toBe(list?.id);
    const options = [...(list?.querySelectorAll('option') ?? [])].map((o) => o.getAttribute('value'));
    // The recorded history's runs asked for claude-haiku-4-5 (the prompt
    // and agent runs), gpt-5.2 (the triage run) and gpt-5-mini (the
    // deploy's retro).
    expect(options).toEqual(['claude-haiku-4-5', 'gpt-5-mini', 'gpt-5.2']);
    cleanup();
  });

  it('leaves the model field free when the backend cannot list models', async () => {
    const host: Host = { ...makeTestHost(), modelNames: () => Promise.reject({ code: 'llm.config', message: 'bad settings.toml' }) };
    const div = await render(<LaunchScreen host={host} />);
    expect(div.querySelectorAll('[data-testid=launch-models] option')).toHaveLength(0);
    expect(div.querySelector('[role=alert]')).toBeNull();
    cleanup();
  });

  it('remembers recent workflows newest first, without duplicates', () => {
    const storage = memoryStorage();
    remember('/a.fabro', storage);
    remember('/b.fabro', storage);
    remember('/a.fabro', storage);
    expect(recentWorkflows(storage)).toEqual(['/a.fabro', '/b.fabro']);
  });

  /** The form after typing a workflow path that validates to `diagnostics`. */
  async function validated(diagnostics: Diagnostic[]) {
    vi.useFakeTimers();
    const host: Host = { ...makeTestHost(), validateWorkflow: () => Promise.resolve(diagnostics) };
    const div = await render(<LaunchScreen host={host} />);
    const input = div.querySelector<HTMLInputElement>('input[name="workflow"]');
    expect(input).not.toBeNull();
    await act(async () => {
      const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')?.set;
      setter?.call(input, '/w/broken.fabro');
      input?.dispatchEvent(new Event('input', { bubbles: true }));
    });
    await act(async () => {
      await vi.advanceTimersByTimeAsync(400);
    });
    return div;
  }

  it('shows a validation error inline and keeps Start disabled', async () => {
    const container = await validated([missingExit]);
    const problems = container.querySelector('[aria-label="Problems in the workflow"]');
    expect(problems?.textContent).toContain('line 1:1');
    expect(problems?.textContent).toContain('the workflow has no exit node');
    const start = [...container.querySelectorAll('button')].find((b) => b.textContent === 'Start run');
    expect(start?.disabled).toBe(true);
    expect(container.textContent).not.toContain('The workflow is valid');
    cleanup();
  });

  it('calls a workflow with only warnings valid, lists the warnings, and lets it start', async () => {
    const warning: Diagnostic = { ...missingExit, rule: 'failure_falls_through', severity: 'warning', message: 'if `build` fails, the run goes on' };
    const container = await validated([warning, { ...warning, message: 'if `ship` fails, the run goes on' }]);
    expect(container.querySelector('.launch__ok')?.textContent).toBe('The workflow is valid. 2 warnings:');
    const problems = container.querySelector('[aria-label="Problems in the workflow"]');
    expect(problems?.textContent).toContain('if `ship` fails');
    const start = [...container.querySelectorAll('button')].find((b) => b.textContent === 'Start run');
    expect(start?.disabled).toBe(false);
    cleanup();
  });
});
