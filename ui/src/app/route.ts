/**
 * The app's screens, addressed by the URL hash so that reloads, the back
 * button and `--run/--question` start-up all land on the same screen:
 * `#/runs`, `#/runs/RUN`, `#/runs/RUN/question/ID`, `#/gates`, `#/launch`,
 * `#/spending`, `#/retros`.
 */
export type Route =
  | { screen: 'runs' }
  | { screen: 'run'; run: string; question?: string; node?: string }
  | { screen: 'gates' }
  | { screen: 'launch' }
  | { screen: 'spending' }
  | { screen: 'retros' };

/** The route a hash names; anything unknown is the runs list. */
export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  switch (parts[0]) {
    case 'gates':
      return { screen: 'gates' };
    case 'launch':
      return { screen: 'launch' };
    case 'spending':
      return { screen: 'spending' };
    case 'retros':
      return { screen: 'retros' };
    case 'runs':
      if (parts[1]) {
        const route: Route = { screen: 'run', run: parts[1] };
        if (parts[2] === 'question' && parts[3]) route.question = parts[3];
        if (parts[2] === 'node' && parts[3]) route.node = parts[3];
        return route;
      }
      return { screen: 'runs' };
    default:
      return { screen: 'runs' };
  }
}

/** The hash for a route (the inverse of `parseRoute`). */
export function routeHash(route: Route): string {
  switch (route.screen) {
    case 'runs':
      return '#/runs';
    case 'gates':
      return '#/gates';
    case 'launch':
      return '#/launch';
    case 'spending':
      return '#/spending';
    case 'retros':
      return '#/retros';
    case 'run': {
      const run = `#/runs/${encodeURIComponent(route.run)}`;
      if (route.question) return `${run}/question/${encodeURIComponent(route.question)}`;
      if (route.node) return `${run}/node/${encodeURIComponent(route.node)}`;
      return run;
    }
  }
}

/** Goes to `route` (a new history entry). */
export function navigate(route: Route): void {
  window.location.hash = routeHash(route);
}
