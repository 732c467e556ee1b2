//! Keeping provider keys out of reach of the commands a process runs.
//!
//! Any process of the same user can read `/proc/PID/environ` of another,
//! and a command's parent is easy to find (`$PPID`). That file shows the
//! environment the process was *started* with: removing a variable later
//! does not change it. So a process that runs commands or starts the daemon
//! (`weftd --foreground`, `weft run`, `weft resume`) calls
//! [`protect_process`] first thing: when its environment holds secrets it
//! executes itself again, in place (same pid, same terminal), with those
//! variables removed, and hands them over in an anonymous memory file that
//! the new image reads and empties at once. The secrets then live in memory
//! only ([`process_env`] gives them back to the code that needs them:
//! provider keys for prompts, `[run.env] pass`). Finally it marks itself
//! non-dumpable, so that processes of the same user (its own commands
//! included) can no longer open its `/proc` files (`environ`, `mem`, `fd/`)
//! or attach a debugger; only root still can, and root finds no key in its
//! environment.
//!
//! Decision: the memory file's descriptor stays open, empty, and commands
//! inherit it. Closing a descriptor by number is `unsafe` in Rust (it could
//! belong to anyone), and the workspace forbids `unsafe`.
//!
//! Processes that only start others (the CLI starting `weftd`) pass a
//! scrubbed environment instead: [`scrubbed_env`].

use std::ffi::OsString;
use std::sync::OnceLock;

use super::pattern::is_secret;

/// The variable that tells a re-executed process which descriptor holds
/// its secrets. It never reaches commands ([`is_internal`]).
pub(crate) const SECRETS_FD_VAR: &str = "WEFT_SECRETS_FD";

/// The name of the memory file that carries the secrets across the
/// re-execution (`/proc/self/fd/N` links to `/memfd:weft-secrets`); a
/// descriptor that is anything else is not read.
#[cfg(target_os = "linux")]
const SECRETS_FILE_NAME: &str = "weft-secrets";

/// Most bytes of secrets handed over on re-execution. Real environments
/// hold a few kilobytes of keys; the kernel caps the whole environment far
/// below this anyway.
#[cfg(target_os = "linux")]
const MAX_SECRETS_BYTES: u64 = crate::limits::MIB;

/// The secrets taken out of this process's environment, in memory only.
static HELD: OnceLock<Vec<(String, String)>> = OnceLock::new();

/// Whether `name` is Weft's own plumbing, never passed on to commands or
/// recorded.
#[must_use]
pub(crate) fn is_internal(name: &str) -> bool {
    name == SECRETS_FD_VAR
}

/// Whether the environment variable `name=value` is a secret, judging
/// non-UTF-8 text by its lossy form.
fn is_secret_os(name: &std::ffi::OsStr, value: &std::ffi::OsStr) -> bool {
    is_secret(&name.to_string_lossy(), &value.to_string_lossy())
}

/// This process's environment as the code that runs workflows should see
/// it: the variables it has, plus the secrets [`protect_process`] moved to
/// memory, minus Weft's plumbing. Variables whose name or value is not
/// UTF-8 are left out.
#[must_use]
pub(crate) fn process_env() -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| !is_internal(k))
        .collect();
    env.extend(held().iter().cloned());
    env
}

/// The secrets [`protect_process`] holds in memory (empty when it moved
/// none).
#[must_use]
pub fn held() -> &'static [(String, String)] {
    HELD.get().map_or(&[], Vec::as_slice)
}

/// This process's environment without secrets and without Weft's plumbing:
/// the environment to start a long-lived helper (`weftd`) with.
#[must_use]
pub(crate) fn scrubbed_env() -> Vec<(OsString, OsString)> {
    std::env::vars_os()
        .filter(|(k, v)| !is_secret_os(k, v) && !is_internal(&k.to_string_lossy()))
        .collect()
}

/// Protects this process before it runs any command; call it first thing,
/// before threads start and before anything reads the environment.
///
/// When the environment holds secrets (see [`super::is_secret`]), the
/// process executes itself again without them and this call does not
/// return in the old image; in the new one, it reads the secrets back into
/// memory. Then it makes the process non-dumpable. On systems without
/// `/proc` (not Linux) it does nothing.
///
/// Nothing here is fatal: a step that fails (no `memfd`, no
/// `/proc/self/exe`) is reported on stderr, prefixed with `program`, and
/// the process carries on as protected as it could make itself.
pub fn protect_process(program: &str) {
    #[cfg(target_os = "linux")]
    linux::protect(program);
    #[cfg(not(target_os = "linux"))]
    let _ = program;
}

/// Whether this process is non-dumpable (Linux), as [`protect_process`]
/// leaves it.
#[must_use]
pub fn is_non_dumpable() -> bool {
    #[cfg(target_os = "linux")]
    {
        matches!(
            rustix::process::dumpable_behavior(),
            Ok(rustix::process::DumpableBehavior::NotDumpable)
        )
    }
    #[cfg(not(target_os = "linux"))]
    false
}

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::OsString;
    use std::fs::File;
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    use std::os::unix::process::CommandExt;

    use rustix::fs::MemfdFlags;
    use rustix::process::DumpableBehavior;

    use super::{HELD, MAX_SECRETS_BYTES, SECRETS_FD_VAR, SECRETS_FILE_NAME, is_secret_os};

    pub(super) fn protect(program: &str) {
        // The re-executed image: take the secrets back. A marker that is
        // not ours (set by hand, inherited) is reported and ignored.
        let took = std::env::var_os(SECRETS_FD_VAR).is_some_and(|fd| match take_secrets(&fd) {
            Ok(secrets) => {
                let _ = HELD.set(secrets);
                true
            }
            Err(why) => {
                eprintln!(
                    "{program}: warning: ignoring {SECRETS_FD_VAR}: {why}; \
                     keys are taken from the environment"
                );
                false
            }
        });
        if !took {
            let (secrets, kept): (Vec<_>, Vec<_>) = std::env::vars_os()
                .filter(|(k, _)| k != SECRETS_FD_VAR)
                .partition(|(k, v)| is_secret_os(k, v));
            if !secrets.is_empty() {
                // Returns only when the exec failed.
                let why = reexec(&secrets, kept);
                eprintln!(
                    "{program}: warning: cannot remove secrets from this process's \
                     environment ({why}); commands run by the same user may read them \
                     from /proc unless they run as another user"
                );
            }
        }
        if let Err(e) = rustix::process::set_dumpable_behavior(DumpableBehavior::NotDumpable) {
            eprintln!("{program}: warning: cannot make this process non-dumpable: {e}");
        }
    }

    /// Executes this program again with `kept` as its environment and
    /// `secrets` in a memory file named by [`SECRETS_FD_VAR`]. Returns why
    /// it could not; on success it does not return.
    fn reexec(secrets: &[(OsString, OsString)], kept: Vec<(OsString, OsString)>) -> String {
        let file = match memory_file() {
            Ok(file) => file,
            Err(e) => return format!("no memory file: {e}"),
        };
        let mut payload = Vec::new();
        for (name, value) in secrets {
            payload.extend_from_slice(name.as_bytes());
            payload.push(b'=');
            payload.extend_from_slice(value.as_bytes());
            payload.push(0);
        }
        if let Err(e) = (&file).write_all(&payload) {
            return format!("cannot write the memory file: {e}");
        }
        let mut args = std::env::args_os();
        let arg0 = args.next().unwrap_or_else(|| OsString::from("weft"));
        // /proc/self/exe is this very binary, even if the file on disk was
        // replaced or removed since it started.
        let error = std::process::Command::new("/proc/self/exe")
            .arg0(arg0)
            .args(args)
            .env_clear()
            .envs(kept)
            .env(SECRETS_FD_VAR, file.as_raw_fd().to_string())
            .exec();
        format!("cannot execute /proc/self/exe: {error}")
    }

    /// An anonymous memory file that survives `exec` (no close-on-exec).
    fn memory_file() -> std::io::Result<File> {
        // NOEXEC_SEAL keeps newer kernels from warning about an executable
        // memfd; older ones do not know the flag.
        let fd = rustix::fs::memfd_create(SECRETS_FILE_NAME, MemfdFlags::NOEXEC_SEAL)
            .or_else(|_| rustix::fs::memfd_create(SECRETS_FILE_NAME, MemfdFlags::empty()))?;
        Ok(File::from(fd))
    }

    /// Reads the secrets from the memory file at descriptor `fd` and
    /// empties it, so that nothing that inherits the descriptor can read
    /// them. A descriptor that is not Weft's memory file is refused: the
    /// variable could have been set by anyone.
    fn take_secrets(fd: &std::ffi::OsStr) -> Result<Vec<(String, String)>, String> {
        let fd: u32 = fd
            .to_str()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("{SECRETS_FD_VAR} is not a descriptor number"))?;
        let path = format!("/proc/self/fd/{fd}");
        let target = std::fs::read_link(&path).map_err(|e| format!("{path}: {e}"))?;
        if !target
            .as_os_str()
            .as_bytes()
            .starts_with(format!("/memfd:{SECRETS_FILE_NAME}").as_bytes())
        {
            return Err(format!(
                "descriptor {fd} is {}, not Weft's memory file",
                target.display()
            ));
        }
        // A new open file description of the same memory file, for reading
        // from its start and truncating it.
        let file = File::options()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| format!("{path}: {e}"))?;
        let bytes = crate::limits::read_bounded(&file, MAX_SECRETS_BYTES)
            .map_err(|e| format!("{path}: {e}"))?;
        file.set_len(0).map_err(|e| format!("{path}: {e}"))?;
        Ok(bytes
            .split(|b| *b == 0)
            .filter_map(|entry| {
                let at = entry.iter().position(|b| *b == b'=')?;
                let name = OsString::from_vec(entry[..at].to_vec())
                    .into_string()
                    .ok()?;
                let value = OsString::from_vec(entry[at + 1..].to_vec())
                    .into_string()
                    .ok()?;
                Some((name, value))
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weft_plumbing_is_internal() {
        assert!(is_internal(SECRETS_FD_VAR));
        assert!(!is_internal("WEFT_HOME"));
    }

    #[test]
    fn the_process_env_leaves_the_plumbing_out() {
        // This test process was not re-executed, so only its own variables
        // appear; the plumbing variable never does.
        assert!(
            process_env().iter().all(|(k, _)| !is_internal(k)),
            "no plumbing in the process env"
        );
    }

    #[test]
    fn the_scrubbed_env_holds_no_secret() {
        for (name, value) in scrubbed_env() {
            assert!(
                !is_secret_os(&name, &value),
                "{} was not scrubbed",
                name.to_string_lossy()
            );
        }
    }
}
