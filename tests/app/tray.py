#!/usr/bin/env python3
"""Real-app test of the tray and the app settings.

Starts weftd on a scratch home with one run waiting at a human gate, then the
built `weft-desktop` under WebKitWebDriver, and checks:

- the tray's real menu (read back from its menu items by the `tray_state`
  command, not from the model that made them) names the waiting gate and its
  tooltip counts it;
- "Pause notifications" through the app pauses weftd's notifications, and the
  tray's check item follows;
- with a tray host (the session bus name org.kde.StatusNotifierWatcher
  owned), closing the window while the run waits hides it (the app keeps
  running), a second start of the app shows it again, and once the run has
  ended closing quits the app;
- without a tray host, closing while a run waits quits: the window never
  hides into a tray nobody sees;
- with "Keep running in the tray" off, closing quits even with a host;
- turning "Start at login" on in the Settings menu writes the home's entry
  $XDG_CONFIG_HOME/autostart/weft-HASH.desktop (starting the app with
  --hidden on this home) and turning it off removes it; both settings land in
  $WEFT_HOME/app.json.

Under Xvfb no StatusNotifier host runs: libayatana-appindicator still makes
its icon and menu (it falls back to an unregistered indicator), so the menu
read back is the real one; `shown` says whether an icon was made at all. The
test stands in for a host by owning the watcher's bus name with a small
python3-dbus process (Debian's python3-dbus and python3-gi; the Makefile's
deps-apt installs them) that answers the library's calls: the app only asks
whether the name has an owner.

Usage (needs a display and a session bus):

    xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- \
        python3 tests/app/tray.py target/debug/weft-desktop [SCREENSHOT.png]

weft and weftd are taken from beside the app. Prints "1 passed, 0 failed" and
exits 0 on success. Python standard library, and python3-dbus and
python3-gi for the stand-in host.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from driver import (  # noqa: E402  (the helper lives beside this file)
    Failure,
    AppDriver,
    Session,
    app_env,
    report,
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


def app_window() -> str | None:
    """The X id of the app's window (titled "Weft", at its start size), if any."""
    tree = subprocess.run(
        ["xwininfo", "-root", "-tree"], capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S
    ).stdout
    found = re.search(r'(0x[0-9a-f]+) "Weft": .* 1100x720', tree)
    return found.group(1) if found else None


def map_state(window: str) -> str:
    """`IsViewable`, `IsUnMapped`, ... as xwininfo says, or `gone`."""
    info = subprocess.run(
        ["xwininfo", "-id", window], capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S
    ).stdout
    found = re.search(r"Map State: (\w+)", info)
    return found.group(1) if found else "gone"


def ask_to_close(window: str) -> None:
    """Sends the window WM_DELETE_WINDOW, as a window manager's close button does."""

    class ClientMessage(ctypes.Structure):
        _fields_ = [
            ("type", ctypes.c_int),
            ("serial", ctypes.c_ulong),
            ("send_event", ctypes.c_int),
            ("display", ctypes.c_void_p),
            ("window", ctypes.c_ulong),
            ("message_type", ctypes.c_ulong),
            ("format", ctypes.c_int),
            ("data", ctypes.c_long * 5),
        ]

    class XEvent(ctypes.Union):
        _fields_ = [("xclient", ClientMessage), ("pad", ctypes.c_long * 24)]

    x11 = ctypes.CDLL("libX11.so.6")
    x11.XOpenDisplay.restype = ctypes.c_void_p
    x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
    x11.XInternAtom.restype = ctypes.c_ulong
    x11.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    x11.XSendEvent.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_long, ctypes.c_void_p]
    x11.XFlush.argtypes = [ctypes.c_void_p]
    x11.XCloseDisplay.argtypes = [ctypes.c_void_p]
    display = x11.XOpenDisplay(None)
    if not display:
        raise Failure("cannot open the X display to close the window")
    try:
        event = XEvent()
        event.xclient.type = 33  # ClientMessage
        event.xclient.window = int(window, 16)
        event.xclient.message_type = x11.XInternAtom(display, b"WM_PROTOCOLS", 0)
        event.xclient.format = 32
        event.xclient.data[0] = x11.XInternAtom(display, b"WM_DELETE_WINDOW", 0)
        x11.XSendEvent(display, int(window, 16), 0, 0, ctypes.byref(event))
        x11.XFlush(display)
    finally:
        x11.XCloseDisplay(display)


WATCHER = "org.kde.StatusNotifierWatcher"

# Owns the watcher's name until its stdin closes, and answers the calls
# libayatana-appindicator makes to a watcher (registering its item, reading
# whether a host is registered): a name owner that never answers would have
# the library's calls wait for their D-Bus timeout on the app's main thread.
# Says "owned" once the bus granted the name.
HOLD_NAME = """
import sys, threading
import dbus, dbus.service, dbus.mainloop.glib
from gi.repository import GLib

IFACE = "org.kde.StatusNotifierWatcher"
PROPS = {
    "IsStatusNotifierHostRegistered": dbus.Boolean(True),
    "ProtocolVersion": dbus.Int32(0),
    "RegisteredStatusNotifierItems": dbus.Array([], signature="s"),
}

class Watcher(dbus.service.Object):
    @dbus.service.method(IFACE, in_signature="s")
    def RegisterStatusNotifierItem(self, service):
        pass

    @dbus.service.method(IFACE, in_signature="s")
    def RegisterStatusNotifierHost(self, service):
        pass

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="ss", out_signature="v")
    def Get(self, iface, prop):
        return PROPS[prop]

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="s", out_signature="a{sv}")
    def GetAll(self, iface):
        return PROPS

dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.SessionBus()
Watcher(bus, "/StatusNotifierWatcher")
if bus.request_name(sys.argv[1], dbus.bus.NAME_FLAG_DO_NOT_QUEUE) != dbus.bus.REQUEST_NAME_REPLY_PRIMARY_OWNER:
    sys.exit("cannot own " + sys.argv[1])
print("owned", flush=True)
loop = GLib.MainLoop()
def until_stdin_closes():
    sys.stdin.read()
    GLib.idle_add(loop.quit)
threading.Thread(target=until_stdin_closes, daemon=True).start()
loop.run()
"""


def python_with_dbus() -> str:
    """An interpreter that imports dbus and gi: this one, else Debian's."""
    for python in (sys.executable, "/usr/bin/python3"):
        found = subprocess.run(
            [python, "-c", "import dbus.mainloop.glib, gi"], capture_output=True, timeout=COMMAND_TIMEOUT_S
        )
        if found.returncode == 0:
            return python
    raise Failure("no python3 with the dbus module; install python3-dbus (make deps-apt)")


class TrayHost:
    """Stands in for a StatusNotifier host while in its `with` block."""

    def __init__(self, env: dict[str, str]):
        self.env = env
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> "TrayHost":
        self.proc = subprocess.Popen(
            [python_with_dbus(), "-c", HOLD_NAME, WATCHER],
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        said = self.proc.stdout.readline() if self.proc.stdout else ""
        if said.strip() != "owned":
            err = self.proc.stderr.read() if self.proc.stderr else ""
            raise Failure(f"the stand-in tray host did not start: {said!r} {err!r}")
        return self

    def __exit__(self, *_exc) -> None:
        if self.proc is not None:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout=COMMAND_TIMEOUT_S)


def entry_name(home: Path) -> str:
    """The autostart entry's name for a home that is not the default one:
    FNV-1a of its absolute path, 12 hex digits (src-tauri/src/autostart.rs)."""
    h = 0xCBF29CE484222325
    for byte in os.fsencode(str(home.resolve())):
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"weft-{h & 0xFFFFFFFFFFFF:012x}.desktop"


def apps_running(binary: Path, home: Path) -> list[int]:
    """The pids of `binary` running on `home`."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if Path(os.readlink(proc / "exe")) != binary:
                continue
            if f"WEFT_HOME={home}".encode() in (proc / "environ").read_bytes().split(b"\0"):
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


def run(binary: Path, scratch: Path, screenshot: Path | None) -> None:
    driver_bin, env = app_env(scratch)
    bin_dir = binary.parent
    home = Path(env["WEFT_HOME"])
    autostart = Path(env["XDG_CONFIG_HOME"]) / "autostart" / entry_name(home)

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

    try:
        with AppDriver(driver_bin, env, scratch) as app, TrayHost(env) as host:
            session = app.start(binary)

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
            if not state.get("host"):
                raise Failure(f"the app does not see the stand-in tray host: {state!r}")
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
            if f"{binary}" not in entry or "--hidden" not in entry or f"WEFT_HOME={home.resolve()}" not in entry:
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

            # Closing while the run waits at its gate: hidden, not quit.
            window = wait_until("the app's window", app_window, STEP_TIMEOUT_S)
            ask_to_close(window)
            wait_until(
                "the window hidden to the tray",
                lambda: map_state(window) == "IsUnMapped" or None,
                STEP_TIMEOUT_S,
                describe=lambda: f"its map state is {map_state(window)}",
            )
            if not invoke(session, "tray_state").get("shown"):
                raise Failure("the app lost its tray")
            # A second start hands over to this app, which shows its window.
            subprocess.run([str(binary)], env=env, timeout=COMMAND_TIMEOUT_S, capture_output=True)
            wait_until(
                "the window shown again by a second start",
                lambda: map_state(window) == "IsViewable" or None,
                STEP_TIMEOUT_S,
                describe=lambda: f"its map state is {map_state(window)}",
            )
            # Once no run is active, closing quits.
            weft(bin_dir, env, work, "answer", "last", "--key", "Y")
            wait_until(
                "the run to succeed",
                lambda: '"succeeded"' in weft(bin_dir, env, work, "ps", "--json") or None,
                STEP_TIMEOUT_S,
            )
            if not apps_running(binary, home):
                raise Failure(f"cannot find the running {binary} in /proc")
            ask_to_close(window)
            wait_until(
                "the app to quit",
                lambda: not apps_running(binary, home) or None,
                STEP_TIMEOUT_S,
                describe=lambda: f"weft-desktop still runs as {apps_running(binary, home)}; "
                f"its window's map state is {map_state(window)}; tray_state is {invoke(session, 'tray_state')!r}",
            )
            # Without a tray host, closing quits even while a run waits at
            # its gate: the window does not hide into a tray nobody sees.
            weft(bin_dir, env, work, "run", str(work / "gate.fabro"), "--detach")
            wait_until(
                "the second run waiting at its gate",
                lambda: "Ship release" in weft(bin_dir, env, work, "questions", "--json") or None,
                STEP_TIMEOUT_S,
            )
            host.__exit__()
            session = app.start(binary)
            state = wait_until(
                "the tray naming the second run's gate",
                tray_naming_the_gate,
                STEP_TIMEOUT_S,
                describe=lambda: f"tray_state is {invoke(session, 'tray_state')!r}",
            )
            if state.get("host"):
                raise Failure(f"the app sees a tray host where none runs: {state!r}")
            window = wait_until("the app's window", app_window, STEP_TIMEOUT_S)
            ask_to_close(window)
            wait_until(
                "the app to quit without a tray host",
                lambda: not apps_running(binary, home) or None,
                STEP_TIMEOUT_S,
                describe=lambda: f"weft-desktop still runs as {apps_running(binary, home)} (map state {map_state(window)})",
            )
            host.__enter__()
            # With "Keep running in the tray" off, closing quits even while a
            # run waits at its gate and a host shows the tray.
            (home / "app.json").write_text(json.dumps({"keep_in_tray": False, "start_at_login": False}))
            session = app.start(binary)
            wait_until(
                "the tray naming the second run's gate",
                tray_naming_the_gate,
                STEP_TIMEOUT_S,
                describe=lambda: f"tray_state is {invoke(session, 'tray_state')!r}",
            )
            window = wait_until("the app's window", app_window, STEP_TIMEOUT_S)
            ask_to_close(window)
            wait_until(
                "the app to quit with the setting off",
                lambda: not apps_running(binary, home) or None,
                STEP_TIMEOUT_S,
                describe=lambda: f"weft-desktop still runs as {apps_running(binary, home)}",
            )
    finally:
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
    return report("app tray", lambda scratch: run(binary, scratch, screenshot))

if __name__ == "__main__":
    sys.exit(main(sys.argv))
