#!/usr/bin/env python3
"""Checks Weft's Debian package as a user would meet it once installed.

The package is unpacked into a fresh root with `dpkg-deb -x` (never installed
into this system), then:

- its metadata: name, the workspace's version, this machine's architecture,
  the libraries the app needs among its dependencies, and `apt-get
  --simulate` resolving them, as `apt install ./weft_*.deb` would;
- its contents: every path the package must ship, nothing outside /usr,
  owned by root with sane modes;
- the unpacked files: `weft --version` and `weftd --version`, a manual page
  for every command, completion scripts each shell can read, the desktop
  entry (`desktop-file-validate`; it hands weft:// links to the app: `%u`
  and the scheme handler) and the icons it names, at their sizes;
- the systemd user unit: `systemd-analyze verify`, then its ExecStart
  command line run as the user manager would (HOME set, no WEFT_HOME) until
  `weft daemon status` reaches that very process, and stopped with SIGTERM
  as systemd stops it, which must end it with status 0;
- the unpacked app, started under WebDriver like tests/app/smoke.py does,
  showing its name and version fetched from its backend.

Usage (the app check needs a display and a session bus):

    xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- \\
        python3 tests/app/package.py target/weft_0.1.0_amd64.deb

Prints "1 passed, 0 failed" and exits 0 on success; otherwise says what went
wrong, prints "0 passed, 1 failed" and exits 1. Python standard library only.
"""

from __future__ import annotations

import configparser
import gzip
import json
import os
import re
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import smoke  # noqa: E402  (the app check, shared with the smoke test)
from driver import Failure  # noqa: E402

COMMAND_TIMEOUT_S = 60  # any one tool the test runs
DAEMON_START_TIMEOUT_S = 20  # the unit's weftd answering on its socket
DAEMON_STOP_TIMEOUT_S = 30  # ... and exiting after SIGTERM

DESKTOP_ENTRY = "usr/share/applications/dev.weft.desktop.desktop"
UNIT = "usr/lib/systemd/user/weftd.service"
ICON_SIZES = (32, 128, 256, 512)

# Every path the package must ship (the manual pages of weft's commands are
# checked against `weft --help` on top of these).
EXPECTED_PATHS = [
    "usr/bin/weft",
    "usr/bin/weftd",
    "usr/bin/weft-desktop",
    DESKTOP_ENTRY,
    *(f"usr/share/icons/hicolor/{n}x{n}/apps/weft.png" for n in ICON_SIZES),
    "usr/share/icons/hicolor/scalable/apps/weft.svg",
    "usr/share/man/man1/weft.1.gz",
    "usr/share/man/man1/weftd.1.gz",
    "usr/share/man/man1/weft-desktop.1.gz",
    "usr/share/bash-completion/completions/weft",
    "usr/share/zsh/vendor-completions/_weft",
    "usr/share/fish/vendor_completions.d/weft.fish",
    UNIT,
    "usr/share/doc/weft/copyright",
]
EXECUTABLES = {"usr/bin/weft", "usr/bin/weftd", "usr/bin/weft-desktop"}

# Libraries without which the app cannot start: they must be dependencies.
# libayatana-appindicator3-1: the tray's, loaded at run time (src-tauri/src/tray.rs).
REQUIRED_DEPENDS = ("libc6", "libgtk-3-0", "libwebkit2gtk-4.1-0", "libayatana-appindicator3-1")


def run(argv: list[str], env: dict[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess:
    try:
        done = subprocess.run(
            argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S
        )
    except subprocess.TimeoutExpired as e:
        raise Failure(f"`{shlex.join(argv)}` did not finish within {COMMAND_TIMEOUT_S} s") from e
    if check and done.returncode != 0:
        raise Failure(f"`{shlex.join(argv)}` exited {done.returncode}: {(done.stderr or done.stdout).strip()}")
    return done


def check_metadata(deb: Path, version: str) -> None:
    fields = {}
    for line in run(["dpkg-deb", "-f", str(deb)]).stdout.splitlines():
        if line and not line[0].isspace() and ":" in line:
            key, value = line.split(":", 1)
            fields[key] = value.strip()
    arch = run(["dpkg", "--print-architecture"]).stdout.strip()
    want = {"Package": "weft", "Version": version, "Architecture": arch}
    for key, value in want.items():
        if fields.get(key) != value:
            raise Failure(f"the package's {key} is {fields.get(key)!r}, expected {value!r}")
    for key in ("Maintainer", "Description", "Depends", "Installed-Size"):
        if not fields.get(key):
            raise Failure(f"the package has no {key} field")
    if not fields["Installed-Size"].isdigit():
        raise Failure(f"Installed-Size is {fields['Installed-Size']!r}, not a number of KiB")
    names = {re.split(r"[\s(]", alt.strip())[0] for dep in fields["Depends"].split(",") for alt in dep.split("|")}
    missing = [name for name in REQUIRED_DEPENDS if name not in names]
    if missing:
        raise Failure(f"the package does not depend on {', '.join(missing)}: Depends: {fields['Depends']}")

    # What `apt install ./weft_*.deb` would do, without doing it: every
    # dependency must resolve from this machine's packages and sources.
    if shutil.which("apt-get"):
        simulated = run(["apt-get", "--simulate", "-q", "install", str(deb)], check=False)
        if simulated.returncode != 0 or "Inst weft " not in simulated.stdout:
            raise Failure(
                "apt-get --simulate install could not install the package:\n"
                + (simulated.stdout + simulated.stderr).strip()[-2000:]
            )


def check_contents(deb: Path) -> None:
    listed: dict[str, tuple[str, str]] = {}
    for line in run(["dpkg-deb", "--contents", str(deb)]).stdout.splitlines():
        # drwxr-xr-x root/root         0 2026-12-04 19:49 ./usr/bin/
        parts = line.split(None, 5)
        if len(parts) != 6:
            raise Failure(f"cannot read the package listing line {line!r}")
        mode, owner, path = parts[0], parts[1], parts[5]
        listed[path.removeprefix("./").rstrip("/")] = (mode, owner)
    for path, (mode, owner) in listed.items():
        if owner != "root/root":
            raise Failure(f"{path} is owned by {owner}, not root/root")
        if path and not (path == "usr" or path.startswith("usr/")):
            raise Failure(f"{path} is outside /usr")
        if mode.startswith("d"):
            want = "drwxr-xr-x"
        elif path in EXECUTABLES:
            want = "-rwxr-xr-x"
        else:
            want = "-rw-r--r--"
        if mode != want:
            raise Failure(f"{path} has mode {mode}, expected {want}")
    missing = [p for p in EXPECTED_PATHS if p not in listed]
    if missing:
        raise Failure(f"the package lacks {', '.join(missing)}")


def check_binaries(root: Path, version: str) -> None:
    for name in ("weft", "weftd"):
        said = run([str(root / "usr/bin" / name), "--version"]).stdout.strip()
        if said != f"{name} {version}":
            raise Failure(f"{name} --version printed {said!r}, expected '{name} {version}'")


def check_manual(root: Path) -> None:
    man = root / "usr/share/man/man1"
    helped = run([str(root / "usr/bin/weft"), "--help"]).stdout
    commands = re.search(r"^Commands:\n((?:  .*\n)+)", helped, re.M)
    if commands is None:
        raise Failure("weft --help lists no commands")
    names = [line.split()[0] for line in commands.group(1).splitlines() if line.split()[0] != "help"]
    pages = ["weft", "weftd", "weft-desktop", *(f"weft-{name}" for name in names)]
    for page in pages:
        path = man / f"{page}.1.gz"
        if not path.is_file():
            raise Failure(f"no manual page {path.relative_to(root)}")
        text = gzip.decompress(path.read_bytes()).decode()
        # roff may write the title's hyphens escaped (`weft\-desktop`).
        title = r"\\?-".join(re.escape(part) for part in page.split("-"))
        if not re.search(rf"^\.TH {title} 1\b", text, re.M):
            raise Failure(f"{path.relative_to(root)} has no `.TH {page} 1` title line")


def check_completions(root: Path) -> None:
    bash = root / "usr/share/bash-completion/completions/weft"
    run(["bash", "-n", str(bash)])
    if "complete " not in bash.read_text():
        raise Failure(f"{bash.relative_to(root)} registers no completion")
    zsh = root / "usr/share/zsh/vendor-completions/_weft"
    if not zsh.read_text().startswith("#compdef weft"):
        raise Failure(f"{zsh.relative_to(root)} does not start with `#compdef weft`")
    fish = root / "usr/share/fish/vendor_completions.d/weft.fish"
    if "complete -c weft" not in fish.read_text():
        raise Failure(f"{fish.relative_to(root)} has no `complete -c weft`")


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        raise Failure(f"{path} is not a PNG")
    return struct.unpack(">II", head[16:24])


def check_desktop_entry(root: Path) -> None:
    entry_path = root / DESKTOP_ENTRY
    if shutil.which("desktop-file-validate"):
        said = run(["desktop-file-validate", str(entry_path)], check=False)
        if said.returncode != 0 or said.stdout.strip() or said.stderr.strip():
            raise Failure(f"desktop-file-validate: {(said.stdout + said.stderr).strip()}")
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # keys are case-sensitive
    parser.read(entry_path)
    entry = parser["Desktop Entry"]
    if entry.get("Type") != "Application" or entry.get("Name") != "Weft":
        raise Failure(f"{DESKTOP_ENTRY} is not an application named Weft")
    argv = shlex.split(entry.get("Exec", ""))
    if not argv or not (root / "usr/bin" / argv[0]).is_file():
        raise Failure(f"{DESKTOP_ENTRY} runs {entry.get('Exec')!r}, which the package does not put on PATH")
    # The desktop opens weft:// links with the app: the entry handles the
    # scheme and passes the link as the app's one argument (docs/app.md).
    if argv[1:] != ["%u"]:
        raise Failure(f"{DESKTOP_ENTRY}'s Exec={entry.get('Exec')!r} does not pass the link (%u)")
    if "x-scheme-handler/weft" not in entry.get("MimeType", "").split(";"):
        raise Failure(f"{DESKTOP_ENTRY} does not handle weft:// links (MimeType=x-scheme-handler/weft;)")
    icon = entry.get("Icon", "")
    for n in ICON_SIZES:
        png = root / f"usr/share/icons/hicolor/{n}x{n}/apps/{icon}.png"
        if not png.is_file():
            raise Failure(f"the entry's icon {icon!r} has no {n}x{n} image in hicolor")
        if png_size(png) != (n, n):
            raise Failure(f"{png.relative_to(root)} is {png_size(png)}, not {n}x{n}")


def unit_exec_start(root: Path) -> list[str]:
    unit = root / UNIT
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str
    parser.read(unit)
    service = parser["Service"]
    if service.get("Restart") != "on-failure":
        raise Failure(f"{UNIT} has Restart={service.get('Restart')!r}, expected on-failure")
    if not (parser.has_section("Install") and parser["Install"].get("WantedBy") == "default.target"):
        raise Failure(f"{UNIT} lacks WantedBy=default.target: `systemctl --user enable` would not start it at login")
    argv = shlex.split(service.get("ExecStart", ""))
    if not argv or not argv[0].startswith("/usr/bin/"):
        raise Failure(f"{UNIT}'s ExecStart {service.get('ExecStart')!r} does not start a program in /usr/bin")
    # Verify the unit as systemd reads it, with the program in the unpacked root.
    if shutil.which("systemd-analyze"):
        scratch = Path(tempfile.mkdtemp(prefix="weft-unit-"))
        try:
            copy = scratch / "weftd.service"
            copy.write_text(unit.read_text().replace(argv[0], str(root) + argv[0]))
            said = run(["systemd-analyze", "verify", "--man=no", str(copy)], check=False)
            if said.returncode != 0 or said.stdout.strip() or said.stderr.strip():
                raise Failure(f"systemd-analyze verify {UNIT}: {(said.stdout + said.stderr).strip()}")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return [str(root) + argv[0], *argv[1:]]


def check_unit_runs_weftd(root: Path, version: str, scratch: Path) -> None:
    command = unit_exec_start(root)
    # The user manager's environment: a HOME and a PATH, no WEFT_HOME, so
    # the daemon serves the default home under HOME (here a temp dir).
    home = scratch / "home"
    home.mkdir()
    env = {
        "HOME": str(home),
        "PATH": f"{root}/usr/bin:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
    }
    weft = str(root / "usr/bin/weft")
    log = scratch / "weftd.log"
    with open(log, "wb") as out:
        daemon = subprocess.Popen(
            command, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + DAEMON_START_TIMEOUT_S
        status = None
        while time.monotonic() < deadline:
            if daemon.poll() is not None:
                raise Failure(f"`{shlex.join(command)}` exited {daemon.returncode}: {log.read_text(errors='replace')}")
            said = run([weft, "daemon", "status", "--json"], env=env, check=False)
            if said.returncode == 0:
                status = json.loads(said.stdout)
                break
            time.sleep(0.2)
        if status is None:
            raise Failure(f"the unit's weftd did not answer within {DAEMON_START_TIMEOUT_S} s")
        if status.get("pid") != daemon.pid:
            raise Failure(f"weft daemon status reached pid {status.get('pid')}, not the unit's weftd ({daemon.pid})")
        if status.get("version") != version:
            raise Failure(f"the unit's weftd is version {status.get('version')!r}, expected {version!r}")
        want_home = home / ".local/share/weft"
        if Path(status.get("home", "")) != want_home:
            raise Failure(f"the unit's weftd serves {status.get('home')!r}, expected {str(want_home)!r}")
        # systemd stops a unit with SIGTERM; a clean stop must exit 0, or
        # Restart=on-failure would start it again.
        os.kill(daemon.pid, signal.SIGTERM)
        try:
            code = daemon.wait(timeout=DAEMON_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired as e:
            raise Failure(f"weftd did not exit within {DAEMON_STOP_TIMEOUT_S} s of SIGTERM") from e
        if code != 0:
            raise Failure(f"weftd exited {code} on SIGTERM: {log.read_text(errors='replace')}")
    finally:
        try:
            os.killpg(daemon.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        daemon.wait(timeout=5)
        # A unit whose command detached a daemon of its own would leave it
        # serving the temp home: stop whatever answers there.
        run([weft, "daemon", "stop"], env=env, check=False)


def check(deb: Path, scratch: Path) -> None:
    version = smoke.expected_version()
    check_metadata(deb, version)
    check_contents(deb)
    root = scratch / "root"
    run(["dpkg-deb", "-x", str(deb), str(root)])
    check_binaries(root, version)
    check_manual(root)
    check_completions(root)
    check_desktop_entry(root)
    check_unit_runs_weftd(root, version, scratch)
    app_scratch = scratch / "app"
    app_scratch.mkdir()
    smoke.run(root / "usr/bin/weft-desktop", None, app_scratch)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0]} PATH/TO/weft_VERSION_ARCH.deb", file=sys.stderr)
        return 2
    deb = Path(argv[1]).resolve()
    started = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="weft-package-"))
    try:
        if not deb.is_file():
            raise Failure(f"{deb} does not exist; build it with packaging/deb/build.sh")
        check(deb, scratch)
    except (Failure, OSError, ValueError, KeyError) as e:
        print(f"package: FAILED: {e}", file=sys.stderr)
        print("0 passed, 1 failed")
        return 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"package: ok in {time.monotonic() - started:.1f} s ({deb.name}, {deb.stat().st_size / 1e6:.0f} MB)")
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
