#!/usr/bin/env python3
"""Deep links in the real Weft desktop app (docs/app.md, "Deep links").

Starts the built `weft-desktop` with a `weft://` link (as a clicked gate
notification does) under WebKitWebDriver and checks that the window's
address hash became the link's path; then starts the app a second time, as
`weft open` or the desktop's scheme handler would, with a stage link, and
checks that this second process hands the link to the open window (and
exits) and that the window's hash follows. What the UI shows for the hash
is the UI's tests' business; this proves the Rust side gets the link there.

Usage (needs a display and a session bus; run it like this):

    xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- \
        python3 tests/app/deeplink.py target/debug/weft-desktop

Prints "1 passed, 0 failed" and exits 0 on success; otherwise says what went
wrong, prints "0 passed, 1 failed" and exits 1. Python standard library only.
"""

from __future__ import annotations

import os
import subprocess
import sys
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

# No run need exist: the link reaches the window whatever the UI then shows.
RUN = "01JDEEPL1NKTEST00000000000"
FIRST_LINK = f"weft://run/{RUN}/question/01JQUEST10N0000000000000000"
SECOND_LINK = f"weft://run/{RUN}/stage/review%20step@1/output"

PAGE_TIMEOUT_S = 20  # the window showing anything
HASH_TIMEOUT_S = 10  # the hash following a link
HAND_OVER_TIMEOUT_S = 15  # the second start handing over and exiting


def hash_of(session: Session) -> str:
    return session.execute("return window.location.hash;") or ""


def expect_hash(session: Session, want: str, after: str) -> None:
    wait_until(
        f"at {want} {after}",
        lambda: hash_of(session) == want,
        HASH_TIMEOUT_S,
        describe=lambda: f"the hash is {hash_of(session)!r}",
    )


def run(binary: Path, scratch: Path) -> None:
    # One home for both starts (the single-instance socket is the home's).
    driver_bin, env = app_env(scratch)

    with AppDriver(driver_bin, env, scratch) as app:
        session = app.start(binary, [FIRST_LINK])
        wait_until(
            "showing the app",
            lambda: "Weft" in session.text(),
            PAGE_TIMEOUT_S,
            describe=lambda: f"its text is {session.text()!r}",
        )
        expect_hash(session, "#/" + FIRST_LINK.removeprefix("weft://"), "after starting with a link")

        # A second start, as `weft open` makes it: it must hand its link to
        # the open window and exit rather than open a window of its own.
        try:
            second = subprocess.run(
                [str(binary), SECOND_LINK],
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=HAND_OVER_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired as e:
            raise Failure(
                f"the second start did not hand its link over and exit within {HAND_OVER_TIMEOUT_S} s"
            ) from e
        if second.returncode != 0:
            raise Failure(
                f"the second start exited with {second.returncode}: "
                f"{second.stderr.decode(errors='replace')[-1000:]}"
            )
        expect_hash(session, "#/" + SECOND_LINK.removeprefix("weft://"), "after a second start with a link")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0]} PATH/TO/weft-desktop", file=sys.stderr)
        return 2
    binary = Path(argv[1]).resolve()
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        print(f"app deep links: FAILED: {binary} is not an executable; build it with "
              "`cargo build -p weft-desktop`", file=sys.stderr)
        print("0 passed, 1 failed")
        return 1

    return report("app deep links", lambda scratch: run(binary, scratch))

if __name__ == "__main__":
    sys.exit(main(sys.argv))
