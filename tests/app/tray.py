#!/usr/bin/env python3
"""Real-app test of the tray and the app settings.

Starts weftd on a scratch home with one run waiting at a human gate, then the
built `weft-desktop` under WebKitWebDriver, and checks:

- the tray's real menu (read back from its menu items by the `tray_state`
  command, not from the model that made them) names the waiting gate and its
  tooltip counts it;
- "Pause notifications" through the app pauses weftd's notifications, and the
  tray's check item follows;
- turning "Start at login" on in the Settings menu writes $XDG_CONFIG_HOME/autostart/weft.desktop
  (starting the app with --hidden) and turning it off removes it; both
  settings land in $WEFT_HOME/app.json.

Under Xvfb no StatusNotifier host runs: libayatana-appindicator still makes
its icon and menu (it falls back to an unregistered indicator), so the menu
read back is the real one; `shown` says whether an icon was made at all.

Usage (needs a display and a session bus):

    xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- \
        python3 tests/app/tray.py target/debug/weft-desktop [SCREENSHOT.png]

weft and weftd are taken from beside the app. Prints "1 passed, 0 failed" and
exits 0 on success. Python standard library only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from driver import (  # noqa: E402  (the helper lives beside this file)
    Failure,
    Session,
    start_driver,
    stop_process_group,
    wait_for_driver,
    wait_until,
)

STEP_TIMEOUT_S = 30  # each condition waited for
COMMAND_TIMEOUT_S = 60  # each weft command

GATE = """digraph TrayGate { start [shape=Mdiamond]; exit [shape=Msquare]
  approve [shape=hexagon, label="Ship release 2.0?"]
  start -> approve
  approve -> exit [label="[Y] Yes"] }
"""

INVOKE = """
const [command, args] = arguments;
return window.__TAURI_INTERNALS__.invoke(command, args).then(
  (value) => ({ value }),
  (error) => ({ error: JSON.stringify(error) }),
);
"""


def invoke(session: Session, command: str, args: dict | None = None):
    """Calls an app command as the UI does; raises on a rejection."""
    answer = session.execute(INVOKE, command, args or {})
    if not isinstance(answer, dict) or "error" in answer:
        raise Failure(f"{command} failed: {answer!r}")
    return answer.get("value")


def weft(bin_dir: Path, env: dict[str, str], cwd: Path, *args: str) -> str:
    done = subprocess.run(
        [str(bin_dir / "weft"), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
    )
    if done.returncode != 0:
        raise Failure(f"weft {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return done.stdout


def run(binary: Path, scratch: Path, screenshot: Path | None) -> None:
    driver_bin = shutil.which("WebKitWebDriver")
    if driver_bin is None:
        raise Failure("WebKitWebDriver not found; install the webkit2gtk-driver package")
    if not os.environ.get("DISPLAY"):
        raise Failure('no display; run under xvfb-run -a -s "-screen 0 1280x800x24"')
    bin_dir = binary.parent
    env = dict(os.environ)
    env["TAURI_WEBVIEW_AUTOMATION"] = "true"
    env["WEFT_GPU_COMPOSITING"] = "1"
    for var in ("WEFT_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        d = scratch / var.lower()
        d.mkdir()
        env[var] = str(d)
    home = Path(env["WEFT_HOME"])
    autostart = Path(env["XDG_CONFIG_HOME"]) / "autostart" / "weft.desktop"

    # A run waiting at its gate (weft starts weftd for it).
    work = scratch / "work"
    work.mkdir()
    (work / "gate.fabro").write_text(GATE)
    weft(bin_dir, env, work, "run", str(work / "gate.fabro"), "--detach")
    wait_until(
        "the run waiting at its gate",
        lambda: "Ship release" in weft(bin_dir, env, work, "questions", "--json") or None,
        STEP_TIMEOUT_S,
    )

    driver_log = scratch / "webkitwebdriver.log"
    proc, driver = start_driver(driver_bin, env, driver_log)
    session = None
    try:
        wait_for_driver(driver, proc)
        session = Session(driver, binary)

        def tray_naming_the_gate():
            state = invoke(session, "tray_state")
            items = state.get("items", [])
            return state if "TrayGate: Ship release 2.0?" in items else None

        state = wait_until(
            "the tray's menu naming the waiting gate",
            tray_naming_the_gate,
            STEP_TIMEOUT_S,
            describe=lambda: f"tray_state is {invoke(session, 'tray_state')!r}",
        )
        if not state.get("shown"):
            raise Failure(f"no tray icon was made: {state!r}")
        if not state["tooltip"].startswith("Weft — 1 gate waiting"):
            raise Failure(f"the tooltip does not count the gate: {state['tooltip']!r}")
        for label in ("Open Weft", "Pause notifications", "Quit"):
            if label not in state["items"]:
                raise Failure(f"the tray menu lacks {label!r}: {state['items']!r}")
        if state.get("paused"):
            raise Failure(f"notifications start paused: {state!r}")

        # Pausing through the app pauses weftd, and the tray's check follows.
        paused = invoke(session, "notifications_pause", {"paused": True})
        if paused != {"paused": True}:
            raise Failure(f"notifications_pause answered {paused!r}")
        said = json.loads(weft(bin_dir, env, work, "notifications", "status", "--json"))
        if said != {"paused": True}:
            raise Failure(f"weftd does not say it is paused: {said!r}")
        wait_until(
            "the tray's check item showing the pause",
            lambda: invoke(session, "tray_state").get("paused") or None,
            STEP_TIMEOUT_S,
        )
        invoke(session, "notifications_pause", {"paused": False})

        # Start at login, toggled in the Settings menu: the autostart entry
        # appears and goes.
        settings = invoke(session, "app_settings")
        if settings != {"keep_in_tray": True, "start_at_login": False}:
            raise Failure(f"the defaults are not the documented ones: {settings!r}")
        session.click(session.find_by_text("summary", "Settings"))
        start_at_login = session.find('input[name="start_at_login"]')
        wait_until("the Settings menu to load", lambda: session.enabled(start_at_login) or None, STEP_TIMEOUT_S)
        session.click(start_at_login)
        wait_until(f"{autostart} to be written", lambda: autostart.is_file() or None, STEP_TIMEOUT_S)
        entry = autostart.read_text()
        if f"{binary}" not in entry or "--hidden" not in entry:
            raise Failure(f"the autostart entry does not start this app hidden:\n{entry}")
        saved = json.loads((home / "app.json").read_text())
        if saved != {"keep_in_tray": True, "start_at_login": True}:
            raise Failure(f"app.json holds {saved!r}")
        if invoke(session, "app_settings") != saved:
            raise Failure("app_settings does not read back what was saved")
        checked = 'return document.querySelector(arguments[0]).checked;'
        wait_until(
            "the Settings menu showing start at login on",
            lambda: session.execute(checked, 'input[name="start_at_login"]') or None,
            STEP_TIMEOUT_S,
            describe=lambda: f"the menu reads {session.text_of('.settings-panel')!r}",
        )
        pause_box = session.find('input[name="pause_notifications"]')
        if not session.enabled(pause_box):
            raise Failure(f"Pause notifications is disabled with weftd running: {session.text_of('.settings-panel')!r}")
        if screenshot is not None:
            # The DOM is ready; give the compositor a moment to paint it.
            time.sleep(0.5)
            session.screenshot(screenshot)
        session.click(start_at_login)
        wait_until(f"{autostart} to be removed", lambda: (not autostart.exists()) or None, STEP_TIMEOUT_S)
    except Failure as e:
        log_tail = driver_log.read_text(errors="replace")[-2000:].strip()
        if log_tail:
            raise Failure(f"{e}\n--- WebKitWebDriver log (tail) ---\n{log_tail}") from e
        raise
    finally:
        if session is not None:
            session.close()
        stop_process_group(proc)
        subprocess.run(
            [str(bin_dir / "weft"), "daemon", "stop"],
            env=env,
            capture_output=True,
            timeout=COMMAND_TIMEOUT_S,
        )


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(f"usage: {argv[0]} PATH/TO/weft-desktop [SCREENSHOT.png]", file=sys.stderr)
        return 2
    binary = Path(argv[1]).resolve()
    screenshot = Path(argv[2]).resolve() if len(argv) == 3 else None
    for name in ("weft-desktop", "weft", "weftd"):
        if not os.access(binary.parent / name, os.X_OK):
            print(f"app tray: FAILED: no {name} in {binary.parent}; build with "
                  "`cargo build -p weft --bins -p weft-desktop`", file=sys.stderr)
            print("0 passed, 1 failed")
            return 1
    started = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="weft-app-tray-"))
    try:
        run(binary, scratch, screenshot)
    except (Failure, OSError, subprocess.SubprocessError) as e:
        print(f"app tray: FAILED: {e}", file=sys.stderr)
        print("0 passed, 1 failed")
        return 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"app tray: ok in {time.monotonic() - started:.1f} s")
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
