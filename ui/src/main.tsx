import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';

import { api } from './api';
import { App } from './app/App';
import './app/app.css';
import { parseRoute } from './app/route';
import { applyTheme, storedTheme } from './app/theme';
import { prefetchFirstPage } from './runs/useRunPages';

// For tests/app/perf.py: when the scripts were loaded, parsed and run, on
// the page's clock (what the start spends before React renders).
performance.mark('weft-main');

// The saved theme before the first paint, so a dark setting never flashes light.
applyTheme(storedTheme());

// The runs list is the usual first screen: ask for its rows now, and give
// the answer a moment to come before React's first render. It usually comes
// within a few tens of ms of this script; rendering first meant a first
// layout and paint of an empty list (about 0.2 s on a 2-core machine
// without a GPU) before the render with rows (docs/performance.md).
const FIRST_PAGE_WAIT_MS = 150;
const firstPage =
  parseRoute(window.location.hash).screen === 'runs' ? prefetchFirstPage(api) : Promise.resolve();

const root = document.getElementById('root');
if (!root) throw new Error('index.html has no #root element');

void Promise.race([firstPage, new Promise((resolve) => setTimeout(resolve, FIRST_PAGE_WAIT_MS))]).then(() =>
  createRoot(root).render(
    <StrictMode>
      <App />
    </StrictMode>,
  ),
);
