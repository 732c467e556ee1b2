import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';

import { api } from './api';
import { App } from './app/App';
import './app/app.css';
import { parseRoute } from './app/route';
import { prefetchFirstPage } from './runs/useRunPages';

// For tests/app/perf.py: when the scripts were loaded, parsed and run, on
// the page's clock (what the start spends before React renders).
performance.mark('weft-main');

// The runs list is the usual first screen: ask for its rows now, while
// React renders, rather than once the screen has mounted.
if (parseRoute(window.location.hash).screen === 'runs') prefetchFirstPage(api);

const root = document.getElementById('root');
if (!root) throw new Error('index.html has no #root element');

createRoot(root).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
