"""A small W3C WebDriver client for the real-app tests (Python stdlib only).

Drives WebKitWebDriver (Debian package webkit2gtk-driver) directly: the app
must be started with TAURI_WEBVIEW_AUTOMATION=true in its environment, or
creating a session hangs forever (see ../shared/design/PLATFORM.md). Every
HTTP call has a timeout; every wait has a deadline.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable, TypeVar

HTTP_TIMEOUT_S = 10  # any single WebDriver call
DRIVER_START_TIMEOUT_S = 10  # WebKitWebDriver answering /status
SESSION_TIMEOUT_S = 30  # new session = launch the app and attach to it
POLL_INTERVAL_S = 0.2

# The W3C key under which an element reference travels.
ELEMENT_KEY = "element-6066-11e4-a52e-4f735466cecf"

T = TypeVar("T")


class Failure(Exception):
    """The app (or the harness around it) did not behave; the message says how."""


def free_port() -> int:
    """A port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebDriver:
    """Just enough of the W3C WebDriver protocol, every call with a timeout."""

    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"

    def call(self, method: str, path: str, body: object = None, timeout: float = HTTP_TIMEOUT_S):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.base + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json; charset=utf-8"},
        )
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                payload = json.load(resp)
        except urllib.error.HTTPError as e:
            # WebDriver errors come as JSON: {"value": {"error", "message"}}.
            detail = e.read().decode(errors="replace")
            raise Failure(f"{method} {path} failed with HTTP {e.code}: {detail}") from e
        except TimeoutError as e:
            raise Failure(f"{method} {path}: no answer within {timeout} s") from e
        except urllib.error.URLError as e:
            raise Failure(f"{method} {path}: {e.reason}") from e
        return payload.get("value")


def start_driver(driver_bin: str, env: dict[str, str], log_path: Path) -> tuple[subprocess.Popen, WebDriver]:
    """Starts WebKitWebDriver in its own process group (so cleanup reaches the app)."""
    port = free_port()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [driver_bin, f"--port={port}"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return proc, WebDriver(port)


def wait_for_driver(driver: WebDriver, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + DRIVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise Failure(f"WebKitWebDriver exited early with status {proc.returncode}")
        try:
            status = driver.call("GET", "/status", timeout=2)
            if isinstance(status, dict) and status.get("ready", True):
                return
        except (OSError, Failure):
            pass
        time.sleep(POLL_INTERVAL_S)
    raise Failure(f"WebKitWebDriver did not answer within {DRIVER_START_TIMEOUT_S} s")


def stop_process_group(proc: subprocess.Popen) -> None:
    """Ends a process started with start_new_session=True and everything in its group."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
        except ProcessLookupError:
            pass
    # Children (the app under WebKitWebDriver) may outlive the leader.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class Session:
    """One WebDriver session: the app's window."""

    def __init__(self, driver: WebDriver, binary: Path, args: list[str] | None = None) -> None:
        caps = {
            "capabilities": {
                "alwaysMatch": {
                    "webkitgtk:browserOptions": {"binary": str(binary), "args": list(args or [])}
                }
            }
        }
        try:
            created = driver.call("POST", "/session", caps, timeout=SESSION_TIMEOUT_S)
        except Failure as e:
            raise Failure(
                f"could not start {binary} under WebDriver ({e}); it must be a Tauri app "
                "that honours TAURI_WEBVIEW_AUTOMATION=true"
            ) from e
        self.driver = driver
        self.id: str = created["sessionId"]

    def call(self, method: str, path: str, body: object = None, timeout: float = HTTP_TIMEOUT_S):
        return self.driver.call(method, f"/session/{self.id}{path}", body, timeout)

    def close(self) -> None:
        try:
            self.call("DELETE", "", timeout=5)
        except (OSError, Failure):
            pass

    # ---- page ------------------------------------------------------------------

    def execute(self, script: str, *args: object):
        """Runs `script` (a function body; `arguments` holds args) in the page."""
        return self.call("POST", "/execute/sync", {"script": script, "args": list(args)})

    def text(self) -> str:
        return self.execute("return document.body ? document.body.innerText : '';") or ""

    def text_of(self, css: str) -> str | None:
        """The visible text of the first element matching `css`, or None."""
        return self.execute(
            "const e = document.querySelector(arguments[0]); return e ? e.innerText : null;", css
        )

    def set_hash(self, route: str) -> None:
        self.execute("window.location.hash = arguments[0];", route)

    def screenshot(self, path: Path) -> None:
        png = self.call("GET", "/screenshot")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(png))

    # ---- elements --------------------------------------------------------------

    def find(self, css: str) -> str:
        found = self.call("POST", "/element", {"using": "css selector", "value": css})
        return found[ELEMENT_KEY]

    def find_by_text(self, css: str, text: str) -> str:
        """The first element matching `css` whose trimmed text contains `text`."""
        found = self.execute(
            "for (const e of document.querySelectorAll(arguments[0]))"
            "  if (e.innerText.trim().includes(arguments[1])) return e;"
            "return null;",
            css,
            text,
        )
        if not isinstance(found, dict) or ELEMENT_KEY not in found:
            raise Failure(f"no {css} with text {text!r}")
        return found[ELEMENT_KEY]

    def click(self, element: str) -> None:
        self.call("POST", f"/element/{element}/click", {})

    def type(self, element: str, text: str) -> None:
        self.call("POST", f"/element/{element}/value", {"text": text})

    def enabled(self, element: str) -> bool:
        return bool(self.call("GET", f"/element/{element}/enabled"))


def wait_until(what: str, probe: Callable[[], T | None], timeout: float, describe: Callable[[], str] | None = None) -> T:
    """Polls `probe` until it returns something truthy; fails after `timeout` s.

    Failures inside `probe` count as "not yet" (the page may be re-rendering)
    until the deadline, when the last one is reported.
    """
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        try:
            value = probe()
            if value:
                return value
            last_error = None
        except Failure as e:
            last_error = e
        if time.monotonic() >= deadline:
            detail = f" (last error: {last_error})" if last_error else ""
            if describe is not None:
                try:
                    detail += f"; {describe()}"
                except (OSError, Failure) as e:
                    detail += f"; (could not describe the page: {e})"
            raise Failure(f"after {timeout:.0f} s, still not {what}{detail}")
        time.sleep(POLL_INTERVAL_S)


def app_env(scratch: Path) -> tuple[str, dict[str, str]]:
    """WebKitWebDriver's path and the environment to start the app in.

    WebDriver automation is on (without it Tauri does not enable WebKit
    automation and creating a session hangs), compositing stays on (the app
    paints without it on a machine without a GPU, and WebKitWebDriver's
    screenshot then never answers), and every file the app or WebKit writes
    goes under `scratch`, never into the real user's dirs.
    """
    driver_bin = shutil.which("WebKitWebDriver")
    if driver_bin is None:
        raise Failure("WebKitWebDriver not found; install the webkit2gtk-driver package")
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        raise Failure('no display; run under xvfb-run -a -s "-screen 0 1280x800x24"')
    env = dict(os.environ)
    env["TAURI_WEBVIEW_AUTOMATION"] = "true"
    env["WEFT_GPU_COMPOSITING"] = "1"
    for var in ("WEFT_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        d = scratch / var.lower()
        d.mkdir()
        env[var] = str(d)
    return driver_bin, env


def report(name: str, check: Callable[[Path], None]) -> int:
    """Runs `check` in a scratch dir of its own (removed after) and prints
    the test's result as the other suites do; the process's exit status."""
    started = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix=f"weft-{name.replace(' ', '-')}-"))
    try:
        check(scratch)
    except (Failure, OSError, subprocess.SubprocessError) as e:
        print(f"{name}: FAILED: {e}", file=sys.stderr)
        print("0 passed, 1 failed")
        return 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"{name}: ok in {time.monotonic() - started:.1f} s")
    print("1 passed, 0 failed")
    return 0


class AppDriver:
    """WebKitWebDriver for one test, as a context manager.

    Starts the driver (in its own process group, so cleanup reaches the apps
    it starts) and waits for it; `start` opens the app in a new session,
    closing the previous one (the driver takes one at a time, and counts a
    session until it is deleted, even once its app has quit). On the way out
    it closes the session, stops the driver's process group, and adds the
    tail of the driver's log to a failure.
    """

    def __init__(self, driver_bin: str, env: dict[str, str], scratch: Path) -> None:
        self.log = scratch / "webkitwebdriver.log"
        self.proc, self.driver = start_driver(driver_bin, env, self.log)
        self.session: Session | None = None

    def __enter__(self) -> AppDriver:
        try:
            wait_for_driver(self.driver, self.proc)
        except BaseException:
            stop_process_group(self.proc)
            raise
        return self

    def start(self, binary: Path, args: list[str] | None = None) -> Session:
        if self.session is not None:
            self.session.close()
        self.session = Session(self.driver, binary, args)
        return self.session

    def __exit__(self, kind, error, traceback) -> None:
        if self.session is not None:
            self.session.close()  # the process group is stopped next either way
        stop_process_group(self.proc)
        if isinstance(error, Failure):
            tail = self.log.read_text(errors="replace")[-2000:].strip()
            if tail:
                raise Failure(f"{error}\n--- WebKitWebDriver log (tail) ---\n{tail}") from error
