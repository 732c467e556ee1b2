#!/usr/bin/env python3
"""Real-window smoke test for the Weft desktop app.

Starts the built `weft-desktop` binary in a real WebKitGTK window, driven by
WebKitWebDriver (Debian package webkit2gtk-driver), and checks that the page
shows "Weft" and the app version -- the version string comes from the Rust
`app_version` command, so seeing it proves the UI reached the backend through
Tauri's IPC, not the browser test host.

Usage (needs a display and a session bus; run it like this):

    xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- \
        python3 tests/app/smoke.py target/debug/weft-desktop [SCREENSHOT.png]

Prints "1 passed, 0 failed" and exits 0 on success; otherwise says what went
wrong, prints "0 passed, 1 failed" and exits 1. Python standard library only.
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
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# The fixture version of the UI's browser test host (ui/src/api/testHost.ts).
# Seeing it in the real app would mean the UI never talked to Tauri.
TEST_HOST_VERSION = "0.0.0-test"

HTTP_TIMEOUT_S = 10  # any single WebDriver call
DRIVER_START_TIMEOUT_S = 10  # WebKitWebDriver answering /status
SESSION_TIMEOUT_S = 30  # new session = launch the app and attach to it
PAGE_TIMEOUT_S = 20  # the page showing name and version
POLL_INTERVAL_S = 0.2


class SmokeFailure(Exception):
    """The app did not behave; the message says how."""


def expected_version() -> str:
    """The version the app must show: weft-desktop inherits the workspace's."""
    with open(REPO / "Cargo.toml", "rb") as f:
        manifest = tomllib.load(f)
    try:
        return manifest["workspace"]["package"]["version"]
    except KeyError as e:
        raise SmokeFailure(f"{REPO / 'Cargo.toml'} has no [workspace.package] version") from e


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
            raise SmokeFailure(f"{method} {path} failed with HTTP {e.code}: {detail}") from e
        except TimeoutError as e:
            raise SmokeFailure(f"{method} {path}: no answer within {timeout} s") from e
        except urllib.error.URLError as e:
            raise SmokeFailure(f"{method} {path}: {e.reason}") from e
        return payload.get("value")


def wait_for_driver(driver: WebDriver, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + DRIVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SmokeFailure(f"WebKitWebDriver exited early with status {proc.returncode}")
        try:
            status = driver.call("GET", "/status", timeout=2)
            if isinstance(status, dict) and status.get("ready", True):
                return
        except (OSError, SmokeFailure):
            pass
        time.sleep(POLL_INTERVAL_S)
    raise SmokeFailure(f"WebKitWebDriver did not answer within {DRIVER_START_TIMEOUT_S} s")


def wait_for_text(driver: WebDriver, session: str, wanted: list[str]) -> str:
    """Polls the page's visible text until it contains every string in `wanted`."""
    deadline = time.monotonic() + PAGE_TIMEOUT_S
    text = ""
    while time.monotonic() < deadline:
        text = driver.call(
            "POST",
            f"/session/{session}/execute/sync",
            {"script": "return document.body ? document.body.innerText : '';", "args": []},
        ) or ""
        if all(w in text for w in wanted):
            return text
        time.sleep(POLL_INTERVAL_S)
    raise SmokeFailure(
        f"after {PAGE_TIMEOUT_S} s the page still lacks {wanted!r}; its text is {text!r}"
    )


def stop_process_group(proc: subprocess.Popen) -> None:
    """Ends the driver and the app it launched (they share a process group)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
        except ProcessLookupError:
            pass
    # The app may outlive the driver; it is still in the group the driver led.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run(binary: Path, screenshot: Path | None, scratch: Path) -> None:
    version = expected_version()
    driver_bin = shutil.which("WebKitWebDriver")
    if driver_bin is None:
        raise SmokeFailure("WebKitWebDriver not found; install the webkit2gtk-driver package")
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        raise SmokeFailure('no display; run under xvfb-run -a -s "-screen 0 1280x800x24"')

    env = dict(os.environ)
    # Without this Tauri does not enable WebKit automation, and creating a
    # session hangs forever.
    env["TAURI_WEBVIEW_AUTOMATION"] = "true"
    # Keep every file the app or WebKit writes out of the real user's dirs.
    for var in ("WEFT_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        d = scratch / var.lower()
        d.mkdir()
        env[var] = str(d)

    port = free_port()
    driver_log = scratch / "webkitwebdriver.log"
    with open(driver_log, "wb") as log:
        proc = subprocess.Popen(
            [driver_bin, f"--port={port}"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so cleanup reaches the app
        )
    driver = WebDriver(port)
    session = None
    try:
        wait_for_driver(driver, proc)
        caps = {
            "capabilities": {
                "alwaysMatch": {
                    "webkitgtk:browserOptions": {"binary": str(binary), "args": []}
                }
            }
        }
        try:
            created = driver.call("POST", "/session", caps, timeout=SESSION_TIMEOUT_S)
        except SmokeFailure as e:
            raise SmokeFailure(
                f"could not start {binary} under WebDriver ({e}); it must be a Tauri app "
                "that honours TAURI_WEBVIEW_AUTOMATION=true"
            ) from e
        session = created["sessionId"]

        text = wait_for_text(driver, session, ["Weft", version])
        if TEST_HOST_VERSION in text:
            raise SmokeFailure("the page shows the browser test host's version, not the app's")

        if screenshot is not None:
            # The text is in the DOM; give the compositor a moment to paint it.
            time.sleep(0.5)
            png = driver.call("GET", f"/session/{session}/screenshot")
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            screenshot.write_bytes(base64.b64decode(png))
            print(f"screenshot: {screenshot}")
    except SmokeFailure as e:
        log_tail = driver_log.read_text(errors="replace")[-2000:].strip()
        if log_tail:
            raise SmokeFailure(f"{e}\n--- WebKitWebDriver log (tail) ---\n{log_tail}") from e
        raise
    finally:
        if session is not None:
            try:
                driver.call("DELETE", f"/session/{session}")
            except (OSError, SmokeFailure):
                pass  # the process group is killed below either way
        stop_process_group(proc)


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(f"usage: {argv[0]} PATH/TO/weft-desktop [SCREENSHOT.png]", file=sys.stderr)
        return 2
    binary = Path(argv[1]).resolve()
    screenshot = Path(argv[2]).resolve() if len(argv) == 3 else None
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        print(f"app smoke: FAILED: {binary} is not an executable; build it with "
              "`cargo build -p weft-desktop`", file=sys.stderr)
        print("0 passed, 1 failed")
        return 1

    started = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="weft-app-smoke-"))
    try:
        run(binary, screenshot, scratch)
    except (SmokeFailure, OSError) as e:
        print(f"app smoke: FAILED: {e}", file=sys.stderr)
        print("0 passed, 1 failed")
        return 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"app smoke: ok in {time.monotonic() - started:.1f} s")
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
