//! Processes by pid: alive or not, when they started, and killing the
//! process group one leads.
//!
//! A pid alone does not name a process for long: once it exits, the kernel
//! may hand the number to another. Where Weft records a process to find it
//! again (the process executing a run, a command's process group), it
//! records the pid with the process's start time ([`start_time`]), and a
//! pid whose start time differs is another process ([`still_alive`],
//! [`kill_group_led_by`]).
//!
//! Start times and process states come from `/proc/PID/stat` (Linux). Where
//! there is no `/proc`, start times are unknown (`None`), which the checks
//! treat as "cannot tell", and no process reads as a zombie.

use rustix::process::Pid;
pub use rustix::process::Signal;

/// When process `pid` started, in clock ticks since boot (field 22 of
/// `/proc/PID/stat`); `None` when there is no such process, or no `/proc`.
#[must_use]
pub(crate) fn start_time(pid: u32) -> Option<u64> {
    stat_fields(pid)?.get(19)?.parse().ok()
}

/// Whether process `pid` has exited but is still listed: a zombie (state
/// `Z`, not yet reaped by its parent) or a dying process (`X`). Such a
/// process runs nothing, though signal 0 still reaches it. False when there
/// is no such process.
#[must_use]
pub(crate) fn is_zombie(pid: u32) -> bool {
    stat_fields(pid)
        .and_then(|fields| fields.first().and_then(|s| s.chars().next()))
        .is_some_and(|state| matches!(state, 'Z' | 'X' | 'x'))
}

/// Whether a process with this pid exists (signal 0 reaches it) and has not
/// exited. A zombie — killed, but not yet reaped by its parent — is not
/// alive: right after a `kill -9` the dead process is one until its parent
/// reaps it.
#[must_use]
pub fn is_alive(pid: u32) -> bool {
    pid_of(pid).is_some_and(|pid| rustix::process::test_kill_process(pid).is_ok())
        && !is_zombie(pid)
}

/// Whether the process recorded as `pid`, started at `started` (see
/// [`start_time`]), is still alive: the pid is alive and, where both start
/// times are known, it started then (a recycled pid belongs to another
/// process). Without a recorded start time the pid alone decides.
#[must_use]
pub(crate) fn still_alive(pid: u32, started: Option<u64>) -> bool {
    is_alive(pid)
        && match (started, start_time(pid)) {
            (Some(recorded), Some(now)) => recorded == now,
            _ => true,
        }
}

/// Sends `signal` to every process in group `pgid`. False when it could
/// not be sent (no such group left, or not ours to signal); a group that
/// is already gone needs nothing more.
///
/// The caller must know `pgid` still names its group: an unreaped leader
/// keeps the id from being reused; otherwise use [`kill_group_led_by`].
pub(crate) fn signal_group(pgid: u32, signal: Signal) -> bool {
    pid_of(pgid).is_some_and(|pgid| rustix::process::kill_process_group(pgid, signal).is_ok())
}

/// Kills (SIGKILL) process group `pgid` if its leader is still the process
/// that started at `started` (same pid, same start time, not a zombie), and
/// says whether it did. A recycled pid, or a leader that has exited, kills
/// nothing. After it returns true, no process of the group runs another
/// instruction.
pub(crate) fn kill_group_led_by(pgid: u32, started: u64) -> bool {
    start_time(pgid) == Some(started) && !is_zombie(pgid) && signal_group(pgid, Signal::KILL)
}

/// `pid` as the kernel's type; `None` for 0 and numbers beyond `i32`, which
/// name no single process.
fn pid_of(pid: u32) -> Option<Pid> {
    Pid::from_raw(i32::try_from(pid).ok()?)
}

/// The fields of `/proc/PID/stat` after the command name, from field 3
/// (the state) on.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    fields_after_name(&stat)
}

/// The fields of a `/proc/PID/stat` line after the command name (field 2),
/// which is in parentheses and may itself hold spaces and parentheses: the
/// last `)` ends it.
fn fields_after_name(stat: &str) -> Option<Vec<String>> {
    let after = stat.get(stat.rfind(')')? + 1..)?;
    Some(after.split_whitespace().map(str::to_string).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::process::Command;
    use std::time::{Duration, Instant};

    /// Waits (up to a generous deadline, for a busy machine) for `cond`.
    fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !cond() {
            assert!(Instant::now() < deadline, "timed out waiting: {what}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_command_name_with_spaces_and_parentheses_does_not_shift_the_fields() {
        let fields = fields_after_name("4242 (my (odd) cmd) S 1 4242 4242 0").expect("fields");
        assert_eq!(fields, ["S", "1", "4242", "4242", "0"]);
        assert_eq!(fields_after_name("no parenthesis"), None);
    }

    #[test]
    fn this_process_is_alive_and_has_a_start_time() {
        let me = std::process::id();
        assert!(is_alive(me));
        assert!(!is_zombie(me));
        assert!(
            start_time(me).is_some(),
            "/proc gives this process's start time"
        );
        assert!(!is_alive(0), "pid 0 names no single process");
        assert!(!is_alive(u32::MAX), "beyond any pid");
        assert_eq!(start_time(u32::MAX), None);
    }

    #[test]
    fn a_recycled_pid_is_not_taken_for_the_process_that_was_recorded() {
        let me = std::process::id();
        let started = start_time(me);
        assert!(still_alive(me, started));
        assert!(
            still_alive(me, None),
            "no recorded start time: the pid decides"
        );
        let other_start = started.map(|t| t + 1);
        assert!(
            !still_alive(me, other_start),
            "same pid, another start: another process"
        );
    }

    #[test]
    fn an_exited_child_not_yet_reaped_is_a_zombie_and_not_alive() {
        let mut child = Command::new("true").spawn().expect("spawn true");
        let pid = child.id();
        eventually("the child exits", || is_zombie(pid));
        assert!(!is_alive(pid), "a zombie runs nothing");
        assert!(!still_alive(pid, None));
        child.wait().expect("reap");
        assert!(!is_zombie(pid), "reaped: gone, not a zombie");
    }

    #[test]
    fn a_group_is_killed_only_while_its_recorded_leader_leads_it() {
        let mut leader = Command::new("sleep")
            .arg("300")
            .process_group(0)
            .spawn()
            .expect("spawn sleep");
        let pgid = leader.id();
        let started = start_time(pgid).expect("start time");
        assert!(
            !kill_group_led_by(pgid, started + 1),
            "another start time: a recycled pid, left alone"
        );
        assert!(is_alive(pgid), "still running");
        assert!(kill_group_led_by(pgid, started));
        let status = leader.wait().expect("wait");
        assert_eq!(status.signal(), Some(9), "killed by SIGKILL");
        assert!(
            !kill_group_led_by(pgid, started),
            "an exited leader kills nothing"
        );
        assert!(!signal_group(pgid, Signal::KILL), "no such group left");
    }
}
