// Mounting React trees in the component tests (happy-dom). Test-only: the
// name keeps it out of vitest's `*.test.tsx` pattern and out of the app
// bundle, which imports nothing from it.
import { act, type ReactNode } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { afterEach } from 'vitest';

// Tells React that updates are wrapped in act(), so it warns about any that are not.
(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

interface Mounted {
  root: Root;
  container: HTMLElement;
}

const mounted: Mounted[] = [];

function mount(): Mounted {
  const container = document.createElement('div');
  document.body.append(container);
  const m = { root: createRoot(container), container };
  mounted.push(m);
  return m;
}

function latest(): Mounted {
  const m = mounted.at(-1);
  if (!m) throw new Error('nothing is mounted: call render first');
  return m;
}

/**
 * Mounts `element` into a fresh container attached to the document, inside an
 * async act() so that effects run and already-settled promises (a test host's
 * answers) are applied before it returns the container.
 */
export async function render(element: ReactNode): Promise<HTMLElement> {
  const m = mount();
  await act(async () => m.root.render(element));
  return m.container;
}

/**
 * Mounts `element` inside a synchronous act(): effects run, but nothing
 * asynchronous is waited for, so a test can see the first paint.
 */
export function renderNow(element: ReactNode): HTMLElement {
  const m = mount();
  act(() => m.root.render(element));
  return m.container;
}

/** Renders `element` into the root mounted last, keeping its state (a props change). */
export function rerender(element: ReactNode): void {
  const m = latest();
  act(() => m.root.render(element));
}

/** Unmounts every tree mounted so far and removes its container; runs after each test. */
export function cleanup(): void {
  for (const m of mounted.splice(0)) {
    act(() => m.root.unmount());
    m.container.remove();
  }
}

// Registered when a test file imports this module (each file gets its own copy).
afterEach(cleanup);

/** Presses `key` where `target` has focus (the page when none), as the browser sends it. */
export async function press(key: string, target: EventTarget = window, init: KeyboardEventInit = {}): Promise<void> {
  await act(async () => {
    target.dispatchEvent(new KeyboardEvent('keydown', { key, bubbles: true, cancelable: true, ...init }));
  });
}

/** Lets time pass inside act(), 10 ms at a time, until `ready` holds; fails after `timeoutMs`. */
export async function until(ready: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await act(() => new Promise((resolve) => setTimeout(resolve, 10)));
  }
}
