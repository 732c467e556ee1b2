#!/usr/bin/env python3
"""End-to-end test of the real Weft desktop app (issue 7's acceptance test).

weftd runs in the foreground on a temporary WEFT_HOME; the built
`weft-desktop` runs in a real WebKitGTK window driven by WebKitWebDriver
(Debian package webkit2gtk-driver). The test

  1. launches a workflow with a human gate from the Launch screen,
  2. sees the gate's question on the run screen and in the Gates inbox,
     and answers "Ship",
  3. sees the run succeed (and the file its last command writes appear),
  4. finds the run in Runs, sees the empty Gates inbox and a broken
     workflow's inline diagnostic on Launch,
  5. runs a workflow that captures reports (started with the CLI), previews
     one in the app and reveals it in the file manager (a stand-in
     `xdg-open` on PATH records what it was asked to open: the Xvfb
     session has no file manager),
  5b. runs a workflow in a scratch git repository (checkpoint mode) and
     sees a stage's diff, opened from its stage panel, then the whole
     run's, and the run branch and base commit in the header,
  5c. applies that run from its header (Apply…, merge): main is
     fast-forwarded to the run's branch and the checkout is clean; then
     forks it from its first stage (the stage menu's Fork from here) and
     resumes the new run to the end,
  6. starts the app a second time with `weft://run/RUN/question/ID`, as
     weftd does when a gate notification is clicked: the second process
     hands the link to the open window and exits,
  6b. runs an agent stage against the fake LLM server (`weft-fakellm`,
     beside the app): while its `shell` call runs, the stage panel shows
     the call running, and a steering message typed in the panel reaches
     the model's next request and shows in the transcript,
  6c. runs a prompt stage on an OpenAI model against the same fake LLM
     server with `--retro` (the retro narrated by the fake too), then opens
     the Spending page, whose totals and per-model rows (the agent's
     Anthropic model and this OpenAI one) must match `weft cost --json`
     figure for figure, the Retros page, whose row must match `weft retro
     --json`, and the run's Retro tab,
  6d. clicks every tab of the run screen (the stage panel's six on the
     agent's run, the run bar's four on the triage run) in the light and
     the dark theme (the Theme menu), each rewriting the address to name it,
  7. stops weftd and checks that the run's header, graph and a stage's log
     still show, and that an action says the daemon is not running.

On the way it screenshots every screen into docs/screenshots/ (run-gate,
run, runs, gates, launch, run-artifacts, run-changes, run-apply, run-agent,
spending, retros, run-retro, run-offline, and run-stage-TAB-THEME and
run-bar-TAB-THEME for every tab in light and dark). Assertions are on DOM
text, never on pixels.

Usage (needs a display and a session bus; `make test-app` runs it so):

    xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- \\
        python3 tests/app/e2e.py target/debug/weft-desktop [SCREENSHOT_DIR]

weft, weftd and weft-fakellm are taken from beside the app. Prints "N passed, M failed"
and exits 1 when anything failed. Python standard library only.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from driver import (  # noqa: E402  (the helper lives beside this file)
    Failure,
    Session,
    start_driver,
    stop_process_group,
    wait_for_driver,
    wait_until,
)

REPO = Path(__file__).resolve().parents[2]

TEST_DEADLINE_S = 240  # the whole test, whatever hangs
DAEMON_TIMEOUT_S = 15  # weftd answering `weft daemon status`
CLI_TIMEOUT_S = 10  # any single `weft` command
UI_TIMEOUT_S = 20  # a screen showing what it should
RUN_TIMEOUT_S = 30  # the run reaching the gate, then finishing
PAINT_DELAY_S = 0.6  # DOM text is there; let the compositor paint it

WORKFLOW_NAME = "ShipGate"
QUESTION = "Ship the build?"
BUILD_OUTPUT = "built artifact e2e-42"  # computed by the script, so not in its text
SHIPPED_FILE = "shipped.txt"

WORKFLOW = f"""\
// The e2e test's workflow: a command, a human gate, a command that writes a file.
digraph {WORKFLOW_NAME} {{
    graph [goal="Build, approve and ship", on_failure="exit"]
    rankdir=LR

    start [shape=Mdiamond, label="Start"]
    exit  [shape=Msquare, label="Exit"]

    build   [shape=parallelogram, label="Build", script="sleep 1 && echo built artifact e2e-$((40 + 2))"]
    approve [shape=hexagon, label="{QUESTION}"]
    ship    [shape=parallelogram, label="Ship", script="echo shipped > {SHIPPED_FILE} && echo 'shipped e2e-42'"]
    hold    [shape=parallelogram, label="Hold", script="echo held > held.txt"]

    start -> build -> approve
    approve -> ship [label="[S] Ship"]
    approve -> hold [label="[H] Hold"]
    ship -> exit
    hold -> exit
}}
"""

# No exit node: the Launch screen must say so inline.
BROKEN_WORKFLOW = """\
digraph Broken {
    start [shape=Mdiamond]
    build [shape=parallelogram, script="true"]
    start -> build
}
"""
BROKEN_MESSAGE = "no exit node"

# Captures a markdown report as an artifact (the run configuration says so).
REPORT_WORKFLOW = """\
digraph Report {
    graph [goal="Write the release report"]
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    report [shape=parallelogram, script="mkdir -p reports && printf '# Release report\\n\\n- e2e-42 shipped\\n' > reports/summary.md"]
    start -> report -> exit
}
"""
REPORT_CONFIG = """\
[workflow]
graph = "report.fabro"
[run.artifacts]
include = ["reports/**"]
"""
CHANGES_WORKFLOW = """\
// Run in a scratch git repository: each stage's changes are a commit and a
// diff.patch, the run's a final.patch (the Files Changed section).
digraph Tidy {
    graph [goal="Move util into src/ and document it"]
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    move [shape=parallelogram, script="mkdir -p src && mv util.py src/util.py && sed -i 's/from util/from src.util/' main.py"]
    docs [shape=parallelogram, script="printf '\\\\n## Usage\\\\n\\\\n    python3 main.py\\\\n' >> README.md"]
    start -> move -> docs -> exit
}
"""
CHANGES_REPO_FILES = {
    "README.md": "# Shop\n\nA small shop service.\n",
    "main.py": "from util import total\n\nprint(total([1, 2, 3]))\n",
    "util.py": "def total(prices):\n    return sum(prices)\n",
}
REPORT_PATH = "reports/summary.md"
REPORT_BYTES = b"# Release report\n\n- e2e-42 shipped\n"

# An agent stage, scripted on the fake LLM server: a `shell` call long
# enough to steer the agent while it runs, then a last answer.
AGENT_KEY = "sk-e2e-agent"
AGENT_WORKFLOW = """\
digraph Tidy {
    graph [goal="Check the notes"]
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    tidy  [shape=box, label="Tidy", prompt="{{ goal }}"]
    start -> tidy -> exit
}
"""
# The agent's shell call runs until the test has steered it (it creates
# STEERED in the work dir once the app says the message is queued), so the
# message always reaches the model's next request, however slow the machine;
# it gives up after AGENT_SHELL_MAX_SECONDS.
STEERED = "steered"
AGENT_SHELL_MAX_SECONDS = 100  # under the shell tool's default timeout (120 s)
AGENT_SCRIPT = [
    {"turn": {
        "text": "I'll run the **checks** first.",
        "tool_calls": [{"id": "toolu_checks", "name": "shell",
                        "arguments": {"command": f"for i in $(seq {AGENT_SHELL_MAX_SECONDS * 10}); do "
                                                    f"[ -f {STEERED} ] && break; sleep 0.1; done; echo checks passed"}}],
    }},
    {"text": "The checks pass; nothing to tidy."},
]
STEER_TEXT = "Leave the first line of the notes alone."

# A prompt stage on an OpenAI model, then the run's retro, both answered by
# the fake LLM server: the Spending page's second model and the Retros
# page's row.
RETRO_KEY = "sk-e2e-retro"
RETRO_MODEL = "gpt-5.2"
RETRO_WORKFLOW = """\
digraph Triage {
    graph [goal="Triage the open checkout bug reports"]
    start  [shape=Mdiamond]
    exit   [shape=Msquare]
    triage [shape=tab, label="Triage", prompt="Sort these bug reports by severity: {{ goal }}"]
    start -> triage -> exit
}
"""
RETRO_OUTCOME = "Three reports were sorted by severity; the coupon rounding bug comes first"
RETRO_FRICTION = "two reports describe the same timeout in different words"
RETRO_SCRIPT = [
    {"turn": {
        "text": "1. Coupon totals are off by a cent (high).\n2. Checkout times out under load (medium).",
        "usage": {"input": 4300, "output": 780},
    }},
    {"turn": {
        "text": json.dumps({
            "smoothness": "smooth",
            "intent": "Triage the open checkout bug reports",
            "outcome": RETRO_OUTCOME,
            "learnings": [{"category": "code", "text": "coupon totals are rounded per line, not per order"}],
            "friction_points": [{"kind": "ambiguity", "description": RETRO_FRICTION, "stage": "triage"}],
            "open_items": [{"kind": "test_gap", "description": "no test covers a coupon on a multi-line order"}],
        }),
        "usage": {"input": 1600, "output": 240},
    }},
]


def dollars(cost: float) -> str:
    """A cost as the app shows one without unpriced calls (ui/src/format.ts)."""
    return f"${cost:.4f}" if 0 < cost < 0.01 else f"${cost:.2f}"


def tokens(n: int) -> str:
    """A token count as the app shows it (ui/src/format.ts formatTokens)."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.1f}M"

# A stand-in for xdg-open: records its arguments, one call per line.
FAKE_XDG_OPEN = """\
#!/bin/sh
printf '%s\\n' "$*" >> "$WEFT_E2E_XDG_LOG"
"""


class Deadline(Exception):
    """The whole test ran out of time."""


class E2E:
    def __init__(self, app: Path, shots: Path, scratch: Path) -> None:
        self.app = app
        self.bin_dir = app.parent
        self.weft = self.bin_dir / "weft"
        self.weftd = self.bin_dir / "weftd"
        self.shots = shots
        self.scratch = scratch
        self.home = scratch / "home"
        self.work = scratch / "work"
        self.workflow = self.work / "ship.fabro"
        self.broken = self.work / "broken.fabro"
        self.env = dict(os.environ)
        self.daemon: subprocess.Popen | None = None
        self.driver_proc: subprocess.Popen | None = None
        self.session: Session | None = None
        self.run_id: str | None = None
        self.agent_run: str | None = None
        self.retro_run: str | None = None
        self.fakellm: subprocess.Popen | None = None
        self.fake_url: str | None = None
        self.xdg_log = scratch / "xdg-open.log"

    # ---- processes -----------------------------------------------------------------

    def setup_dirs(self) -> None:
        for d in (self.home, self.work):
            d.mkdir()
        self.workflow.write_text(WORKFLOW)
        self.broken.write_text(BROKEN_WORKFLOW)
        self.env["WEFT_HOME"] = str(self.home)
        # Without this Tauri does not enable WebKit automation, and creating a
        # session hangs forever.
        self.env["TAURI_WEBVIEW_AUTOMATION"] = "true"
        # Without a GPU the app paints without compositing (src-tauri/src/rendering.rs),
        # and WebKitWebDriver's screenshot then never answers: keep compositing on.
        self.env["WEFT_GPU_COMPOSITING"] = "1"
        # Keep every file the app or WebKit writes out of the real user's dirs
        # (the recent-workflows list lives in the webview's local storage).
        for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME"):
            d = self.scratch / var.lower()
            d.mkdir()
            self.env[var] = str(d)
        self.env.setdefault("XDG_CACHE_HOME", str(self.scratch / "xdg_cache_home"))
        # "Reveal in folder" falls back to xdg-open when no file manager
        # answers on D-Bus (none does under Xvfb): record instead of opening.
        fake_bin = self.scratch / "bin"
        fake_bin.mkdir()
        xdg_open = fake_bin / "xdg-open"
        xdg_open.write_text(FAKE_XDG_OPEN)
        xdg_open.chmod(0o755)
        self.env["PATH"] = f"{fake_bin}{os.pathsep}{self.env.get('PATH', '')}"
        self.env["WEFT_E2E_XDG_LOG"] = str(self.xdg_log)

    def run_briefly(self, argv: list[str], what: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        """Runs a program that must finish within CLI_TIMEOUT_S; `what` names it in the failure."""
        try:
            return subprocess.run(
                argv,
                env=self.env,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=CLI_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired as e:
            raise Failure(f"{what} did not finish within {CLI_TIMEOUT_S} s") from e

    def weft_cli(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        return self.run_briefly([str(self.weft), *args], f"`weft {' '.join(args)}`", cwd)

    def start_daemon(self) -> None:
        log = open(self.scratch / "weftd.log", "wb")
        self.daemon = subprocess.Popen(
            [str(self.weftd), "--foreground"],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.work,
            start_new_session=True,  # its own group: cleanup reaches the stage commands too
        )
        log.close()

        def up():
            if self.daemon.poll() is not None:
                raise Failure(f"weftd exited with status {self.daemon.returncode}: {self.daemon_log()}")
            return self.weft_cli("daemon", "status").returncode == 0

        try:
            wait_until("answering `weft daemon status`", up, DAEMON_TIMEOUT_S)
        except Failure as e:
            if self.daemon.poll() is not None:
                raise
            raise Failure(f"{e}; weftd log: {self.daemon_log()}") from e

    def daemon_log(self) -> str:
        try:
            return (self.scratch / "weftd.log").read_text(errors="replace")[-2000:].strip()
        except OSError:
            return ""

    def start_app(self) -> None:
        driver_bin = shutil.which("WebKitWebDriver")
        if driver_bin is None:
            raise Failure("WebKitWebDriver not found; install the webkit2gtk-driver package")
        # The app inherits WebKitWebDriver's environment, WEFT_HOME included.
        self.driver_proc, driver = start_driver(driver_bin, self.env, self.scratch / "webkitwebdriver.log")
        wait_for_driver(driver, self.driver_proc)
        self.session = Session(driver, self.app)
        try:  # the screenshots' size; the window manager-less Xvfb allows it
            self.session.call("POST", "/window/rect", {"width": 1280, "height": 800})
        except Failure as e:
            print(f"  (could not resize the window: {e})")

    def cleanup(self) -> None:
        if self.session is not None:
            self.session.close()
        if self.driver_proc is not None:
            stop_process_group(self.driver_proc)
        if self.daemon is not None:
            stop_process_group(self.daemon)
        if self.fakellm is not None:
            stop_process_group(self.fakellm)

    # ---- page helpers --------------------------------------------------------------

    @property
    def s(self) -> Session:
        assert self.session is not None
        return self.session

    def shot(self, name: str) -> None:
        time.sleep(PAINT_DELAY_S)
        path = self.shots / name
        self.s.screenshot(path)
        print(f"  screenshot: {path.relative_to(REPO) if path.is_relative_to(REPO) else path}")

    def page(self) -> str:
        return f"the page says {self.s.text()[:1500]!r}"

    def wait_text(self, what: str, css: str, wanted: str, timeout: float = UI_TIMEOUT_S) -> str:
        """Waits until the element `css` exists and its text contains `wanted`.

        Ignores case: innerText follows CSS text-transform (the status chip
        shows "Succeeded" for the status `succeeded`).
        """
        return wait_until(
            what,
            lambda: (lambda t: t if t is not None and wanted.lower() in t.lower() else None)(self.s.text_of(css)),
            timeout,
            describe=lambda: f"{css} says {self.s.text_of(css)!r}",
        )

    def nav(self, name: str) -> None:
        self.s.click(self.s.find_by_text("nav[aria-label=Screens] a", name))

    def open_tab(self, tablist: str, tab: str) -> None:
        """Clicks tab `tab` of the run screen's tab list `tablist` (Stage or Run) and waits for its panel."""
        selector = f"[role=tablist][aria-label={tablist}] [role=tab][data-tab={tab}]"
        self.s.click(wait_until(
            f"the {tablist} tab {tab}", lambda: self.s.execute(
                "return document.querySelector(arguments[0]) ? true : null;", selector) and self.s.find(selector),
            UI_TIMEOUT_S, describe=self.page,
        ))
        wait_until(
            f"the {tablist} tab {tab} open",
            lambda: self.s.execute(
                "const t = document.querySelector(arguments[0]);"
                "const p = t && document.getElementById(t.getAttribute('aria-controls'));"
                "return !!t && t.getAttribute('aria-selected') === 'true' && !!p && p.getAttribute('data-tab') === arguments[1];",
                selector, tab,
            ),
            UI_TIMEOUT_S,
            describe=self.page,
        )

    def choose_theme(self, theme: str) -> None:
        """Chooses `theme` (system, light or dark) in the app bar's Theme menu."""
        self.s.click(self.s.find(f"[data-testid=theme-setting] select option[value={theme}]"))
        wait_until(
            f"the {theme} theme applied",
            lambda: self.s.execute(
                "return (document.documentElement.dataset.theme ?? 'system') === arguments[0]"
                " && localStorage.getItem('weft.theme') === arguments[0];", theme,
            ),
            UI_TIMEOUT_S,
            describe=lambda: f"theme {self.s.execute('return document.documentElement.dataset.theme ?? null;')!r}",
        )

    # ---- the steps -----------------------------------------------------------------

    def step_daemon_and_app(self) -> None:
        self.start_daemon()
        self.start_app()
        wait_until("showing the app version", lambda: self.s.text_of("[data-testid=app-version]"), UI_TIMEOUT_S,
                   describe=self.page)

    def step_launch(self) -> None:
        self.nav("Launch")
        self.wait_text("on the Launch screen", "#launch-title", "Launch a workflow")
        self.s.type(self.s.find("input[name=workflow]"), str(self.workflow))
        self.wait_text("validating the workflow", "section.launch", "The workflow is valid.")
        start = self.s.find_by_text("section.launch button", "Start run")
        wait_until("an enabled Start run button", lambda: self.s.enabled(start), UI_TIMEOUT_S)
        self.s.click(start)
        self.run_id = wait_until(
            "on the new run's screen",
            lambda: self.s.execute(
                "const e = document.querySelector('[data-testid=run-screen]');"
                "return e ? e.getAttribute('data-run-id') : null;"
            ),
            UI_TIMEOUT_S,
            describe=self.page,
        )
        print(f"  run {self.run_id}")

    def gate_state(self) -> str:
        questions = self.weft_cli("questions").stdout.strip()
        return f"{self.page()}; `weft questions` says {questions!r}"

    def step_gate(self) -> None:
        asked = lambda: QUESTION in (self.s.text_of("[data-testid=question-text]") or "")  # noqa: E731
        # The gate opens while the run screen is live (the build stage
        # sleeps a second first), so this also proves the screen follows
        # the run: no reload.
        wait_until("showing the gate's question", asked, RUN_TIMEOUT_S, describe=self.gate_state)
        panel = self.s.text_of("[data-testid=question-panel]") or ""
        for wanted in ("approve", "Ship", "Hold"):
            if wanted not in panel:
                raise Failure(f"the question panel lacks {wanted!r}: {panel!r}")
        status = (self.s.text_of("[data-testid=run-status]") or "").strip().lower()
        if status not in ("running", "blocked"):
            raise Failure(f"at the gate the run's status is {status!r}, not running or blocked")
        if (self.work / SHIPPED_FILE).exists():
            raise Failure(f"{SHIPPED_FILE} exists before the gate was answered")
        self.shot("run-gate.png")
        # The Gates inbox lists it too (the screenshot shows a waiting gate).
        self.nav("Gates")
        self.wait_text("listing the question in the Gates inbox", "[data-testid=gates-screen]", QUESTION)
        self.shot("gates.png")
        self.s.set_hash(f"#/run/{self.run_id}")
        wait_until("back on the run at its question", asked, UI_TIMEOUT_S, describe=self.gate_state)

    def step_answer(self) -> None:
        self.s.click(self.s.find_by_text("[data-testid=question-panel] button.question__option", "Ship"))
        self.wait_text("showing the run succeeded", "[data-testid=run-status]", "succeeded", RUN_TIMEOUT_S)
        shipped = self.work / SHIPPED_FILE
        wait_until(f"seeing {shipped} written by the ship stage", shipped.exists, 5)
        if (self.work / "held.txt").exists():
            raise Failure("the hold stage ran although the answer was Ship")
        # The answered question leaves the screen.
        wait_until(
            "hiding the answered question",
            lambda: self.s.execute("return !document.querySelector('[data-testid=question-panel] button:enabled');"),
            UI_TIMEOUT_S,
            describe=self.page,
        )
        self.shot("run.png")

    def step_runs(self) -> None:
        self.nav("Runs")
        row = f"[data-testid=run-row][data-run-id='{self.run_id}']"
        self.wait_text("listing the run in Runs", row, WORKFLOW_NAME)
        self.wait_text("listing the run as succeeded", row, "succeeded")
        self.shot("runs.png")

    def step_gates(self) -> None:
        self.nav("Gates")
        self.wait_text("showing the empty Gates inbox", "[data-testid=gates-screen]", "No gate is waiting for an answer.")

    def step_launch_broken(self) -> None:
        self.nav("Launch")
        self.wait_text("on the Launch screen", "#launch-title", "Launch a workflow")
        field = self.s.find("input[name=workflow]")
        self.s.type(field, str(self.broken))
        self.wait_text(
            "showing the broken workflow's diagnostic",
            "ul[aria-label='Problems in the workflow']",
            BROKEN_MESSAGE,
        )
        if self.s.enabled(self.s.find_by_text("section.launch button", "Start run")):
            raise Failure("Start run is enabled for a workflow with errors")
        self.shot("launch.png")

    def step_artifacts(self) -> None:
        (self.work / "report.fabro").write_text(REPORT_WORKFLOW)
        config = self.work / "report.toml"
        config.write_text(REPORT_CONFIG)
        done = self.weft_cli("run", "--json", str(config), cwd=self.work)
        if done.returncode != 0:
            raise Failure(f"`weft run report.toml` failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")
        run_id = json.loads(done.stdout)["run_id"]
        self.s.set_hash(f"#/run/{run_id}")
        # The run screen reads the run after the hash changes; the list is
        # in the stage panel's Artifacts tab.
        self.open_tab("Stage", "artifacts")
        def report_button() -> str | None:
            try:
                return self.s.find_by_text("[data-testid=artifact-preview] button", REPORT_PATH)
            except Failure:
                return None

        self.s.click(wait_until(
            f"the artifact list offering {REPORT_PATH}", report_button, UI_TIMEOUT_S,
            describe=lambda: f"the page says {self.s.text()[:300]!r}",
        ))
        self.wait_text("rendering the captured report", "[data-testid=artifact-markdown]", "Release report")
        self.s.click(self.s.find("[data-testid=artifact-reveal]"))
        said = self.wait_text("saying where the report was written", "[data-testid=artifact-revealed]", REPORT_PATH)
        exported = next((Path(w) for w in said.split() if w.endswith(REPORT_PATH)), None)
        if exported is None or not exported.is_relative_to(self.home):
            raise Failure(f"the revealed file is not under WEFT_HOME ({self.home}): {said!r}")
        if exported.read_bytes() != REPORT_BYTES:
            raise Failure(f"{exported} holds {exported.read_bytes()!r}, not the captured report")
        wait_until(
            "xdg-open asked to open the report's folder",
            lambda: self.xdg_log.exists() and str(exported.parent) in self.xdg_log.read_text().splitlines(),
            5,
            describe=lambda: f"xdg-open was called with {self.xdg_log.read_text() if self.xdg_log.exists() else 'nothing'!r}",
        )
        self.s.execute(
            "document.querySelector('[data-testid=artifact-markdown]').scrollIntoView({block: 'end'});"
        )
        self.shot("run-artifacts.png")

    def step_changes(self) -> None:
        repo = self.work / "shop-repo"
        repo.mkdir()
        for name, text in CHANGES_REPO_FILES.items():
            (repo / name).write_text(text)
        git = ["git", "-c", "user.name=E2E", "-c", "user.email=e2e@weft.invalid", "-c", "commit.gpgsign=false"]
        for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "initial"]):
            done = self.run_briefly([*git, *args], f"git {args[0]}", cwd=repo)
            if done.returncode != 0:
                raise Failure(f"git {' '.join(args)} failed: {done.stderr.strip()}")
        (self.work / "tidy.fabro").write_text(CHANGES_WORKFLOW)
        done = self.weft_cli("run", "--json", "tidy.fabro", "--work-dir", str(repo), cwd=self.work)
        if done.returncode != 0:
            raise Failure(f"`weft run tidy.fabro` failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")
        run_id = json.loads(done.stdout)["run_id"]
        self.s.set_hash(f"#/run/{run_id}/stage/move")
        # The stage panel links to the stage's own diff.
        self.s.click(wait_until(
            "the stage panel's Files changed link", lambda: self.s.find("[data-testid=stage-changes-link]"), UI_TIMEOUT_S,
            describe=lambda: f"the page says {self.s.text()[:300]!r}",
        ))
        self.wait_text("the move stage's changes", "[data-testid=changes-totals]", "3 files changed")
        # The whole run's: the file tree names every file, the diff shows the lines.
        self.s.execute(
            "const s = document.querySelector('[data-testid=files-changed] select');"
            "s.value = ''; s.dispatchEvent(new Event('change', {bubbles: true}));"
        )
        self.wait_text("the whole run's changes", "[data-testid=changes-totals]", "4 files changed")
        self.wait_text("the moved module in the diff", "[data-testid=diff-view]", "from src.util import total")
        git_facts = self.wait_text("the run branch in the header", "[data-testid=run-git]", f"weft/run/{run_id}")
        base = self.run_briefly([*git, "rev-parse", "--short=8", "main"], "git rev-parse", cwd=repo).stdout.strip()
        if base not in git_facts:
            raise Failure(f"the header shows {git_facts!r}, not the base commit {base}")
        self.s.execute(
            "const panes = document.querySelector('[data-testid=run-panes]');"
            "panes.scrollIntoView({block: 'start'}); panes.querySelector('.run__side').scrollTop = 0;"
        )
        time.sleep(PAINT_DELAY_S)
        self.shot("run-changes.png")

    def step_apply(self) -> None:
        # The checkpointed run of step_changes, still on screen: Apply… merges
        # its branch into the checkout's main, a fast-forward (main has not
        # moved since the run started), through the app's run_apply and weftd.
        repo = self.work / "shop-repo"
        run_id = self.s.execute(
            "return document.querySelector('[data-testid=run-screen]').getAttribute('data-run-id');"
        )
        self.s.click(wait_until(
            "the header's Apply button", lambda: self.s.find("[data-testid=apply-run]"), UI_TIMEOUT_S,
            describe=self.page,
        ))
        self.s.click(wait_until(
            "the dialog's Apply button", lambda: self.s.find("[data-testid=apply-confirm]"), UI_TIMEOUT_S,
            describe=self.page,
        ))
        self.wait_text("the apply result", "[data-testid=apply-result]", "Fast-forwarded main")
        git = ["git", "-C", str(repo)]
        main = self.run_briefly([*git, "rev-parse", "main"], "git rev-parse main").stdout.strip()
        branch = self.run_briefly([*git, "rev-parse", f"weft/run/{run_id}"], "git rev-parse").stdout.strip()
        if not main or main != branch:
            raise Failure(f"main is at {main!r}, not at the run's branch {branch!r}")
        if not (repo / "src" / "util.py").is_file():
            raise Failure("the checkout does not have the run's moved module src/util.py")
        status = self.run_briefly([*git, "status", "--porcelain"], "git status").stdout.strip()
        if status:
            raise Failure(f"the checkout is not clean after the fast-forward: {status!r}")
        self.s.execute("document.querySelector('[data-testid=run-header]').scrollIntoView({block: 'start'});")
        self.shot("run-apply.png")

    def step_fork(self) -> None:
        # The same run: "Fork from here" on its move stage makes a new run
        # (weftd's run.fork) that the app opens, cancelled until resumed;
        # Resume runs the stages after move again and it succeeds.
        source = self.s.execute(
            "return document.querySelector('[data-testid=run-screen]').getAttribute('data-run-id');"
        )
        self.s.set_hash(f"#/run/{source}/stage/move")
        self.s.click(wait_until(
            "the stage's Checkpoint menu", lambda: self.s.find("[data-testid=stage-menu] summary"), UI_TIMEOUT_S,
            describe=self.page,
        ))
        self.s.click(self.s.find("[data-testid=fork-here]"))
        forked = wait_until(
            "the forked run on screen",
            lambda: (lambda r: r if r and r != source else None)(self.s.execute(
                "const e = document.querySelector('[data-testid=run-screen]');"
                "return e ? e.getAttribute('data-run-id') : null;"
            )),
            UI_TIMEOUT_S,
            describe=self.page,
        )
        self.wait_text("the fork's reason", "[data-testid=run-stopped-reason]", f"forked from run {source} at move@1")
        self.wait_text("the fork waits", "[data-testid=run-status]", "cancelled")
        self.s.click(self.s.find_by_text("[data-testid=run-header] button", "Resume"))
        self.wait_text(f"the fork {forked} resumed to the end", "[data-testid=run-status]", "succeeded", timeout=RUN_TIMEOUT_S)

    def step_second_start(self) -> None:
        # As weftd starts the app for a clicked gate notification.
        self.nav("Runs")
        question = "q-from-a-notification"
        second = self.run_briefly(
            [str(self.app), f"weft://run/{self.run_id}/question/{question}"],
            "a second start of the app (so it opened its own window)",
        )
        if second.returncode != 0:
            raise Failure(f"the second start exited {second.returncode}: {second.stderr.strip()}")
        wanted = f"#/run/{self.run_id}/question/{question}"
        wait_until(
            "the open window going to the handed-over question",
            lambda: self.s.execute("return location.hash;") == wanted,
            UI_TIMEOUT_S,
            describe=lambda: f"the window is at {self.s.execute('return location.hash;')!r}, not {wanted!r}",
        )
        self.wait_text("showing the run of the question", "[data-testid=run-header]", WORKFLOW_NAME)

    def step_agent(self) -> None:
        fakellm = self.bin_dir / "weft-fakellm"
        fake = subprocess.Popen(
            [str(fakellm)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=self.env, start_new_session=True
        )
        self.fakellm = fake
        assert fake.stdout is not None
        line = fake.stdout.readline().decode()
        if not line.startswith("listening on "):
            raise Failure(f"weft-fakellm did not start: {line!r}")
        url = line.removeprefix("listening on ").strip()
        self.fake_url = url
        fake_call = self.fake_call
        fake_call("POST", f"/_fake/script/{AGENT_KEY}", AGENT_SCRIPT)
        (self.work / "tidy.fabro").write_text(AGENT_WORKFLOW)
        env = {**self.env, "ANTHROPIC_API_KEY": AGENT_KEY, "ANTHROPIC_BASE_URL": url}
        started = subprocess.run(
            [str(self.weft), "run", "--detach", "--json", "tidy.fabro", "--model", "claude-haiku-4-5"],
            env=env, cwd=self.work, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=CLI_TIMEOUT_S,
        )
        if started.returncode != 0:
            raise Failure(f"`weft run tidy.fabro` failed ({started.returncode}): {started.stderr.strip()}")
        run_id = json.loads(started.stdout)["run_id"]
        self.agent_run = run_id
        self.s.set_hash(f"#/run/{run_id}")
        # The panel follows the run to the agent, whose shell call is running
        # (shown in its Transcript tab, whatever tab an earlier step left open).
        wait_until(
            "the panel following the run to the agent",
            lambda: self.s.execute("return !!document.querySelector('[data-testid=stage-detail][data-node=tidy]');"),
            UI_TIMEOUT_S,
            describe=self.page,
        )
        self.open_tab("Stage", "transcript")
        wait_until(
            "the agent's shell call showing as running",
            lambda: self.s.execute(
                "return !!document.querySelector("
                "'[data-testid=stage-detail][data-node=tidy] [data-testid=tool-call][data-tool=shell][data-state=running]');"
            ),
            UI_TIMEOUT_S,
            describe=self.page,
        )
        self.s.type(self.s.find("[data-testid=steer-box] textarea"), STEER_TEXT)
        self.s.click(self.s.find_by_text("[data-testid=steer-box] button", "Send to the agent"))
        self.wait_text("the message queued for the agent", "[data-testid=steer-box] [data-testid=action-done]", "Sent")
        # Queued: let the shell call end. The message is delivered before the
        # next model call.
        (self.work / STEERED).write_text("")
        self.wait_text("the steering message in the transcript", "[data-testid=agent-notice][data-kind=steered]",
                       STEER_TEXT, timeout=UI_TIMEOUT_S)
        self.wait_text("the agent's stage succeeding", "[data-testid=stage-detail][data-node=tidy] .run-chip",
                       "succeeded", timeout=RUN_TIMEOUT_S)
        self.wait_text("the shell call's duration", "[data-testid=tool-call][data-tool=shell] .tool-call__time", "s")
        requests = fake_call("GET", f"/_fake/requests/{AGENT_KEY}")
        if not isinstance(requests, list) or len(requests) != 2:
            raise Failure(f"the model should have been called twice, got {requests!r}"[:500])
        if STEER_TEXT not in json.dumps(requests[-1]):
            raise Failure("the model's second request does not carry the steering message")
        if self.s.execute("return document.querySelectorAll('[data-testid=steer-box]').length;") != 0:
            raise Failure("the steering box still shows after the stage ended")
        self.shot("run-agent.png")

    def fake_call(self, method: str, path: str, body: object | None = None) -> object:
        """A call to the fake LLM server's control API (`/_fake/...`)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.fake_url}{path}", data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=CLI_TIMEOUT_S) as answer:
            return json.loads(answer.read() or b"null")

    def cli_json(self, *args: str) -> object:
        done = self.weft_cli(*args)
        if done.returncode != 0:
            raise Failure(f"`weft {' '.join(args)}` failed ({done.returncode}): {done.stderr.strip()}")
        return json.loads(done.stdout)

    def step_spending_and_retros(self) -> None:
        # A prompt stage on an OpenAI model and its run's retro, both on the
        # fake LLM server step_agent started.
        if self.fakellm is None or self.fake_url is None:
            raise Failure("the fake LLM server of the agent step is not running")
        self.fake_call("POST", f"/_fake/script/{RETRO_KEY}", RETRO_SCRIPT)
        (self.work / "triage.fabro").write_text(RETRO_WORKFLOW)
        env = {**self.env, "OPENAI_API_KEY": RETRO_KEY, "OPENAI_BASE_URL": f"{self.fake_url}/v1"}
        ran = subprocess.run(
            [str(self.weft), "run", "--json", "triage.fabro", "--model", RETRO_MODEL, "--retro"],
            env=env, cwd=self.work, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
        )
        if ran.returncode != 0:
            raise Failure(f"`weft run triage.fabro --retro` failed ({ran.returncode}): {ran.stderr.strip()}")
        run_id = json.loads(ran.stdout)["run_id"]
        # weftd makes the retro after the run's end, which `weft run` returns at.
        wait_until(
            f"`weft retro {run_id}` finding the retro",
            lambda: self.weft_cli("retro", run_id, "--json").returncode == 0,
            RUN_TIMEOUT_S,
        )
        retro = self.cli_json("retro", run_id, "--json")
        if (retro.get("narrative") or {}).get("smoothness") != "smooth":
            raise Failure(f"the retro has no narrative rated smooth: {json.dumps(retro)[:600]}")

        # The Spending page's default window is the last 30 days: the CLI's
        # figures for the same window.
        cost = self.cli_json("cost", "--json", "--since", "30d")
        models = cost["models"]
        if {m["provider"] for m in models} != {"anthropic", "openai"}:
            raise Failure(f"`weft cost` should name an Anthropic and an OpenAI model: {models!r}")
        self.nav("Spending")
        total = cost["total"]
        self.wait_text("the Spending page's total cost", "[data-testid=spending-cost]", dollars(total["cost"]))
        shown_total = (self.s.text_of("[data-testid=spending-total]") or "")
        want_tokens = f"{tokens(total['input_tokens'])} in / {tokens(total['output_tokens'])} out"
        plural = lambda n, word: f"{n} {word}" if n == 1 else f"{n} {word}s"  # noqa: E731
        want_calls = f"{total['calls']} in {plural(total['stages'], 'stage')} of {plural(cost['runs_total'], 'run')}"
        for wanted in (want_tokens, want_calls):
            if wanted not in shown_total:
                raise Failure(f"the Spending totals lack {wanted!r} (`weft cost`): {shown_total!r}")
        rows = self.s.execute(
            "return [...document.querySelectorAll('[data-testid=spending-models] tbody tr')]"
            ".map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent));"
        )
        want_rows = [
            [m["model"], m["provider"], str(m["calls"]),
             f"{tokens(m['input_tokens'])} in / {tokens(m['output_tokens'])} out", dollars(m["cost"])]
            for m in models
        ]
        if rows != want_rows:
            raise Failure(f"the Spending page's models {rows!r} differ from `weft cost --json`'s {want_rows!r}")
        runs = self.s.execute(
            "return [...document.querySelectorAll('[data-testid=spending-runs] tbody tr')]"
            ".map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent));"
        )
        want_runs = [[r["run_id"][:10], r["workflow_name"], str(r["calls"]), dollars(r["cost"])] for r in cost["runs"]]
        if [[r[0], r[1], r[3], r[5]] for r in runs] != want_runs:
            raise Failure(f"the Spending page's runs {runs!r} differ from `weft cost --json`'s {want_runs!r}")
        self.shot("spending.png")

        self.nav("Retros")
        row = f"table.retros tr[data-run-id='{run_id}']"
        self.wait_text("the run's row on the Retros page", row, "Triage")
        cells = self.s.execute(
            f"return [...document.querySelectorAll(\"{row} td\")].map((td) => td.textContent);"
        )
        t = retro["totals"]
        want = ["smooth", run_id[:10], "Triage", dollars(t["cost"]), tokens(t["tokens"]),
                str(len(retro["narrative"]["friction_points"]))]
        if [cells[0], cells[1], cells[2], cells[4], cells[5], cells[6]] != want:
            raise Failure(f"the Retros row {cells!r} differs from `weft retro --json`'s {want!r}")
        self.shot("retros.png")

        self.retro_run = run_id
        # The row's link opens the run at its Retro tab (#/run/RUN/retro).
        self.s.click(self.s.find(f"{row} a"))
        retro_tab = "[role=tabpanel][data-tab=retro]"
        self.wait_text("the run's Retro tab", f"{retro_tab} [data-testid=retro]", RETRO_OUTCOME)
        self.wait_text("the retro's friction point", retro_tab, RETRO_FRICTION)
        summary = self.s.text_of(f"{retro_tab} .retro__summary") or ""
        wanted = f"{dollars(t['cost'])} · {tokens(t['tokens'])} tokens"
        if wanted not in summary:
            raise Failure(f"the Retro section's figures {summary!r} lack {wanted!r} (`weft retro --json`)")
        self.s.execute("document.querySelector('[data-testid=run-bar]').scrollIntoView({block: 'end'});")
        self.shot("run-retro.png")

        assert self.fakellm.stdin is not None
        self.fakellm.stdin.close()
        self.fakellm.wait(timeout=CLI_TIMEOUT_S)

    def step_views(self) -> None:
        """Screenshots every tab of the run screen, in the light and the dark theme.

        The stage tabs on the agent's run (it has a transcript, spend and
        routing), the run bar's tabs on the triage run (it has a retro and
        spend); each tab is clicked and must rewrite the address to name it.
        """
        if self.agent_run is None or self.retro_run is None:
            raise Failure("the agent and retro steps did not leave their runs")
        for theme in ("light", "dark"):
            self.choose_theme(theme)
            self.s.set_hash(f"#/run/{self.agent_run}/stage/tidy")
            self.wait_text("the agent's stage", "[data-testid=stage-detail][data-node=tidy] .run-chip", "succeeded")
            for tab in ("transcript", "output", "files", "artifacts", "routing", "context"):
                self.open_tab("Stage", tab)
                wanted = f"#/run/{self.agent_run}/stage/tidy@1/{tab}"
                wait_until(f"the address naming the {tab} tab", lambda: self.s.execute("return location.hash;") == wanted,
                           UI_TIMEOUT_S, describe=lambda: f"the hash is {self.s.execute('return location.hash;')!r}")
                self.s.execute("document.querySelector('[data-testid=run-panes]').scrollIntoView({block: 'start'});")
                self.shot(f"run-stage-{tab}-{theme}.png")
            self.s.set_hash(f"#/run/{self.retro_run}")
            self.wait_text("the triage run", "[data-testid=run-header]", "Triage")
            for tab in ("timeline", "events", "retro", "cost"):
                self.open_tab("Run", tab)
                wanted = f"#/run/{self.retro_run}/{tab}"
                wait_until(f"the address naming the {tab} bar tab", lambda: self.s.execute("return location.hash;") == wanted,
                           UI_TIMEOUT_S, describe=lambda: f"the hash is {self.s.execute('return location.hash;')!r}")
                if tab == "cost":
                    self.wait_text("the run's spend in the Cost tab", "[data-testid=cost-total]", "Spent")
                self.s.execute("document.querySelector('[data-testid=run-bar]').scrollIntoView({block: 'end'});")
                self.shot(f"run-bar-{tab}-{theme}.png")
        # The other screens in the dark theme (the light ones are the steps' own).
        screens = (
            ("Runs", "runs", f"[data-testid=run-row][data-run-id='{self.run_id}']", WORKFLOW_NAME),
            ("Gates", "gates", "[data-testid=gates-screen]", "No gate is waiting for an answer."),
            ("Launch", "launch", "#launch-title", "Launch a workflow"),
            ("Spending", "spending", "[data-testid=spending-runs] tbody tr", "Triage"),
            ("Retros", "retros", f"table.retros tr[data-run-id='{self.retro_run}']", "Triage"),
        )
        for name, file, selector, text in screens:
            self.nav(name)
            self.wait_text(f"the {name} screen in the dark theme", selector, text)
            self.shot(f"{file}-dark.png")
        self.choose_theme("system")

    def step_offline(self) -> None:
        # weftd is our child: reap it while `weft daemon stop` waits for it to
        # go (an unreaped zombie still "exists", and the stop would wait on).
        assert self.daemon is not None
        stop = subprocess.Popen(
            [str(self.weft), "daemon", "stop"],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            self.daemon.wait(timeout=DAEMON_TIMEOUT_S)
            out, err = stop.communicate(timeout=CLI_TIMEOUT_S)
        except subprocess.TimeoutExpired as e:
            stop.kill()
            stop.wait()
            raise Failure(f"weftd or `weft daemon stop` still runs after {DAEMON_TIMEOUT_S} s") from e
        if stop.returncode != 0:
            raise Failure(f"`weft daemon stop` failed ({stop.returncode}): {err.strip() or out.strip()}")
        status = self.weft_cli("daemon", "status").returncode
        if status != 3:
            raise Failure(f"`weft daemon status` exits {status} after the stop, not 3 (not running)")

        # A fresh page load of the run screen, with no daemon to ask.
        self.s.set_hash(f"#/run/{self.run_id}")
        self.s.call("POST", "/refresh", {})
        header = self.wait_text("showing the run's header offline", "[data-testid=run-header]", WORKFLOW_NAME)
        if "succeeded" not in header.lower():
            raise Failure(f"the offline header does not say succeeded: {header!r}")
        self.wait_text("saying the daemon is not running", "[data-testid=live-state]", "daemon is not running")
        wait_until(
            "drawing the graph offline",
            lambda: self.s.execute(
                "const v = document.querySelector('[data-testid=graph-viewport]');"
                "return v && v.getAttribute('data-status') === 'ready'"
                " && !!v.querySelector('[data-node-id=build]') && !!v.querySelector('[data-node-id=ship]');"
            ),
            UI_TIMEOUT_S,
            describe=lambda: f"graph: {self.s.text_of('section.wf-graph')!r}",
        )
        self.open_tab("Run", "timeline")
        self.s.click(self.s.find("button.timeline__bar[data-node=build]"))
        self.open_tab("Stage", "output")
        self.wait_text("showing the build stage's stdout offline", "[data-testid=log-text]", BUILD_OUTPUT)
        self.s.click(self.s.find_by_text("[data-testid=logs] [role=tab]", "stdout"))
        self.wait_text("showing the build stage's stdout tab", "[data-testid=log-text]", BUILD_OUTPUT)

        # An action needs the daemon: the screen says so (and offers to start it).
        self.s.click(self.s.find_by_text("[data-testid=run-header] button", "Re-run"))
        self.wait_text("explaining the daemon is down", "[data-testid=daemon-down]", "not running")
        self.shot("run-offline.png")
        if self.weft_cli("daemon", "status").returncode != 3:
            raise Failure("something started weftd again")


def run_steps(test: E2E) -> tuple[int, int]:
    steps: list[tuple[str, Callable[[], None]]] = [
        ("weftd and the app start", test.step_daemon_and_app),
        ("a workflow launches from the Launch screen", test.step_launch),
        ("the run screen shows the gate's question", test.step_gate),
        ("answering Ship finishes the run", test.step_answer),
        ("the run appears in Runs", test.step_runs),
        ("the Gates inbox is empty", test.step_gates),
        ("Launch shows a broken workflow's diagnostic", test.step_launch_broken),
        ("an artifact is previewed and revealed in its folder", test.step_artifacts),
        ("a checkpointed run's changes show in Files changed", test.step_changes),
        ("Apply merges a checkpointed run into its checkout", test.step_apply),
        ("Fork from here opens a new run that resumes to the end", test.step_fork),
        ("a second start hands its question to the open window", test.step_second_start),
        ("an agent stage shows its transcript live and takes a steering message", test.step_agent),
        ("Spending and Retros show what `weft cost` and `weft retro` say", test.step_spending_and_retros),
        ("every tab of the run screen, in light and dark, names itself in the address", test.step_views),
        ("with weftd stopped the run's details and logs still show", test.step_offline),
    ]
    passed = failed = 0
    for i, (name, step) in enumerate(steps):
        started = time.monotonic()
        try:
            step()
        except (Failure, Deadline, OSError, AssertionError) as e:
            failed += 1
            print(f"FAIL {name}: {e}", file=sys.stderr)
            if not isinstance(e, (Failure, Deadline)):
                traceback.print_exc()
            rest = [n for n, _ in steps[i + 1:]]
            if rest:
                print(f"     not run after that: {'; '.join(rest)}", file=sys.stderr)
                failed += len(rest)
            break
        passed += 1
        print(f"ok   {name} ({time.monotonic() - started:.1f} s)")
    return passed, failed


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(f"usage: {argv[0]} PATH/TO/weft-desktop [SCREENSHOT_DIR]", file=sys.stderr)
        return 2
    app = Path(argv[1]).resolve()
    shots = Path(argv[2]).resolve() if len(argv) == 3 else REPO / "docs" / "screenshots"
    for binary in (app, app.parent / "weft", app.parent / "weftd", app.parent / "weft-fakellm"):
        if not (binary.is_file() and os.access(binary, os.X_OK)):
            print(f"app e2e: {binary} is not an executable; build with `cargo build --workspace --bins`",
                  file=sys.stderr)
            print("0 passed, 1 failed")
            return 1
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        print('app e2e: no display; run under xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session --',
              file=sys.stderr)
        print("0 passed, 1 failed")
        return 1

    def out_of_time(_signum, _frame):
        raise Deadline(f"the whole test took longer than {TEST_DEADLINE_S} s")

    signal.signal(signal.SIGALRM, out_of_time)
    signal.alarm(TEST_DEADLINE_S)
    started = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="weft-app-e2e-"))
    test = E2E(app, shots, scratch)
    passed, failed = 0, 1
    try:
        test.setup_dirs()
        passed, failed = run_steps(test)
    except Deadline as e:
        print(f"app e2e: {e}", file=sys.stderr)
    finally:
        signal.alarm(0)
        if failed:
            for name in ("weftd.log", "webkitwebdriver.log"):
                try:
                    tail = (scratch / name).read_text(errors="replace")[-1500:].strip()
                except OSError:
                    tail = ""
                if tail:
                    print(f"--- {name} (tail) ---\n{tail}", file=sys.stderr)
        test.cleanup()
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"app e2e: {time.monotonic() - started:.1f} s")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
