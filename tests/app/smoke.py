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

import os
import sys
import time
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from driver import (  # noqa: E402  (the helper lives beside this file)
    Failure as SmokeFailure,
    AppDriver,
    Session,
    app_env,
    report,
    wait_until,
)

REPO = Path(__file__).resolve().parents[2]

# The fixture version of the UI's browser test host (ui/src/api/testHost.ts).
# Seeing it in the real app would mean the UI never talked to Tauri.
TEST_HOST_VERSION = "0.0.0-test"

PAGE_TIMEOUT_S = 20  # the page showing name and version


# Calls `app_version` the way the UI does and notes whether Tauri sent it as
# a fetch to ipc://localhost (answered there) rather than by postMessage.
CUSTOM_PROTOCOL_PROBE = """
const fetched = [];
const realFetch = window.fetch;
window.fetch = (url, init) => {
  const r = realFetch(url, init);
  if (String(url).startsWith('ipc:')) fetched.push(r.then((res) => res.ok, () => false));
  return r;
};
return window.__TAURI_INTERNALS__.invoke('app_version').then(
  async (answer) => {
    window.fetch = realFetch;
    const oks = await Promise.all(fetched);
    return { answer, fetched: oks.length > 0 && oks.every(Boolean) };
  },
  (e) => { window.fetch = realFetch; return { error: String(e) }; },
);
"""


def expected_version() -> str:
    """The version the app must show: weft-desktop inherits the workspace's."""
    with open(REPO / "Cargo.toml", "rb") as f:
        manifest = tomllib.load(f)
    try:
        return manifest["workspace"]["package"]["version"]
    except KeyError as e:
        raise SmokeFailure(f"{REPO / 'Cargo.toml'} has no [workspace.package] version") from e


def run(binary: Path, screenshot: Path | None, scratch: Path) -> None:
    version = expected_version()
    driver_bin, env = app_env(scratch)

    with AppDriver(driver_bin, env, scratch) as app:
        session = app.start(binary)

        text = wait_until(
            f"showing 'Weft' and {version!r}",
            lambda: (lambda t: t if "Weft" in t and version in t else None)(session.text()),
            PAGE_TIMEOUT_S,
            describe=lambda: f"its text is {session.text()!r}",
        )
        if TEST_HOST_VERSION in text:
            raise SmokeFailure("the page shows the browser test host's version, not the app's")

        # Commands must go over Tauri's custom protocol (a fetch to ipc://):
        # when the CSP blocks it, Tauri silently falls back to postMessage,
        # which made opening a large run about 100 ms slower
        # (docs/performance.md).
        ipc = session.execute(CUSTOM_PROTOCOL_PROBE)
        if not (isinstance(ipc, dict) and ipc.get("answer") == version and ipc.get("fetched")):
            raise SmokeFailure(
                "commands do not use Tauri's ipc:// custom protocol (check connect-src in "
                f"src-tauri/tauri.conf.json); the probe saw {ipc!r}"
            )

        if screenshot is not None:
            # The text is in the DOM; give the compositor a moment to paint it.
            time.sleep(0.5)
            session.screenshot(screenshot)
            print(f"screenshot: {screenshot}")


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

    return report("app smoke", lambda scratch: run(binary, screenshot, scratch))

if __name__ == "__main__":
    sys.exit(main(sys.argv))
