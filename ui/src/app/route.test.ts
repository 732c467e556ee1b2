import { describe, expect, it } from 'vitest';

import { parseRoute, routeHash, type Route } from './route';

describe('routes', () => {
  it('every route survives a round trip through its hash', () => {
    const routes: Route[] = [
      { screen: 'runs' },
      { screen: 'gates' },
      { screen: 'launch' },
      { screen: 'spending' },
      { screen: 'retros' },
      { screen: 'run', run: '01ABC' },
      { screen: 'run', run: '01ABC', question: 'Q_1' },
      { screen: 'run', run: '01ABC', node: 'review' },
      { screen: 'run', run: '01ABC', node: 'review', visit: 3 },
      { screen: 'run', run: '01ABC', node: 'review', visit: 1, tab: 'routing' },
      { screen: 'run', run: '01ABC', bar: 'cost' },
      { screen: 'run', run: '01ABC', node: 'a node@2/x!', visit: 2, tab: 'output' },
    ];
    for (const route of routes) expect(parseRoute(routeHash(route))).toEqual(route);
  });

  it('writes the #/run/… forms of the deep-link grammar', () => {
    expect(routeHash({ screen: 'run', run: 'R1' })).toBe('#/run/R1');
    expect(routeHash({ screen: 'run', run: 'R1', question: 'q1' })).toBe('#/run/R1/question/q1');
    expect(routeHash({ screen: 'run', run: 'R1', node: 'review', visit: 2, tab: 'files' })).toBe('#/run/R1/stage/review@2/files');
    expect(routeHash({ screen: 'run', run: 'R1', bar: 'events' })).toBe('#/run/R1/events');
    // Everything but [A-Za-z0-9._~-] is percent-encoded, `@` and `!` too.
    expect(routeHash({ screen: 'run', run: 'R1', node: "it's a@b" })).toBe('#/run/R1/stage/it%27s%20a%40b');
  });

  it('reads every form of the grammar', () => {
    expect(parseRoute('#/run/R1/stage/review@12/context')).toEqual({ screen: 'run', run: 'R1', node: 'review', visit: 12, tab: 'context' });
    expect(parseRoute('#/run/R1/stage/review')).toEqual({ screen: 'run', run: 'R1', node: 'review' });
    expect(parseRoute('#/run/R1/timeline')).toEqual({ screen: 'run', run: 'R1', bar: 'timeline' });
    expect(parseRoute('#/run/R1/question/q-2')).toEqual({ screen: 'run', run: 'R1', question: 'q-2' });
  });

  it('still reads the legacy #/runs/… forms', () => {
    expect(parseRoute('#/runs/R1')).toEqual({ screen: 'run', run: 'R1' });
    expect(parseRoute('#/runs/R1/question/q%201'.replace('%20', '_'))).toEqual({ screen: 'run', run: 'R1', question: 'q_1' });
    expect(parseRoute('#/runs/R1/node/build%20it')).toEqual({ screen: 'run', run: 'R1', node: 'build it' });
    expect(parseRoute('#/runs')).toEqual({ screen: 'runs' });
  });

  it('reads anything else as the runs list, without throwing', () => {
    for (const hash of [
      '',
      '#/nowhere',
      '#/run',
      '#/run/R1/stage/review@0',
      '#/run/R1/stage/review@x',
      '#/run/R1/stage/review/output', // a tab needs its visit
      '#/run/R1/stage/review@1/nope',
      '#/run/R1/budget',
      '#/run/R1/question/has space',
      '#/run/R%ZZ',
      '#/run/bad%2Fid',
      `#/run/${'R'.repeat(129)}`,
      `#/run/R1/stage/${'n'.repeat(2100)}`,
      '#/gates/extra',
      '#/runs/R1/elsewhere/x',
    ]) {
      expect(parseRoute(hash), hash).toEqual({ screen: 'runs' });
    }
  });
});
