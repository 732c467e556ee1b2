#!/usr/bin/env python3
"""Start, open-run and memory figures of the real Weft app window (issue 7).

Measures the built `weft-desktop` in a real WebKitGTK window, driven by
WebKitWebDriver, on the large home that `cargo bench -p weft --bench app`
generates (10,000 runs, 1,000,000 events, one run with a 300-node graph and
20,000 events). No daemon runs: the history screens read the database
directly. See docs/performance.md, "The real app window".

  1. START (repeated, default 5 times): a fresh WebKitWebDriver and a fresh
     app process each time, the database file evicted from the page cache
     first. Times from the new-session request (which makes WebKitWebDriver
     spawn the app) to the first row of the runs list being in the DOM, and
     to the frame after it (two requestAnimationFrame callbacks later, so
     the frame holding the row was produced). Also splits that time with
     /proc (the app process's start) and the page's own clock
     (performance.timeOrigin, navigation timing).
  2. OPEN (in the last started app, default 5 times): sets the hash to the
     big run and times, inside the page, until the run screen is mounted
     (view and every event read), the graph is laid out (the viewport's
     data-status is "ready" and it holds nodes), the events panel is there,
     and the frame after that.
  3. BROWSE (default 60 s): scrolls the runs list, filters, searches, opens
     runs, switches stages, opens logs and the event list, in the big run too.
  4. MEMORY of the app's process tree (weft-desktop and every descendant:
     WebKitWebProcess, WebKitNetworkProcess, ...), RSS and PSS from
     /proc/PID/smaps_rollup: at start, after opening the big run, at the end
     of browsing (and the highest total PSS seen while browsing).

Prints Markdown tables and exits 0. Exits 1, saying why, when the app does
not show the runs list or the big run within a generous deadline (timings
themselves are never judged). Python standard library only.

Usage (needs a display and a session bus; `make bench-app-window` runs it):

    xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- \\
        python3 tests/app/perf.py target/release/weft-desktop target/tmp/app-bench-home \\
        [--starts 5] [--opens 5] [--browse 60] [--big RUN_ID] [--floor target/release/examples/floor] [--graph-rungs 1000]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from driver import (  # noqa: E402  (the helper lives beside this file)
    Failure,
    Session,
    start_driver,
    stop_process_group,
    wait_for_driver,
)

ROWS_TIMEOUT_S = 60  # from the session request to the first run row: generous
OPEN_TIMEOUT_S = 60  # from setting the hash to the big run shown
ACTION_TIMEOUT_S = 15  # one browsing step
SETTLE_S = 2.0  # before a memory sample
TOTAL_DEADLINE_S = 1200  # the whole script, whatever hangs
FAST_POLL_S = 0.01

ROW = "[data-testid=run-row]"

# Installed (once per document) by the first start probe: notes, on the
# page's clock, when the first run row enters the DOM and the frame after.
START_PROBE = """
const w = window;
if (!w.__weftPerf && document.documentElement) {
  const p = { installedAt: performance.now(), rowAtInstall: false, rowAt: null, frame1At: null, frameAt: null };
  w.__weftPerf = p;
  const seen = (t) => {
    if (p.rowAt !== null) return;
    p.rowAt = t;
    requestAnimationFrame(() => {
      p.frame1At = performance.now();
      requestAnimationFrame(() => { p.frameAt = performance.now(); });
    });
  };
  const mark = performance.getEntriesByName('weft-first-row')[0];
  if (mark) {
    // The floor page notes when it put its row in (perf.py --floor).
    seen(mark.startTime);
  } else if (document.querySelector('[data-testid=run-row]')) {
    p.rowAtInstall = true;
    seen(performance.now());
  } else {
    const obs = new MutationObserver(() => {
      if (document.querySelector('[data-testid=run-row]')) { obs.disconnect(); seen(performance.now()); }
    });
    obs.observe(document, { childList: true, subtree: true });
  }
}
const nav = performance.getEntriesByType('navigation')[0];
const mainMark = performance.getEntriesByName('weft-main')[0];
const paints = {};
for (const e of performance.getEntriesByType('paint')) paints[e.name] = e.startTime;
const total = document.querySelector('[data-testid=runs-total]');
const err = document.querySelector('[data-testid=runs-error]');
const ipc = performance.getEntriesByType('resource').filter((e) => !e.name.startsWith('tauri:'))
  .map((e) => [e.name.slice(0, 60), Math.round(e.startTime), Math.round(e.responseEnd)]);
return {
  p: w.__weftPerf || null,
  now: performance.now(),
  origin: performance.timeOrigin,
  href: location.href,
  ready: document.readyState,
  nav: nav ? { responseEnd: nav.responseEnd, domInteractive: nav.domInteractive,
               dcl: nav.domContentLoadedEventEnd, load: nav.loadEventEnd } : null,
  paints,
  mainAt: mainMark ? mainMark.startTime : null,
  screenAt: (performance.getEntriesByName('weft-runs-screen')[0] || {}).startTime ?? null,
  answeredAt: (performance.getEntriesByName('weft-first-page-answered')[0] || {}).startTime ?? null,
  handed: performance.getEntriesByName('weft-first-page-handed').length > 0,
  rows: document.querySelectorAll('[data-testid=run-row]').length,
  total: total ? total.innerText : null,
  runsError: err ? err.innerText : null,
  empty: !!document.querySelector('[data-testid=runs-empty]'),
  ipc,
  text: document.body ? document.body.innerText.slice(0, 300) : '',
};
"""

# Opens run arguments[0] by its hash route and notes, on the page's clock,
# when the run screen, the laid-out graph, the events panel and the frame
# after all three appear.
OPEN_RUN = """
const run = arguments[0];
const p = { start: performance.now(), screenAt: null, graphAt: null, eventsAt: null,
            allAt: null, frameAt: null, graphNodes: 0, eventsText: null, failed: null };
window.__weftOpen = p;
const check = () => {
  const t = performance.now();
  const screen = document.querySelector(`[data-testid=run-screen][data-run-id="${run}"]`);
  if (!screen) {
    const err = document.querySelector('main .error');
    if (err) p.failed = err.innerText;
    return false;
  }
  if (p.screenAt === null) p.screenAt = t;
  const g = screen.querySelector('[data-testid=graph-viewport]');
  if (g && g.getAttribute('data-status') === 'failed') p.failed = g.innerText;
  if (p.graphAt === null && g && g.getAttribute('data-status') === 'ready') {
    const n = g.querySelectorAll('[data-node-id]').length;
    if (n > 0) { p.graphAt = t; p.graphNodes = n; }
  }
  const ev = screen.querySelector('[data-testid=events]');
  if (p.eventsAt === null && ev) {
    p.eventsAt = t;
    const s = ev.querySelector('summary');
    p.eventsText = s ? s.innerText : ev.innerText.slice(0, 80);
  }
  return p.graphAt !== null && p.eventsAt !== null;
};
const obs = new MutationObserver(() => {
  if (p.allAt === null && check()) {
    obs.disconnect();
    p.allAt = performance.now();
    p.domElements = document.getElementsByTagName('*').length;
    requestAnimationFrame(() => requestAnimationFrame(() => { p.frameAt = performance.now(); }));
  }
});
obs.observe(document, { childList: true, subtree: true, attributes: true,
                        attributeFilter: ['data-status', 'data-run-id'] });
window.location.hash = '#/runs/' + encodeURIComponent(run);
return p.start;
"""

# Notes each IPC command's start and resolution in window.__weftIpc: wraps
# the two ways Tauri sends a command (a fetch to ipc://localhost/COMMAND, or,
# when that custom protocol is blocked as in WebKitGTK here, a message to
# window.webkit.messageHandlers.ipc) and the callback map its answers go
# through. Only in this measurement's page; the app is unchanged.
IPC_SPY = """
const T = window.__TAURI_INTERNALS__;
if (T && T.callbacks && !window.__weftIpc) {
  const log = window.__weftIpc = [];
  const byId = new Map();
  const note = (cmd, ids) => {
    const e = { cmd, start: performance.now(), headers: null, done: null };
    log.push(e);
    for (const id of ids) if (id) byId.set(Number(id), e);
    return e;
  };
  const origFetch = window.fetch.bind(window);
  window.fetch = (url, init) => {
    const u = String(url);
    if (!u.startsWith('ipc:')) return origFetch(url, init);
    let ids = [];
    try { ids = ['Tauri-Callback', 'Tauri-Error'].map((k) => init.headers.get(k)); } catch (_) {}
    const e = note(decodeURIComponent(u.replace(/^ipc:\\/\\/localhost\\//, '')), ids);
    const r = origFetch(url, init);
    r.then(() => { e.headers = performance.now(); }, () => {});
    return r;
  };
  const h = window.webkit && window.webkit.messageHandlers && window.webkit.messageHandlers.ipc;
  if (h) {
    // Keep this wrapper object alive: a collected one comes back without the spy.
    window.__weftIpcHandler = h;
    const pm = h.postMessage.bind(h);
    h.postMessage = (x) => {
      try { const m = JSON.parse(x); note(m.cmd, [m.callback, m.error]); } catch (_) {}
      return pm(x);
    };
  }
  const cbs = T.callbacks;
  const set = cbs.set.bind(cbs);
  cbs.set = (id, fn) => set(id, (data) => {
    const e = byId.get(id);
    if (e && e.done === null) e.done = performance.now();
    return fn(data);
  });
}
return !!window.__weftIpc;
"""

# On the graph demo page (graph-demo.html, embedded with the UI): notes, on
# the page's clock, when the graph viewport is ready with its nodes, and the
# longest gap between animation frames while the layout runs (Graphviz in its
# worker: the page should keep producing frames) and for the frame that
# draws the SVG. Installed once per document.
GRAPH_PROBE = """
const w = window;
if (!w.__weftGraph && document.documentElement) {
  const p = { installedAt: performance.now(), readyAt: null, frameAt: null, nodes: 0, frames: 0,
              maxGapWaiting: 0, drawGap: null, last: performance.now(), failed: null };
  w.__weftGraph = p;
  const tick = () => {
    const t = performance.now();
    if (p.readyAt === null) { p.maxGapWaiting = Math.max(p.maxGapWaiting, t - p.last); p.frames += 1; }
    else if (p.frameAt === null) { p.frameAt = t; p.drawGap = t - p.last; }
    p.last = t;
    if (p.frameAt === null) requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
  const check = () => {
    const g = document.querySelector('[data-testid=graph-viewport]');
    if (!g || p.readyAt !== null) return;
    const status = g.getAttribute('data-status');
    if (status === 'failed') p.failed = g.innerText;
    if (status === 'ready') {
      const n = g.querySelectorAll('[data-node-id]').length;
      if (n > 0) { p.readyAt = performance.now(); p.nodes = n; }
    }
  };
  new MutationObserver(check).observe(document, { childList: true, subtree: true, attributes: true,
                                                  attributeFilter: ['data-status'] });
  check();
}
const nav = performance.getEntriesByType('navigation')[0];
return { p: w.__weftGraph || null, dcl: nav ? nav.domContentLoadedEventEnd : null };
"""

# Flips the demo graph's direction (a second layout, Graphviz already
# compiled) and times it the same way: click → ready in the new direction.
GRAPH_AGAIN = """
const p = { start: performance.now(), readyAt: null, frameAt: null, nodes: 0, frames: 0,
            maxGapWaiting: 0, drawGap: null, last: performance.now(), failed: null };
window.__weftGraph = p;
const canvas = document.querySelector('[data-testid=graph-canvas]');
const before = canvas ? canvas.getAttribute('data-rankdir') : null;
const tick = () => {
  const t = performance.now();
  if (p.readyAt === null) { p.maxGapWaiting = Math.max(p.maxGapWaiting, t - p.last); p.frames += 1; }
  else if (p.frameAt === null) { p.frameAt = t; p.drawGap = t - p.last; }
  p.last = t;
  if (p.frameAt === null) requestAnimationFrame(tick);
};
requestAnimationFrame(tick);
const check = () => {
  const g = document.querySelector('[data-testid=graph-viewport]');
  const c = document.querySelector('[data-testid=graph-canvas]');
  if (!g || !c || p.readyAt !== null) return;
  if (g.getAttribute('data-status') === 'ready' && c.getAttribute('data-rankdir') !== before) {
    p.readyAt = performance.now();
    p.nodes = g.querySelectorAll('[data-node-id]').length;
  }
};
new MutationObserver(check).observe(document, { childList: true, subtree: true, attributes: true,
                                                attributeFilter: ['data-status', 'data-rankdir'] });
document.querySelector('[data-testid=graph-rankdir]').click();
return p.start;
"""

# Counts animation frames for a second: how fast the window produces them.
FRAMES = """
const done = arguments[arguments.length - 1];
const t0 = performance.now(); const ts = [];
const f = () => { ts.push(performance.now()); if (performance.now() - t0 < 1000) requestAnimationFrame(f); else done(ts); };
requestAnimationFrame(f);
"""

# Sets a React-controlled input or select the way a user would.
SET_VALUE = """
const el = document.querySelector(arguments[0]);
if (!el) return false;
const proto = el instanceof HTMLSelectElement ? HTMLSelectElement.prototype : HTMLInputElement.prototype;
Object.getOwnPropertyDescriptor(proto, 'value').set.call(el, arguments[1]);
el.dispatchEvent(new Event(el instanceof HTMLSelectElement ? 'change' : 'input', { bubbles: true }));
return true;
"""


# ---- /proc ------------------------------------------------------------------------

HZ = os.sysconf("SC_CLK_TCK")


def proc_stat(pid: int) -> tuple[str, int, int] | None:
    """(comm, ppid, starttime in clock ticks since boot), or None if gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    comm = raw[raw.index("(") + 1 : raw.rindex(")")]
    rest = raw[raw.rindex(")") + 2 :].split()
    return comm, int(rest[1]), int(rest[19])


def descendants(root: int) -> list[int]:
    """`root` and every process below it, parents first."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = proc_stat(int(entry))
            if st is not None:
                children.setdefault(st[1], []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop(0)
        out.append(pid)
        todo.extend(sorted(children.get(pid, [])))
    return out


def process_name(pid: int) -> str:
    try:
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
        if argv0:
            return os.path.basename(argv0)
    except OSError:
        pass
    st = proc_stat(pid)
    return st[0] if st else "?"


def start_epoch(pid: int) -> float | None:
    """When `pid` started, as a Unix time (10 ms resolution: clock ticks)."""
    st = proc_stat(pid)
    if st is None:
        return None
    now = time.time()
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    return now - (uptime - st[2] / HZ)


def find_app(driver_pid: int, app: Path, timeout: float = 5.0) -> int | None:
    """The app process WebKitWebDriver started (a descendant running `app`)."""
    deadline = time.monotonic() + timeout
    target = str(app.resolve())
    while time.monotonic() < deadline:
        for pid in descendants(driver_pid)[1:]:
            try:
                if os.readlink(f"/proc/{pid}/exe") == target:
                    return pid
            except OSError:
                continue
        time.sleep(0.05)
    return None


@dataclass
class ProcMem:
    pid: int
    name: str
    rss_kb: int
    pss_kb: int


def memory(root: int) -> list[ProcMem]:
    out = []
    for pid in descendants(root):
        fields: dict[str, int] = {}
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
                key, _, value = line.partition(":")
                fields[key.strip()] = int(value.split()[0])
        except (OSError, ValueError, IndexError):
            continue  # gone, or a kernel thread
        out.append(ProcMem(pid, process_name(pid), fields.get("Rss", 0), fields.get("Pss", 0)))
    return out


def evict(paths: list[Path]) -> None:
    """Drops the files' clean pages from the page cache (like the bench's dd iflag=nocache)."""
    for p in paths:
        try:
            fd = os.open(p, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


# ---- one app instance ---------------------------------------------------------------


@dataclass
class Start:
    request_to_row_ms: float
    request_to_frame_ms: float
    proc_to_frame_ms: float | None
    request_to_proc_ms: float | None
    proc_to_origin_ms: float | None
    origin_to_dcl_ms: float | None
    dcl_to_frame_ms: float | None
    session_ms: float
    origin_to_fcp_ms: float | None
    request_to_fcp_ms: float | None
    fcp_holds_row: bool  # the first contentful paint came after the row entered the DOM
    origin_to_probe_ms: float | None
    origin_to_main_ms: float | None  # the app's scripts loaded and run (its `weft-main` mark)
    origin_to_screen_ms: float | None  # the runs screen's first render in the DOM (`weft-runs-screen`)
    origin_to_answer_ms: float | None  # the first page's `runs_page` answer in the page (`weft-first-page-answered`)
    handed: bool  # the first page came with the window (src-tauri/src/first_page.rs), not over IPC
    row_to_frame1_ms: float
    row_ms_page: float
    exact: bool  # the row's time came from the in-page observer
    rows: int
    total: str | None
    load: str


@dataclass
class Open:
    screen_ms: float
    graph_ms: float
    events_ms: float
    frame_ms: float
    outside_ms: float  # seen by this script's polling, from before the execute call
    graph_nodes: int
    events_text: str | None
    ipc: list  # [cmd, start, headers, done] in ms after the hash was set
    dom_elements: int


@dataclass
class App:
    app: Path
    home: Path
    scratch: Path
    driver_proc: subprocess.Popen | None = None
    session: Session | None = None
    app_pid: int | None = None
    ipc: list = field(default_factory=list)  # resource timing entries other than tauri://

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["WEFT_HOME"] = str(self.home)
        # Without this Tauri does not enable WebKit automation, and creating a
        # session hangs forever.
        env["TAURI_WEBVIEW_AUTOMATION"] = "true"
        # Fresh per start: nothing the webview stored last time is reused.
        for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
            d = self.scratch / var.lower()
            d.mkdir(parents=True, exist_ok=True)
            env[var] = str(d)
        return env

    @property
    def s(self) -> Session:
        assert self.session is not None
        return self.session

    def stop(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None
        if self.driver_proc is not None:
            stop_process_group(self.driver_proc)
            self.driver_proc = None

    def start(self) -> Start:
        try:
            return self._start()
        except Failure as e:
            try:
                tail = (self.scratch / "webkitwebdriver.log").read_text(errors="replace")[-1500:].strip()
            except OSError:
                tail = ""
            if tail:
                raise Failure(f"{e}\n--- WebKitWebDriver log (tail) ---\n{tail}") from e
            raise

    def _start(self) -> Start:
        driver_bin = shutil.which("WebKitWebDriver")
        if driver_bin is None:
            raise Failure("WebKitWebDriver not found; install the webkit2gtk-driver package")
        self.driver_proc, driver = start_driver(driver_bin, self.env(), self.scratch / "webkitwebdriver.log")
        wait_for_driver(driver, self.driver_proc)
        load = loadavg()

        t_request = time.time()
        self.session = Session(driver, self.app)
        t_session = time.time()
        self.app_pid = find_app(self.driver_proc.pid, self.app)
        t_proc = start_epoch(self.app_pid) if self.app_pid else None

        deadline = time.monotonic() + ROWS_TIMEOUT_S
        last: dict = {}
        while True:
            try:
                last = self.s.execute(START_PROBE) or {}
            except Failure as e:  # the document may still be loading
                last = {"error": str(e)}
            p = last.get("p") or {}
            if p.get("frameAt") is not None:
                break
            if last.get("runsError"):
                raise Failure(f"the runs list shows an error: {last['runsError']!r}")
            if last.get("empty"):
                raise Failure(f"the runs list is empty: is {self.home} the bench home?")
            if time.monotonic() > deadline:
                raise Failure(
                    f"no run row within {ROWS_TIMEOUT_S} s of starting the app; the page says "
                    f"{last.get('text') or last.get('error')!r}"
                )
            time.sleep(FAST_POLL_S)

        origin = last["origin"] / 1000  # the page's clock, as a Unix time
        # When the row was already there as the probe went in, its time is at
        # most the probe's (an upper bound), and the frame is the next one.
        exact = not p.get("rowAtInstall")
        t_row = origin + p["rowAt"] / 1000
        t_frame = origin + p["frameAt"] / 1000
        nav = last.get("nav") or {}
        dcl = origin + nav["dcl"] / 1000 if nav.get("dcl") else None
        fcp = last.get("paints", {}).get("first-contentful-paint")
        self.ipc = last.get("ipc") or []
        return Start(
            request_to_row_ms=(t_row - t_request) * 1000,
            request_to_frame_ms=(t_frame - t_request) * 1000,
            proc_to_frame_ms=(t_frame - t_proc) * 1000 if t_proc else None,
            request_to_proc_ms=(t_proc - t_request) * 1000 if t_proc else None,
            proc_to_origin_ms=(origin - t_proc) * 1000 if t_proc else None,
            origin_to_dcl_ms=(dcl - origin) * 1000 if dcl else None,
            dcl_to_frame_ms=(t_frame - dcl) * 1000 if dcl else None,
            session_ms=(t_session - t_request) * 1000,
            origin_to_fcp_ms=fcp,
            request_to_fcp_ms=(origin + fcp / 1000 - t_request) * 1000 if fcp is not None else None,
            fcp_holds_row=fcp is not None and fcp >= p["rowAt"],
            origin_to_probe_ms=p.get("installedAt"),
            origin_to_main_ms=last.get("mainAt"),
            origin_to_screen_ms=last.get("screenAt"),
            origin_to_answer_ms=last.get("answeredAt"),
            handed=bool(last.get("handed")),
            row_to_frame1_ms=p["frame1At"] - p["rowAt"],
            row_ms_page=p["rowAt"],
            exact=exact,
            rows=last.get("rows", 0),
            total=last.get("total"),
            load=load,
        )

    # ---- pages --------------------------------------------------------------------

    def js(self, script: str, *args: object):
        return self.s.execute(script, *args)

    def wait_js(self, what: str, script: str, *args: object, timeout: float = ACTION_TIMEOUT_S):
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = self.js(script, *args)
                if value:
                    return value
            except Failure:
                pass
            if time.monotonic() > deadline:
                raise Failure(f"after {timeout:.0f} s, still not {what}")
            time.sleep(0.05)

    def open_run(self, run: str) -> Open:
        spying = self.js(IPC_SPY)
        self.js("if (window.__weftIpc) window.__weftIpc.length = 0;")
        before = time.time()
        self.js(OPEN_RUN, run)
        deadline = time.monotonic() + OPEN_TIMEOUT_S
        while True:
            p = self.js("return window.__weftOpen;") or {}
            if p.get("frameAt") is not None:
                break
            if p.get("failed"):
                raise Failure(f"opening run {run}: the page says {p['failed']!r}")
            if time.monotonic() > deadline:
                raise Failure(
                    f"run {run} not shown within {OPEN_TIMEOUT_S} s (screen at {p.get('screenAt')}, graph at "
                    f"{p.get('graphAt')}, events at {p.get('eventsAt')}); the page says {self.s.text()[:300]!r}"
                )
            time.sleep(FAST_POLL_S)
        outside = (time.time() - before) * 1000
        t0 = p["start"]
        calls = (self.js("return window.__weftIpc || [];") or []) if spying else []
        ipc = [[c["cmd"], *(None if c.get(k) is None else c[k] - t0 for k in ("start", "headers", "done"))]
               for c in calls if c.get("start", -1) <= p["allAt"]]
        return Open(
            screen_ms=p["screenAt"] - t0,
            graph_ms=p["graphAt"] - t0,
            events_ms=p["eventsAt"] - t0,
            frame_ms=p["frameAt"] - t0,
            outside_ms=outside,
            graph_nodes=p.get("graphNodes", 0),
            events_text=p.get("eventsText"),
            ipc=ipc,
            dom_elements=p.get("domElements", 0),
        )

    def big_graph(self, rungs: int) -> list[tuple[str, dict]]:
        """Lays out the demo page's ladder of `rungs` rungs (2 × rungs nodes)
        in this window, then again in the other direction; for each, the
        times on the page's clock and the longest frame gap while waiting."""
        self.js("window.location.href = arguments[0];", f"graph-demo.html?big=1&rungs={rungs}")
        deadline = time.monotonic() + OPEN_TIMEOUT_S
        while True:
            try:
                got = self.js(GRAPH_PROBE) or {}
            except Failure:
                got = {}
            p = got.get("p") or {}
            if p.get("failed"):
                raise Failure(f"the {2 * rungs}-node graph failed: {p['failed']!r}")
            if p.get("frameAt") is not None:
                break
            if time.monotonic() > deadline:
                raise Failure(f"the {2 * rungs}-node graph was not laid out within {OPEN_TIMEOUT_S} s")
            time.sleep(0.1)
        first = dict(p, start=0.0, dcl=got.get("dcl"))
        self.js(GRAPH_AGAIN)
        deadline = time.monotonic() + OPEN_TIMEOUT_S
        while True:
            p = self.js("return window.__weftGraph;") or {}
            if p.get("frameAt") is not None:
                break
            if time.monotonic() > deadline:
                raise Failure(f"the {2 * rungs}-node graph was not laid out again within {OPEN_TIMEOUT_S} s")
            time.sleep(0.1)
        return [("first layout: navigation start → graph ready (the worker starts and compiles Graphviz)", first),
                ("again, other direction: click → graph ready", p)]

    def frames(self) -> tuple[int, float]:
        """Animation frames in a second, and the longest gap between two (ms)."""
        ts = self.s.call("POST", "/execute/async", {"script": FRAMES, "args": []}, timeout=15) or []
        gaps = [b - a for a, b in zip(ts, ts[1:])]
        return len(ts), max(gaps, default=0.0)

    def to_runs(self) -> None:
        self.js("window.location.hash = '#/runs';")
        self.wait_js("showing the runs list", f"return document.querySelectorAll('{ROW}').length;")


# ---- browsing -------------------------------------------------------------------------


class Browser:
    """A minute of a person looking around, each step waiting for its result."""

    def __init__(self, app: App, big: str, rng: random.Random) -> None:
        self.app = app
        self.big = big
        self.rng = rng
        self.done: dict[str, int] = {}
        self.failed: dict[str, str] = {}

    def step(self, name: str, fn) -> None:
        try:
            fn()
            self.done[name] = self.done.get(name, 0) + 1
        except Failure as e:
            self.failed[name] = str(e)[:200]
            # Back to a known screen for the next step.
            try:
                self.app.to_runs()
            except Failure:
                pass

    def scroll_runs(self) -> None:
        a = self.app
        a.to_runs()
        total = a.js("const v = document.querySelector('[data-testid=runs-list]');"
                     "return v ? v.scrollHeight : 0;") or 0
        for _ in range(4):
            top = self.rng.randrange(0, max(1, total - 800))
            a.js("const v = document.querySelector('[data-testid=runs-list]'); v.scrollTop = arguments[0];"
                 "v.dispatchEvent(new Event('scroll'));", top)
            index = top // 44 + 2
            a.wait_js(f"showing row {index} after scrolling",
                      f"return !!document.querySelector('{ROW}[data-index=\"{index}\"]');")

    def filter_runs(self) -> None:
        a = self.app
        a.to_runs()
        for status in ("failed", "succeeded", "cancelled", ""):
            before = a.js("const t = document.querySelector('[data-testid=runs-total]'); return t ? t.innerText : '';")
            if not a.js(SET_VALUE, "[data-testid=runs-status]", status):
                raise Failure("no status filter")
            a.wait_js(f"filtering by status {status!r}",
                      "const t = document.querySelector('[data-testid=runs-total]');"
                      f"return t && t.innerText !== arguments[0] && document.querySelector('{ROW}');",
                      before)
        workflows = a.js("return [...document.querySelectorAll('[data-testid=runs-workflow] option')]"
                         ".map(o => o.value).filter(Boolean);") or []
        if workflows:
            a.js(SET_VALUE, "[data-testid=runs-workflow]", self.rng.choice(workflows))
            a.wait_js("filtering by workflow", f"return document.querySelector('{ROW}');")
            a.js(SET_VALUE, "[data-testid=runs-workflow]", "")

    def search_runs(self) -> None:
        a = self.app
        a.to_runs()
        for text in ("login", "billing export", "nightly report", ""):
            before = a.js("const t = document.querySelector('[data-testid=runs-total]'); return t ? t.innerText : '';")
            a.js(SET_VALUE, "[data-testid=runs-search]", text)
            # Searches with equal counts leave the total alone: check the rows.
            a.wait_js(f"searching for {text!r}",
                      "const t = document.querySelector('[data-testid=runs-total]');"
                      f"const rows = [...document.querySelectorAll('{ROW}')];"
                      "if (!t || !rows.length) return false;"
                      "if (!arguments[1]) return t.innerText !== arguments[0];"
                      "return rows.every((r) => r.innerText.toLowerCase().includes(arguments[1]));",
                      before, text)

    def open_some_run(self) -> None:
        a = self.app
        a.to_runs()
        rows = a.js(f"return [...document.querySelectorAll('{ROW}')].map(r => r.getAttribute('data-run-id'));") or []
        if not rows:
            raise Failure("no rows to open")
        run = self.rng.choice(rows)
        a.js(f"document.querySelector('{ROW}[data-run-id=\"' + arguments[0] + '\"]').click();", run)
        a.wait_js(f"showing run {run}",
                  "return !!document.querySelector(`[data-testid=run-screen][data-run-id=\"${arguments[0]}\"]`);", run)
        self.stages_and_logs()

    def stages_and_logs(self, stages: int = 3) -> None:
        """Clicks a few timeline bars, the stderr/stdout tabs, searches the logs."""
        a = self.app
        nodes = a.js("return [...document.querySelectorAll('button.timeline__bar')].map(b => b.getAttribute('data-node'));") or []
        for node in self.rng.sample(nodes, min(stages, len(nodes))):
            a.js("const b = document.querySelector(`button.timeline__bar[data-node=\"${arguments[0]}\"]`); b.scrollIntoView(); b.click();", node)
            a.wait_js(f"showing stage {node}",
                      "const d = document.querySelector('[data-testid=stage-detail]');"
                      "return d && d.getAttribute('data-node') === arguments[0];", node)
        for tab in ("stderr", "stdout"):
            a.js("for (const b of document.querySelectorAll('[data-testid=logs] [role=tab]'))"
                 "  if (b.innerText.trim() === arguments[0]) b.click();", tab)
        a.js("const i = document.querySelector('[data-testid=logs] input[type=search]'); if (!i) return;"
             "Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set.call(i, 'compiling');"
             "i.dispatchEvent(new Event('input', { bubbles: true }));")
        a.js("const f = document.querySelector('[data-testid=logs] form'); if (f) f.requestSubmit();")
        a.wait_js("finishing the log search",
                  "return !!document.querySelector('[data-testid=log-matches]')"
                  " || !document.querySelector('[data-testid=logs] form');")

    def toggle_events(self) -> None:
        a = self.app
        a.js("const d = document.querySelector('[data-testid=events] details'); if (d) d.open = true;")
        a.js("document.querySelector('[data-testid=events]').scrollIntoView();")
        a.js("const d = document.querySelector('[data-testid=events] details'); if (d) d.open = false;")

    def big_run(self) -> None:
        a = self.app
        a.open_run(self.big)
        self.stages_and_logs(stages=4)
        self.toggle_events()
        a.js("window.scrollTo(0, 0);")
        for testid in ("graph-zoom-in", "graph-zoom-in", "graph-fit", "graph-rankdir"):
            a.js(f"const b = document.querySelector('[data-testid={testid}]'); if (b) b.click();")
        a.wait_js("laying out the graph again",
                  "const v = document.querySelector('[data-testid=graph-viewport]');"
                  "return v && v.getAttribute('data-status') === 'ready';")

    def some_screens(self) -> None:
        a = self.app
        for route, testid in (("#/gates", "gates-screen"), ("#/launch", None)):
            a.js("window.location.hash = arguments[0];", route)
            if testid:
                a.wait_js(f"showing {route}", f"return !!document.querySelector('[data-testid={testid}]');")
        a.to_runs()

    def browse(self, seconds: float, sample) -> None:
        steps = [
            ("scroll the runs list", self.scroll_runs),
            ("filter runs", self.filter_runs),
            ("search runs", self.search_runs),
            ("open a run, stages, logs", self.open_some_run),
            ("open the big run, stages, logs, events, graph", self.big_run),
            ("open a run, stages, logs", self.open_some_run),
            ("gates and launch", self.some_screens),
        ]
        end = time.monotonic() + seconds
        i = 0
        next_sample = time.monotonic() + 5
        while time.monotonic() < end:
            name, fn = steps[i % len(steps)]
            self.step(name, fn)
            i += 1
            if time.monotonic() >= next_sample:
                sample()
                next_sample = time.monotonic() + 5


# ---- reporting --------------------------------------------------------------------------


def ms(v: float | None) -> str:
    return "n/a" if v is None else f"{v:,.0f} ms"


def mb(kb: int) -> str:
    return f"{kb / 1024:,.1f} MB"


def med_max(values: list[float | None]) -> tuple[str, str]:
    vals = [v for v in values if v is not None]
    if not vals:
        return "n/a", "n/a"
    return ms(statistics.median(vals)), ms(max(vals))


def memory_table(samples: list[tuple[str, list[ProcMem]]]) -> list[str]:
    names: list[str] = []
    for _, procs in samples:
        for p in procs:
            if p.name not in names:
                names.append(p.name)
    head = "| process | " + " | ".join(f"{label} RSS | {label} PSS" for label, _ in samples) + " |"
    lines = [head, "|---|" + "---:|---:|" * len(samples)]
    for name in names:
        cells = []
        for _, procs in samples:
            mine = [p for p in procs if p.name == name]
            count = f" (×{len(mine)})" if len(mine) > 1 else ""
            cells.append(f"{mb(sum(p.rss_kb for p in mine))}{count} | {mb(sum(p.pss_kb for p in mine))}"
                         if mine else "— | —")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("| **total** | " + " | ".join(
        f"**{mb(sum(p.rss_kb for p in procs))}** | **{mb(sum(p.pss_kb for p in procs))}**" for _, procs in samples
    ) + " |")
    return lines


def ipc_split(o: Open) -> dict[str, float | None]:
    # The calls the run screen waits for (run_view, run_events pages): those
    # sent before it mounted. Later ones (subscribe, stage_files) resolve only
    # once the page's thread is free again, so their times say little.
    done = [c for c in o.ipc if c[3] is not None and c[0] in ("run_view", "run_events") and c[1] < o.screen_ms]
    if not done:
        return {"ipc_ms": None, "after_ipc_ms": None}
    return {"ipc_ms": sum(c[3] - c[1] for c in done), "after_ipc_ms": o.frame_ms - max(c[3] for c in done)}


def ipc_cmd(o: Open, cmd: str) -> float | None:
    done = [c[3] - c[1] for c in o.ipc if c[0] == cmd and c[3] is not None]
    return sum(done) if done else None


def big_run_id(home: Path) -> str:
    marker = home / "bench-format.txt"
    try:
        for line in marker.read_text().splitlines():
            if line.startswith("big="):
                return line[4:].strip()
    except OSError as e:
        raise Failure(f"{marker} is missing: generate the home with `cargo bench -p weft --bench app`") from e
    raise Failure(f"{marker} names no big run")


def run(args: argparse.Namespace) -> None:
    app_bin: Path = args.app
    home: Path = args.home
    big = args.big or big_run_id(home)
    db_files = [home / n for n in ("weft.db", "weft.db-wal", "weft.db-shm")]
    if not db_files[0].is_file():
        raise Failure(f"{db_files[0]} does not exist: generate it with `cargo bench -p weft --bench app`")
    rng = random.Random(7)

    print(f"app: {app_bin}")
    print(f"home: {home} (big run {big}); database {db_files[0].stat().st_size / 1e6:.0f} MB")
    print(f"load average before: {loadavg()}")
    print()

    starts: list[Start] = []
    floor: list[Start] = []
    floor_mem: list[ProcMem] = []
    opens: list[Open] = []
    frames: list[tuple[str, int, float]] = []
    graphs: list[tuple[str, dict]] = []
    mem: list[tuple[str, list[ProcMem]]] = []
    peak: tuple[int, list[ProcMem]] | None = None
    browser: Browser | None = None
    scratch_root = Path(tempfile.mkdtemp(prefix="weft-app-perf-"))
    current: App | None = None
    try:
        for i in range(args.starts):
            last = i == args.starts - 1
            if args.floor is not None:
                # Alternating with the app's starts, so both see the same machine.
                evict(db_files)
                bare = App(args.floor, home, scratch_root / f"floor-{i}")
                bare.scratch.mkdir()
                try:
                    fs = bare.start()
                    if last and bare.app_pid is not None:
                        # The floor's footprint, for the memory table.
                        time.sleep(SETTLE_S)
                        floor_mem = memory(bare.app_pid)
                finally:
                    bare.stop()
                floor.append(fs)
                print(f"floor {i + 1}: request→row {ms(fs.request_to_row_ms)}, →frame {ms(fs.request_to_frame_ms)}, "
                      f"load {fs.load}", flush=True)
                time.sleep(1)
            evict(db_files)
            current = App(app_bin, home, scratch_root / f"start-{i}")
            current.scratch.mkdir()
            st = current.start()
            starts.append(st)
            print(f"start {i + 1}: request→row {ms(st.request_to_row_ms)}, →frame {ms(st.request_to_frame_ms)}, "
                  f"session {ms(st.session_ms)}, rows {st.rows}, total {st.total!r}, handed {st.handed}, "
                  f"{'observer' if st.exact else 'row before probe'}, load {st.load}", flush=True)
            if current.ipc:
                print(f"  resource timing (name, start, end ms): {current.ipc[:8]}")
            if not last:
                current.stop()
                current = None
                time.sleep(1)

        assert current is not None and current.app_pid is not None
        app = current
        time.sleep(SETTLE_S)
        mem.append(("start", memory(app.app_pid)))
        frames.append(("runs list", *app.frames()))
        try:
            app.s.call("POST", "/window/rect", {"width": 1280, "height": 800})
        except Failure as e:
            print(f"(could not resize the window: {e})")

        for i in range(args.opens):
            if i:
                app.to_runs()
                time.sleep(0.5)
            op = app.open_run(big)
            opens.append(op)
            print(f"open {i + 1}: screen {ms(op.screen_ms)}, graph {ms(op.graph_ms)} ({op.graph_nodes} nodes), "
                  f"events {ms(op.events_ms)} ({op.events_text!r}), frame {ms(op.frame_ms)}, "
                  f"seen outside {ms(op.outside_ms)}, {op.dom_elements:,} elements in the page", flush=True)
            print("  ipc (cmd, start, headers, resolved; ms after the hash was set): "
                  + "; ".join(f"{c[0]} {c[1]:.0f}/{c[2] or 0:.0f}/{c[3] or 0:.0f}" for c in op.ipc), flush=True)
        time.sleep(SETTLE_S)
        mem.append(("big run open", memory(app.app_pid)))
        frames.append(("big run", *app.frames()))

        def sample() -> None:
            nonlocal peak
            procs = memory(app.app_pid)
            total = sum(p.pss_kb for p in procs)
            if peak is None or total > peak[0]:
                peak = (total, procs)

        browser = Browser(app, big, rng)
        started = time.monotonic()
        browser.browse(args.browse, sample)
        browsed = time.monotonic() - started
        time.sleep(SETTLE_S)
        mem.append((f"after {browsed:.0f} s browsing", memory(app.app_pid)))
        if args.smaps is not None:
            # For finding what holds the memory: each process's mappings.
            args.smaps.mkdir(parents=True, exist_ok=True)
            for pid in descendants(app.app_pid):
                try:
                    text = Path(f"/proc/{pid}/smaps").read_text()
                except OSError:
                    continue
                (args.smaps / f"{process_name(pid)}-{pid}.smaps").write_text(text)
        if peak is not None:
            mem.append(("browsing peak", peak[1]))
        print(f"browsed {browsed:.0f} s: {sum(browser.done.values())} steps done, {len(browser.failed)} kinds failed",
              flush=True)
        if args.graph_rungs > 0:
            graphs = app.big_graph(args.graph_rungs)
            for label, g in graphs:
                print(f"graph {label}: ready {ms(g['readyAt'] - g['start'])}, {g['nodes']} nodes", flush=True)
    finally:
        if current is not None:
            current.stop()
        shutil.rmtree(scratch_root, ignore_errors=True)

    print()
    print(f"load average after: {loadavg()}")
    print()
    print(f"### Start to first run row ({len(starts)} starts, database evicted from the page cache before each)")
    print()
    print("| from → to | median | max |")
    print("|---|---:|---:|")
    rows = [
        ("session request → first row in the DOM", [s.request_to_row_ms for s in starts]),
        ("session request → first contentful paint (WebKit's paint timing)", [s.request_to_fcp_ms for s in starts]),
        ("session request → frame after the first row", [s.request_to_frame_ms for s in starts]),
        ("app process start → frame after the first row", [s.proc_to_frame_ms for s in starts]),
        ("of which: session request → app process start", [s.request_to_proc_ms for s in starts]),
        ("of which: app process start → page navigation start (timeOrigin)", [s.proc_to_origin_ms for s in starts]),
        ("of which: navigation start → DOMContentLoaded end", [s.origin_to_dcl_ms for s in starts]),
        ("of which: DOMContentLoaded → frame after the first row (the UI's share)", [s.dcl_to_frame_ms for s in starts]),
        ("navigation start → first row in the DOM", [s.row_ms_page for s in starts]),
        ("of which: navigation start → the app's scripts loaded and run (main.tsx's mark)",
         [s.origin_to_main_ms for s in starts]),
        ("of which: navigation start → the runs screen's first render in the DOM (its mark)",
         [s.origin_to_screen_ms for s in starts]),
        ("navigation start → the first page's answer in the page (its mark; the rows follow in a render)",
         [s.origin_to_answer_ms for s in starts]),
        ("first row in the DOM → first animation frame callback after it", [s.row_to_frame1_ms for s in starts]),
        ("session request → new-session answer", [s.session_ms for s in starts]),
        ("navigation start → first contentful paint (WebKit's paint timing)", [s.origin_to_fcp_ms for s in starts]),
        ("navigation start → this script's first probe in the page", [s.origin_to_probe_ms for s in starts]),
    ]
    for label, values in rows:
        med, mx = med_max(values)
        print(f"| {label} | {med} | {mx} |")
    if floor:
        print()
        print(f"The floor: a bare Tauri window whose page's one module script puts one row in the DOM "
              f"({len(floor)} starts, alternating with the app's):")
        print()
        print("| from → to | floor median | floor max | app median | app − floor (medians) |")
        print("|---|---:|---:|---:|---:|")
        for label, attr in (("session request → row in the DOM", "request_to_row_ms"),
                            ("session request → frame after the row", "request_to_frame_ms"),
                            ("session request → app process start", "request_to_proc_ms"),
                            ("app process start → navigation start", "proc_to_origin_ms"),
                            ("navigation start → row in the DOM", "row_ms_page")):
            fv = [getattr(s, attr) for s in floor if getattr(s, attr) is not None]
            av = [getattr(s, attr) for s in starts if getattr(s, attr) is not None]
            fmed, fmax = med_max(fv)
            amed, _ = med_max(av)
            diff = ms(statistics.median(av) - statistics.median(fv)) if fv and av else "n/a"
            print(f"| {label} | {fmed} | {fmax} | {amed} | {diff} |")
    handed = sum(1 for s in starts if s.handed)
    print(f"\nIn {handed} of {len(starts)} starts the first page came with the window (read while it started); "
          "in the others the rows waited for the page's own request.")
    holds = sum(1 for s in starts if s.fcp_holds_row)
    print(f"\nIn {holds} of {len(starts)} starts the first contentful paint came after the first row entered the DOM "
          "(so the first painted content held the rows).")
    polled = sum(1 for s in starts if not s.exact)
    if polled:
        print(f"\n({polled} of {len(starts)} starts had the row already there when the probe went in: their row "
              "and frame times are upper bounds, the probe's time and the frame after it.)")
    print()
    print(f"### Opening the big run ({len(opens)} times in one app; the first right after start)")
    print()
    print("| hash set → | first | median of the rest | max of the rest |")
    print("|---|---:|---:|---:|")
    for label, attr in (("run screen mounted (view + all events read)", "screen_ms"),
                        ("graph laid out and in the DOM", "graph_ms"),
                        ("events panel in the DOM", "events_ms"),
                        ("frame after all of them", "frame_ms"),
                        ("seen by the script (polling, includes WebDriver round trips)", "outside_ms"),
                        ("of which in the IPC calls it waits for (run_view, run_events; request → parsed, summed)", "ipc_ms"),
                        ("last of those resolved → frame after (render, graph layout, paint)", "after_ipc_ms")):
        values = [getattr(o, attr, None) if not attr.endswith("ipc_ms") else ipc_split(o)[attr] for o in opens]
        med, mx = med_max(values[1:])
        print(f"| {label} | {ms(values[0])} | {med} | {mx} |")
    calls = sorted({c[0] for o in opens for c in o.ipc})
    if calls:
        print()
        print("IPC calls while opening (count per open; ms request → resolved, first open / median of the rest): "
              + "; ".join(f"{c} ×{sum(1 for x in opens[0].ipc if x[0] == c)} "
                          f"{ms(ipc_cmd(opens[0], c))} / {med_max([ipc_cmd(o, c) for o in opens[1:]])[0]}"
                          for c in calls))
    print()
    print("Animation frames in one second (frames, longest gap): "
          + "; ".join(f"{where}: {n}, {ms(gap)}" for where, n, gap in frames))
    print()
    if graphs:
        print(f"### A {2 * args.graph_rungs:,}-node graph (graph-demo.html in the app's window, after browsing)")
        print()
        print("| | graph ready | frames while waiting | longest frame gap while waiting | frame drawing the SVG |")
        print("|---|---:|---:|---:|---:|")
        for label, g in graphs:
            print(f"| {label} | {ms(g['readyAt'] - g['start'])} | {g['frames']} | {ms(g['maxGapWaiting'])} "
                  f"| {ms(g['drawGap'])} |")
        print()
    print("### Memory of the app's process tree (RSS and PSS from /proc/PID/smaps_rollup)")
    print()
    if floor_mem:
        mem.insert(0, ("floor (bare window)", floor_mem))
    for line in memory_table(mem):
        print(line)
    if browser is not None:
        print()
        print("Browsing steps done: " + ", ".join(f"{k} ×{v}" for k, v in browser.done.items()))
        if browser.failed:
            print("Browsing steps that failed (each once at least): "
                  + "; ".join(f"{k}: {v}" for k, v in browser.failed.items()))


class Deadline(Exception):
    pass


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("app", type=Path, help="the built weft-desktop")
    parser.add_argument("home", type=Path, help="the bench home (target/tmp/app-bench-home)")
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--opens", type=int, default=5)
    parser.add_argument("--browse", type=float, default=60.0, help="seconds of browsing")
    parser.add_argument("--smaps", type=Path,
                        help="write each process's /proc/PID/smaps here after browsing")
    parser.add_argument("--graph-rungs", type=int, default=1000,
                        help="after browsing, lay out the graph demo's ladder of this many rungs (2 nodes each; "
                             "0 skips it)")
    parser.add_argument("--floor", type=Path,
                        help="the bare window (cargo build --release -p weft-desktop --example floor), "
                             "started before each of the app's starts as the floor of the start time")
    parser.add_argument("--big", help="the big run's id (default: from the home's bench-format.txt)")
    args = parser.parse_args(argv[1:])
    args.app = args.app.resolve()
    args.home = args.home.resolve()
    if args.floor is not None:
        args.floor = args.floor.resolve()
    if not (args.app.is_file() and os.access(args.app, os.X_OK)):
        print(f"app perf: FAILED: {args.app} is not an executable; build it with "
              "`cargo build --release -p weft-desktop` (after `make ui`)", file=sys.stderr)
        return 1
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        print('app perf: FAILED: no display; run under xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session --',
              file=sys.stderr)
        return 1
    if args.starts < 1 or args.opens < 1:
        print("app perf: --starts and --opens must be at least 1", file=sys.stderr)
        return 2

    def out_of_time(_signum, _frame):
        raise Deadline(f"the whole measurement took longer than {TOTAL_DEADLINE_S} s")

    signal.signal(signal.SIGALRM, out_of_time)
    signal.alarm(TOTAL_DEADLINE_S)
    try:
        run(args)
    except (Failure, Deadline, OSError) as e:
        print(f"app perf: FAILED: {e}", file=sys.stderr)
        return 1
    finally:
        signal.alarm(0)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
