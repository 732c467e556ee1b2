//! `ssh://` engines: a Docker engine on another machine, reached through a
//! tunnel of the system's `ssh` client (so its configuration, keys, agent,
//! known hosts and proxies all apply, as they do for `docker` itself).
//!
//! `ssh://[user@]host[:port][/remote/socket]` starts
//! `ssh -N -L LOCAL:REMOTE [user@]host`, where LOCAL is a socket in a
//! private (0700) directory of this machine and REMOTE the engine's socket
//! there ([`DEFAULT_REMOTE_SOCKET`] when the address has no path). The
//! engine is then spoken to through LOCAL. The [`Tunnel`] owns the `ssh`
//! process: dropping it stops the process and removes the directory.
//!
//! `WEFT_SSH_COMMAND` ([`SSH_COMMAND_VAR`]) replaces `ssh`, as
//! `GIT_SSH_COMMAND` does for git: a program and its options split on
//! whitespace (`ssh -F ~/.ssh/weft_config -i ~/.ssh/build_key`). The
//! tunnel's own options come after it, so an `-o` option it sets wins
//! (`ssh` keeps the first value of each).

use std::io::{Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, ChildStderr, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::util::lock::lock;

/// The engine's socket on the remote machine when the address names none:
/// Docker's. Podman's is `/run/podman/podman.sock` (rootful) or
/// `/run/user/UID/podman/podman.sock` (rootless).
pub const DEFAULT_REMOTE_SOCKET: &str = "/var/run/docker.sock";

/// The environment variable naming the ssh program and its options.
pub const SSH_COMMAND_VAR: &str = "WEFT_SSH_COMMAND";

/// How long `ssh` may take to log in and forward the socket, and the
/// engine to answer through it.
pub const OPEN_BOUND: Duration = Duration::from_secs(30);

/// How much of ssh's stderr is kept, for the reason of a failure.
const STDERR_TAIL: usize = 4096;

/// How long `ssh` may take to end after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// How long to wait for ssh's last words once it has exited or closed a
/// connection (its stderr is read by another thread).
const STDERR_SETTLE: Duration = Duration::from_secs(1);

/// The longest address accepted.
const MAX_ADDRESS: usize = 2048;

/// The parts of an `ssh://` address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address {
    pub user: Option<String>,
    /// A host name, an address, or a `Host` alias of the ssh configuration.
    pub host: String,
    pub port: Option<u16>,
    /// The engine's socket on the remote machine.
    pub socket: String,
}

impl Address {
    /// Reads `ssh://[user@]host[:port][/remote/socket]` (an IPv6 address
    /// in brackets: `ssh://[::1]:2222`).
    ///
    /// # Errors
    /// What is wrong with it, in a sentence.
    pub fn parse(address: &str) -> Result<Address, String> {
        const FORM: &str = "ssh://[user@]host[:port][/remote/socket]";
        if address.len() > MAX_ADDRESS {
            return Err(format!("an ssh:// address is at most {MAX_ADDRESS} bytes"));
        }
        let rest = address
            .strip_prefix("ssh://")
            .ok_or_else(|| format!("not an ssh:// address; the form is {FORM}"))?;
        if let Some(c) = rest.chars().find(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!("{c:?} has no place in an ssh:// address"));
        }
        let (authority, path) = match rest.find('/') {
            Some(slash) => (&rest[..slash], &rest[slash..]),
            None => (rest, ""),
        };
        let (user, host_port) = match authority.split_once('@') {
            Some((user, host_port)) => {
                if user.is_empty() || !user.chars().all(is_name_char) {
                    return Err(format!(
                        "the user {user:?} is not a user name; the form is {FORM}"
                    ));
                }
                (Some(user.to_string()), host_port)
            }
            None => (None, authority),
        };
        let (host, port) = split_host_port(host_port)?;
        if host.is_empty() {
            return Err(format!("{address:?} names no host; the form is {FORM}"));
        }
        let socket = match path {
            "" | "/" => DEFAULT_REMOTE_SOCKET.to_string(),
            path if path.contains([':', '?', '#']) => {
                // `ssh -L` splits its argument at ':'.
                return Err(format!(
                    "the remote socket {path} has a ':', '?' or '#', which an ssh:// address cannot carry"
                ));
            }
            path => path.to_string(),
        };
        Ok(Address {
            user,
            host,
            port,
            socket,
        })
    }

    /// `[user@]host`, as `ssh` takes it.
    #[must_use]
    pub fn destination(&self) -> String {
        match &self.user {
            Some(user) => format!("{user}@{}", self.host),
            None => self.host.clone(),
        }
    }
}

/// Letters, digits and `.`, `_`, `-`: what host names, ssh `Host` aliases
/// and user names are made of.
fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`.
fn split_host_port(text: &str) -> Result<(String, Option<u16>), String> {
    let (host, port) = if let Some(bracketed) = text.strip_prefix('[') {
        let (host, after) = bracketed
            .split_once(']')
            .ok_or_else(|| format!("{text:?} opens a '[' it does not close"))?;
        if host.is_empty() || !host.chars().all(|c| c.is_ascii_hexdigit() || c == ':') {
            return Err(format!("[{host}] is not an IPv6 address"));
        }
        let port = match after {
            "" => None,
            _ => Some(
                after
                    .strip_prefix(':')
                    .ok_or_else(|| format!("{after:?} after [{host}] is not a :port"))?,
            ),
        };
        (host, port)
    } else {
        let (host, port) = match text.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        };
        if port.is_some_and(|p| p.contains(':')) {
            return Err(format!(
                "{text:?} has more than one ':'; an IPv6 address goes in brackets: [::1]:22"
            ));
        }
        if host.starts_with('-') || !host.chars().all(is_name_char) {
            return Err(format!("{host:?} is not a host name"));
        }
        (host, port)
    };
    let port = match port {
        None => None,
        Some(digits) => match digits.parse::<u16>() {
            Ok(port) if port > 0 && digits.bytes().all(|b| b.is_ascii_digit()) => Some(port),
            _ => return Err(format!("{digits:?} is not a port (1 to 65535)")),
        },
    };
    Ok((host.to_string(), port))
}

/// The ssh program and its options from [`SSH_COMMAND_VAR`]; `ssh` when
/// it is unset or blank.
#[must_use]
pub fn command_from_env() -> Vec<String> {
    let words: Vec<String> = std::env::var(SSH_COMMAND_VAR)
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    if words.is_empty() {
        vec!["ssh".to_string()]
    } else {
        words
    }
}

/// A running `ssh -L` forwarding a local socket to the remote engine's.
#[derive(Debug)]
pub struct Tunnel {
    child: Child,
    /// The private directory holding [`Tunnel::socket`].
    dir: PathBuf,
    socket: PathBuf,
    stderr: Arc<Mutex<StderrTail>>,
}

impl Tunnel {
    /// Starts `ssh_command` (the program and its options; see
    /// [`command_from_env`]) forwarding to the engine at `address`, and
    /// waits, at most [`OPEN_BOUND`], until the engine answers through
    /// it. This blocks the calling thread: from async code on a
    /// multi-threaded runtime, call it where blocking is allowed.
    ///
    /// # Errors
    /// Why there is no tunnel, in a sentence naming what to fix: the
    /// address's form, ssh's own last words (`Permission denied`, `Could
    /// not resolve hostname`), or that nothing answers at the remote
    /// socket. No process or directory is left behind.
    pub fn open(address: &str, ssh_command: &[String]) -> Result<Tunnel, String> {
        let target = Address::parse(address)?;
        let Some((program, options)) = ssh_command.split_first() else {
            return Err(format!("{SSH_COMMAND_VAR} names no program"));
        };
        let dir = private_dir()?;
        let socket = dir.join("docker.sock");
        let mut command = std::process::Command::new(program);
        command
            .args(options)
            .args(["-N", "-o", "BatchMode=yes"])
            .args(["-o", "ExitOnForwardFailure=yes"])
            .args(["-o", "StreamLocalBindUnlink=yes"]);
        if let Some(port) = target.port {
            command.arg("-p").arg(port.to_string());
        }
        command
            .arg("-L")
            .arg(format!("{}:{}", socket.display(), target.socket))
            .arg("--")
            .arg(target.destination())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(format!("cannot run `{program}` ({SSH_COMMAND_VAR}): {e}"));
            }
        };
        let stderr = Arc::new(Mutex::new(StderrTail::default()));
        let reader = child.stderr.take().map(|pipe| read_stderr(pipe, &stderr));
        // From here on, dropping the tunnel stops ssh and removes the dir.
        let mut tunnel = Tunnel {
            child,
            dir,
            socket,
            stderr,
        };
        match reader {
            Some(Ok(())) => {}
            Some(Err(e)) => return Err(format!("cannot read ssh's stderr: {e}")),
            None => return Err("ssh's stderr is not a pipe".to_string()),
        }
        tunnel.wait_until_open(&target)?;
        Ok(tunnel)
    }

    /// The local end, as `DOCKER_HOST` spells it.
    #[must_use]
    pub fn docker_host(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    /// Polls until the engine answers through the local socket, ssh
    /// exits, or [`OPEN_BOUND`] passes.
    fn wait_until_open(&mut self, target: &Address) -> Result<(), String> {
        let deadline = Instant::now() + OPEN_BOUND;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.wait_for_stderr_end();
                return Err(format!(
                    "ssh exited ({status}) before the tunnel was up: {}",
                    self.last_words()
                ));
            }
            // The local socket exists once ssh has logged in and listens.
            if let Ok(stream) = UnixStream::connect(&self.socket) {
                let said_before = lock(&self.stderr).total;
                return match answers_http(stream, deadline) {
                    Ok(()) => Ok(()),
                    Err(Silence::Closed) => {
                        self.wait_for_stderr_after(said_before);
                        Err(format!(
                            "ssh logged in to {}, but nothing answers at {} there ({}); is the engine running, and is that its socket? \
                             Docker's is {DEFAULT_REMOTE_SOCKET}, Podman's /run/podman/podman.sock \
                             (rootless: /run/user/UID/podman/podman.sock)",
                            target.host,
                            target.socket,
                            self.last_words()
                        ))
                    }
                    Err(Silence::TimedOut) => Err(format!(
                        "the engine at {} on {} did not answer within {}s",
                        target.socket,
                        target.host,
                        OPEN_BOUND.as_secs()
                    )),
                };
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "ssh did not open the tunnel within {}s: {}",
                    OPEN_BOUND.as_secs(),
                    self.last_words()
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits (bounded) until ssh's stderr is closed: everything it wrote
    /// has been read.
    fn wait_for_stderr_end(&self) {
        let deadline = Instant::now() + STDERR_SETTLE;
        while !lock(&self.stderr).closed && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits (bounded) until ssh says something more than `said` bytes.
    fn wait_for_stderr_after(&self, said: u64) {
        let deadline = Instant::now() + STDERR_SETTLE;
        loop {
            let tail = lock(&self.stderr);
            if tail.total > said || tail.closed || Instant::now() >= deadline {
                return;
            }
            drop(tail);
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// ssh's last non-blank line on stderr, quoted for a message.
    fn last_words(&self) -> String {
        let tail = lock(&self.stderr);
        let text = String::from_utf8_lossy(&tail.bytes);
        match text.lines().map(str::trim).rfind(|line| !line.is_empty()) {
            // The message it goes into goes on after it.
            Some(line) => format!("ssh said: {}", line.trim_end_matches('.')),
            None => "ssh said nothing".to_string(),
        }
    }
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            // SIGTERM first: ssh then ends its ProxyCommand, if it has one.
            let pid = rustix::process::Pid::from_child(&self.child);
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            let deadline = Instant::now() + STOP_GRACE;
            while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The end of ssh's stderr, read as it comes by its own thread.
#[derive(Debug, Default)]
struct StderrTail {
    bytes: Vec<u8>,
    /// Bytes read in all.
    total: u64,
    /// The pipe has closed: ssh (and every process it handed its stderr
    /// to) has exited.
    closed: bool,
}

fn read_stderr(mut pipe: ChildStderr, tail: &Arc<Mutex<StderrTail>>) -> std::io::Result<()> {
    let tail = Arc::clone(tail);
    std::thread::Builder::new()
        .name("weft-ssh-stderr".to_string())
        .spawn(move || {
            let mut buf = [0u8; 1024];
            loop {
                match pipe.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let mut tail = lock(&tail);
                        tail.bytes.extend_from_slice(&buf[..n]);
                        tail.total = tail
                            .total
                            .saturating_add(u64::try_from(n).unwrap_or(u64::MAX));
                        let excess = tail.bytes.len().saturating_sub(STDERR_TAIL);
                        tail.bytes.drain(..excess);
                    }
                }
            }
            lock(&tail).closed = true;
        })
        .map(drop)
}

/// Why the engine did not answer through the tunnel.
enum Silence {
    /// The connection closed without a reply: ssh could not reach the
    /// remote socket.
    Closed,
    TimedOut,
}

/// Whether an HTTP server answers on `stream` (a `GET /_ping`, which
/// every Docker engine answers) before `deadline`.
fn answers_http(mut stream: UnixStream, deadline: Instant) -> Result<(), Silence> {
    let left = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1));
    let _ = stream.set_read_timeout(Some(left));
    let _ = stream.set_write_timeout(Some(left));
    let request = b"GET /_ping HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\r\n";
    if stream.write_all(request).is_err() {
        return Err(Silence::Closed);
    }
    let mut head = Vec::new();
    let mut buf = [0u8; 64];
    while head.len() < 5 {
        match stream.read(&mut buf) {
            Ok(0) => return Err(Silence::Closed),
            Ok(n) => head.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(Silence::TimedOut);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Err(Silence::Closed),
        }
    }
    if head.starts_with(b"HTTP/") {
        Ok(())
    } else {
        Err(Silence::Closed)
    }
}

/// A new directory only this user can enter, for the tunnel's socket.
/// Under the temp dir unless its path is too long for a socket's (108
/// bytes) or has a ':', which `ssh -L` would split at.
fn private_dir() -> Result<PathBuf, String> {
    let temp = std::env::temp_dir();
    let base = if temp
        .to_str()
        .is_some_and(|t| t.len() <= 56 && !t.contains(':'))
    {
        temp
    } else {
        PathBuf::from("/tmp")
    };
    let mut last_error = None;
    for _ in 0..16 {
        let dir = base.join(format!("weft-ssh-{}", ulid::Ulid::generate()));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) => last_error = Some(e),
        }
    }
    Err(format!(
        "cannot create a private directory for the ssh tunnel under {}: {}",
        base.display(),
        last_error.map_or_else(String::new, |e| e.to_string())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(address: &str) -> Address {
        match Address::parse(address) {
            Ok(parsed) => parsed,
            Err(e) => panic!("{address}: {e}"),
        }
    }

    fn refused(address: &str) -> String {
        match Address::parse(address) {
            Ok(parsed) => panic!("{address} was read as {parsed:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn an_address_gives_its_user_host_port_and_remote_socket() {
        assert_eq!(
            parsed("ssh://deploy@build.example:2222/run/podman/podman.sock"),
            Address {
                user: Some("deploy".to_string()),
                host: "build.example".to_string(),
                port: Some(2222),
                socket: "/run/podman/podman.sock".to_string(),
            }
        );
        let bare = parsed("ssh://box");
        assert_eq!(bare.user, None);
        assert_eq!(bare.port, None);
        assert_eq!(bare.destination(), "box");
        assert_eq!(parsed("ssh://me@box").destination(), "me@box");
    }

    #[test]
    fn without_a_path_the_remote_socket_is_dockers() {
        assert_eq!(parsed("ssh://box").socket, DEFAULT_REMOTE_SOCKET);
        assert_eq!(parsed("ssh://box:22/").socket, DEFAULT_REMOTE_SOCKET);
    }

    #[test]
    fn an_ipv6_host_goes_in_brackets() {
        let v6 = parsed("ssh://root@[::1]:2222/s.sock");
        assert_eq!(v6.host, "::1");
        assert_eq!(v6.port, Some(2222));
        assert_eq!(v6.destination(), "root@::1");
        assert!(refused("ssh://::1").contains("brackets"));
        assert!(refused("ssh://[::1").contains("does not close"));
    }

    #[test]
    fn an_address_without_a_host_is_refused_saying_the_form() {
        for address in ["ssh://", "ssh:///run/docker.sock", "ssh://me@", "ssh://:22"] {
            let error = refused(address);
            assert!(
                error.contains("names no host") && error.contains("ssh://[user@]host"),
                "{address}: {error}"
            );
        }
    }

    #[test]
    fn bad_ports_users_hosts_and_paths_are_refused_naming_the_part() {
        assert!(refused("ssh://box:0").contains("\"0\" is not a port"));
        assert!(refused("ssh://box:99999").contains("is not a port"));
        assert!(refused("ssh://box:+22").contains("is not a port"));
        assert!(refused("ssh://box:").contains("is not a port"));
        assert!(refused("ssh://@box").contains("not a user name"));
        // An option smuggled in as a host.
        assert!(refused("ssh://-oProxyCommand=x").contains("not a host name"));
        assert!(refused("ssh://box/a:b").contains("':'"));
        assert!(refused("ssh://box /x").contains("no place"));
        assert!(refused("tcp://box").contains("not an ssh:// address"));
        assert!(refused(&format!("ssh://{}", "a".repeat(MAX_ADDRESS))).contains("at most"));
    }

    #[test]
    fn a_missing_ssh_program_is_named() {
        let command = vec!["/nonexistent/weft-ssh".to_string()];
        let error = Tunnel::open("ssh://box", &command).map(drop);
        let error = error.err().unwrap_or_default();
        assert!(
            error.contains("cannot run `/nonexistent/weft-ssh` (WEFT_SSH_COMMAND)"),
            "{error}"
        );
    }

    #[test]
    fn an_ssh_that_exits_at_once_is_reported_with_its_last_line() {
        // A stand-in for ssh that refuses as ssh does, without a network.
        let command = [
            "sh",
            "-c",
            "echo 'Warning: a warning' >&2; echo 'box: Permission denied (publickey).' >&2; exit 255",
        ]
        .map(str::to_string);
        let begun = Instant::now();
        let error = Tunnel::open("ssh://box", &command).map(drop);
        let error = error.err().unwrap_or_default();
        assert!(
            error.ends_with("ssh said: box: Permission denied (publickey)")
                && error.contains("exit status: 255"),
            "{error}"
        );
        assert!(begun.elapsed() < OPEN_BOUND);
    }
}
