//! The reaper: one helper process per executor that kills the process
//! groups of running commands when the executor dies.
//!
//! Every command runs in a process group of its own, so that a timeout or a
//! cancel kills everything it started. When the executor itself (`weft run
//! --no-daemon`, or weftd) is killed with SIGKILL, nothing in it runs again
//! to do that, and a resumed run would start the stage a second time
//! alongside the first. The reaper closes that gap:
//!
//! - It is a small bash loop, started once, at the first command, in a
//!   process group of its own (so a Ctrl-C at the terminal does not reach
//!   it), ignoring the signals a terminal or a shutdown sends.
//! - It reads `add PGID` / `del PGID` lines on a pipe whose write end only
//!   the executor holds: [`watch`] after a command's group starts, [`forget`]
//!   once the group has been killed and reaped.
//! - When the pipe reaches end of file — the kernel closes it when the
//!   executor exits, however it exits — it sends SIGKILL to every group still
//!   listed, then ends.
//!
//! Cost per command: two short writes to a pipe, no process. (A watcher
//! forked into each command's group did the same job for about 3 ms a
//! command; see docs/performance.md.) If the reaper cannot be started or has
//! died, commands still run; the resume-time fallback (the group recorded in
//! the stage's `process_group` file, see
//! [`super::process::reap_recorded_group`]) remains.

use crate::util::lock::lock;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;

/// The loop the reaper runs. Group ids are numbers the executor wrote; the
/// `case` ignores anything else.
const LOOP: &str = r#"trap '' INT TERM HUP QUIT PIPE
declare -A groups
while read -r op id; do
  case "$op:$id" in
    add:[0-9]*) groups[$id]=1 ;;
    del:[0-9]*) unset "groups[$id]" ;;
  esac
done
for id in "${!groups[@]}"; do kill -KILL -- "-$id" 2>/dev/null; done
"#;

/// The running reaper: its process (kept so it is never a stray) and the
/// pipe to it.
struct Reaper {
    _process: Child,
    pipe: ChildStdin,
}

/// `None` until the first command, and again after the reaper was found
/// dead (the next command starts a new one).
static REAPER: Mutex<Option<Reaper>> = Mutex::new(None);

/// Asks the reaper to kill group `pgid` should this process die before
/// [`forget`] is called for it. Best effort: see the module doc.
pub fn watch(pgid: u32) {
    send(&format!("add {pgid}\n"));
}

/// The group `pgid` is gone (killed and reaped): the reaper lets it be.
pub fn forget(pgid: u32) {
    send(&format!("del {pgid}\n"));
}

fn send(line: &str) {
    let mut slot = lock(&REAPER);
    if slot.is_none() {
        *slot = start();
    }
    let written = slot
        .as_mut()
        .is_some_and(|reaper| reaper.pipe.write_all(line.as_bytes()).is_ok());
    if !written {
        // The reaper died (or never started): a later command tries again.
        *slot = None;
    }
}

fn start() -> Option<Reaper> {
    let mut process = Command::new(bash()?)
        .arg("-c")
        .arg(LOOP)
        .arg("weft-reaper")
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .ok()?;
    let pipe = process.stdin.take()?;
    Some(Reaper {
        _process: process,
        pipe,
    })
}

/// bash, from `PATH` or the usual places.
fn bash() -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .chain([PathBuf::from("/bin"), PathBuf::from("/usr/bin")])
        .map(|dir| dir.join("bash"))
        .find(|candidate| candidate.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alive(pid: u32) -> bool {
        crate::os::process::is_alive(pid)
    }

    #[test]
    fn the_reaper_kills_the_groups_it_still_watches_when_its_executor_dies() {
        // A reaper of our own, whose "executor" is this test: dropping the
        // pipe is what the kernel does when an executor dies.
        let Some(Reaper {
            _process: mut reaper,
            mut pipe,
        }) = start()
        else {
            panic!("the reaper starts");
        };
        let spawn = || {
            Command::new("sleep")
                .arg("300")
                .process_group(0)
                .spawn()
                .expect("sleep")
        };
        let (mut watched, mut forgotten) = (spawn(), spawn());
        writeln!(pipe, "add {}", watched.id()).expect("add");
        writeln!(pipe, "add {}", forgotten.id()).expect("add");
        writeln!(pipe, "del {}", forgotten.id()).expect("del");
        writeln!(pipe, "add not-a-number").expect("junk is ignored");
        drop(pipe);
        reaper.wait().expect("the reaper ends at end of file");
        let status = watched.wait().expect("wait");
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9),
            "the watched group was killed"
        );
        assert!(alive(forgotten.id()), "a forgotten group is left alone");
        let _ = forgotten.kill();
        let _ = forgotten.wait();
    }
}
