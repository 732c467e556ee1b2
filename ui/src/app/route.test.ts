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
      { screen: 'run', run: '01ABC', question: 'Q 1' },
      { screen: 'run', run: '01ABC', node: 'review' },
    ];
    for (const route of routes) expect(parseRoute(routeHash(route))).toEqual(route);
  });

  it('an unknown or empty hash is the runs list', () => {
    expect(parseRoute('')).toEqual({ screen: 'runs' });
    expect(parseRoute('#/nowhere')).toEqual({ screen: 'runs' });
  });
});
