//! Support for the end-to-end tests in `tests/tests/it/`: locating the real
//! binaries and running them in a sandbox with its own `WEFT_HOME`.

pub mod podman;
pub mod sshd;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The path of a workspace binary (`weft`, `weftd`) next to the test
/// executable. The Makefile builds the binaries before running the tests;
/// when one is missing the test fails saying how to build it.
///
/// # Panics
/// When the binary has not been built.
#[must_use]
pub fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe()
        .unwrap_or_else(|e| panic!("cannot locate the test executable: {e}"));
    // target/<profile>/deps/<test> -> target/<profile>/<name>
    let profile_dir = exe.parent().and_then(Path::parent).unwrap_or_else(|| {
        panic!(
            "test executable {} is not under target/<profile>/deps",
            exe.display()
        )
    });
    let bin = profile_dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "the `{name}` binary is missing at {}; build it first with `cargo build --workspace --bins` (or `make test`)",
        bin.display()
    );
    bin
}

/// Every file under `dir` (recursively) whose extension is one of
/// `extensions`, sorted for stable output.
///
/// # Panics
/// When a directory cannot be read.
#[must_use]
pub fn files_under(dir: &Path, extensions: &[&str]) -> Vec<PathBuf> {
    fn walk(dir: &Path, extensions: &[&str], out: &mut Vec<PathBuf>) {
        let entries =
            std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
        for entry in entries {
            let path = entry
                .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
                .path();
            if path.is_dir() {
                walk(&path, extensions, out);
            } else if path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| extensions.contains(&e))
            {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, extensions, &mut files);
    files.sort();
    files
}

/// A temporary `WEFT_HOME` plus a scratch directory for workflow files.
/// Everything is removed when it is dropped.
pub struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    /// A fresh, empty sandbox.
    ///
    /// # Panics
    /// When no temp dir can be created.
    #[must_use]
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("cannot create a temp dir: {e}"));
        // Private, as Weft makes a home it creates (an open one gets
        // tightened, with a notice on stderr).
        std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700)
            .create(dir.path().join("home"))
            .unwrap_or_else(|e| panic!("cannot create WEFT_HOME: {e}"));
        Sandbox { dir }
    }

    /// The scratch directory (commands run here).
    #[must_use]
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `contents` to `name` under the scratch directory and returns its path.
    ///
    /// # Panics
    /// When the file cannot be written.
    pub fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .unwrap_or_else(|e| panic!("cannot create {}: {e}", parent.display()));
        }
        std::fs::write(&path, contents)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        path
    }

    /// A `weft` command with `WEFT_HOME` pointing into the sandbox, run from
    /// the scratch directory, with colour off.
    #[must_use]
    pub fn weft(&self) -> Command {
        let mut cmd = Command::new(binary("weft"));
        cmd.current_dir(self.dir.path())
            .env("WEFT_HOME", self.dir.path().join("home"))
            .env("NO_COLOR", "1")
            .env_remove("RUST_LOG");
        cmd
    }

    /// Runs `weft ARGS...` and captures its output.
    ///
    /// # Panics
    /// When the binary cannot be started.
    pub fn run(&self, args: &[&str]) -> Run {
        let output = self
            .weft()
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run weft: {e}"));
        Run::from(output)
    }
}

/// A daemon a test started (directly or through `weft run`) must not
/// outlive it: stop it, as `weft daemon stop` would, then make sure.
impl Drop for Sandbox {
    fn drop(&mut self) {
        let pid_file = self.dir.path().join("home/run/weftd.pid");
        let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|p| p.trim().parse::<u32>().ok())
        else {
            return;
        };
        let signal = |sig: &str| {
            let _ = Command::new("kill")
                .args([sig, &pid.to_string()])
                .stderr(std::process::Stdio::null())
                .status();
        };
        signal("-TERM");
        let alive = || std::path::Path::new(&format!("/proc/{pid}")).exists();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while alive() && pid_file.exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        if pid_file.exists() {
            signal("-KILL");
        }
    }
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

/// A `weftd --foreground` on a sandbox's `WEFT_HOME`, its stderr (the
/// daemon's log) in `weftd.log` of the scratch directory; killed when
/// dropped if it is still running.
pub struct Weftd {
    pub child: std::process::Child,
    /// The `WEFT_HOME` it serves.
    pub home: PathBuf,
    /// Where its stderr goes.
    pub log: PathBuf,
}

impl Weftd {
    /// Starts weftd on `sandbox`'s home and waits until it listens.
    ///
    /// # Panics
    /// When it cannot be started or does not listen within 60 s.
    #[must_use]
    pub fn start(sandbox: &Sandbox) -> Weftd {
        Weftd::start_with(sandbox, &[])
    }

    /// [`Weftd::start`] with extra environment variables.
    ///
    /// # Panics
    /// When it cannot be started or does not listen within 60 s.
    #[must_use]
    pub fn start_with(sandbox: &Sandbox, env: &[(&str, &str)]) -> Weftd {
        let weftd = Weftd::spawn(sandbox, env);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !weftd.answers() {
            assert!(
                std::time::Instant::now() < deadline,
                "weftd did not start listening; its log:\n{}",
                weftd.log_text()
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        weftd
    }

    /// Starts weftd without waiting for it.
    ///
    /// # Panics
    /// When it cannot be started.
    #[must_use]
    pub fn spawn(sandbox: &Sandbox, env: &[(&str, &str)]) -> Weftd {
        let home = sandbox.path().join("home");
        let log = sandbox.path().join("weftd.log");
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap_or_else(|e| panic!("cannot open {}: {e}", log.display()));
        let child = Command::new(binary("weftd"))
            .arg("--foreground")
            .env("WEFT_HOME", &home)
            .envs(env.iter().copied())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start weftd: {e}"));
        Weftd { child, home, log }
    }

    /// Whether it answers `daemon.status` on its socket.
    #[must_use]
    pub fn answers(&self) -> bool {
        use std::io::{BufRead, Write};
        let Ok(mut stream) = std::os::unix::net::UnixStream::connect(self.socket()) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(10)));
        if stream
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"daemon.status\"}\n")
            .is_err()
        {
            return false;
        }
        let mut line = String::new();
        std::io::BufReader::new(stream)
            .read_line(&mut line)
            .is_ok_and(|_| line.contains("\"result\""))
    }

    /// The socket it listens on (`WEFT_HOME/run/weftd.sock`; sandbox paths
    /// are short enough).
    #[must_use]
    pub fn socket(&self) -> PathBuf {
        self.home.join("run/weftd.sock")
    }

    /// What it has logged so far.
    #[must_use]
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends `signal` (`-TERM`, `-KILL`, ...) to it.
    pub fn signal(&self, signal: &str) {
        let _ = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status();
    }
}

impl Drop for Weftd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client speaking the protocol by hand, one JSON line at a time, for
/// what the library client never sends (odd ids) or never does (stop
/// reading).
pub struct RawClient {
    reader: std::io::BufReader<std::os::unix::net::UnixStream>,
    writer: std::os::unix::net::UnixStream,
}

impl RawClient {
    /// Connects to `socket`; reads wait at most 60 s.
    ///
    /// # Panics
    /// When nothing listens there.
    #[must_use]
    pub fn connect(socket: &Path) -> RawClient {
        let stream = std::os::unix::net::UnixStream::connect(socket)
            .unwrap_or_else(|e| panic!("connect {}: {e}", socket.display()));
        let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(60)));
        let writer = stream
            .try_clone()
            .unwrap_or_else(|e| panic!("clone the socket: {e}"));
        RawClient {
            reader: std::io::BufReader::new(stream),
            writer,
        }
    }

    /// Sends one request line.
    ///
    /// # Panics
    /// When the socket cannot be written.
    pub fn send(&mut self, request: &serde_json::Value) {
        use std::io::Write;
        let mut line = request.to_string();
        line.push('\n');
        self.writer
            .write_all(line.as_bytes())
            .unwrap_or_else(|e| panic!("write: {e}"));
    }

    /// The next line from the daemon, parsed; `None` at the end of the
    /// stream.
    ///
    /// # Panics
    /// When nothing arrives within 60 s or the line is not JSON.
    pub fn recv(&mut self) -> Option<serde_json::Value> {
        use std::io::BufRead;
        let mut line = String::new();
        let n = self
            .reader
            .read_line(&mut line)
            .unwrap_or_else(|e| panic!("no message from weftd: {e}"));
        (n > 0).then(|| {
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
        })
    }

    /// Sends `request` and returns the reply carrying `id`, skipping
    /// notifications.
    ///
    /// # Panics
    /// As [`RawClient::send`] and [`RawClient::recv`].
    pub fn call(&mut self, id: u64, method: &str, params: serde_json::Value) -> serde_json::Value {
        self.send(
            &serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        );
        loop {
            let message = self
                .recv()
                .unwrap_or_else(|| panic!("weftd hung up before answering {method}"));
            if message.get("method").is_none() && message["id"] == id {
                return message;
            }
        }
    }

    /// Whether a message is waiting to be read right now.
    #[must_use]
    pub fn has_message(&mut self) -> bool {
        use std::io::BufRead;
        let stream = self.reader.get_ref();
        let _ = stream.set_nonblocking(true);
        let ready = self.reader.fill_buf().is_ok_and(|b| !b.is_empty());
        let _ = self.reader.get_ref().set_nonblocking(false);
        ready
    }
}

/// `text`, trimmed, as JSON (a command's `--json` output).
///
/// # Panics
/// When it is not JSON, showing it.
#[must_use]
pub fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// A tiny deterministic generator, so that each seed of a crash test
/// kills at the same moment every time.
#[must_use]
pub fn lcg(seed: u64) -> u64 {
    seed.wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407)
        >> 33
}

/// The captured result of one command.
#[derive(Debug)]
pub struct Run {
    /// The exit code; -1 when killed by a signal.
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Self {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

/// A chain of `nodes` command stages, each appending its name (`n0`,
/// `n1`, ...) to `side.log` in the working directory: the side effect the
/// crash tests count, since a committed stage must never run again.
#[must_use]
pub fn side_effect_chain(nodes: usize) -> String {
    let mut dot = String::from("digraph Chain { start [shape=Mdiamond]; exit [shape=Msquare]\n");
    for i in 0..nodes {
        dot.push_str(&format!(
            "  n{i} [shape=parallelogram, script=\"echo n{i} >> side.log\"]\n"
        ));
    }
    dot.push_str("  start -> n0\n");
    for i in 1..nodes {
        dot.push_str(&format!("  n{} -> n{i}\n", i - 1));
    }
    dot.push_str(&format!("  n{} -> exit\n}}\n", nodes - 1));
    dot
}

/// Waits until the run `run_id` of `home` has status `want`, reading the
/// database as the app does. Generous (120 s): on a loaded 2-core machine a
/// restarted daemon's resume can take a while, and the run must still end
/// in `want`.
///
/// # Panics
/// When the run is not in `want` by then, naming the status it is in.
pub fn wait_for_status(home: &weft::store::Home, run_id: &str, want: weft::model::RunStatus) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let status = weft::store::Store::open_read_only(home)
            .ok()
            .and_then(|s| s.find_run(run_id).ok())
            .map(|r| r.status);
        if status == Some(want) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "run {run_id} is {status:?}, not {want:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A git repository at `root` (created if missing), on `main`, with `files`
/// committed by git2 (the tests check what Weft writes with the `git` CLI,
/// so they build with the other tool).
///
/// # Panics
/// When the repository cannot be made.
pub fn git_repo(root: &Path, files: &[(&str, &str)]) {
    let repo = git2::Repository::init_opts(
        root,
        git2::RepositoryInitOptions::new().initial_head("main"),
    )
    .unwrap_or_else(|e| panic!("init: {e}"));
    for (name, text) in files {
        let path = root.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("mkdir: {e}"));
        }
        std::fs::write(path, text).unwrap_or_else(|e| panic!("write: {e}"));
    }
    let mut index = repo.index().unwrap_or_else(|e| panic!("index: {e}"));
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .unwrap_or_else(|e| panic!("add: {e}"));
    index.write().unwrap_or_else(|e| panic!("write index: {e}"));
    let tree = index.write_tree().unwrap_or_else(|e| panic!("tree: {e}"));
    let tree = repo.find_tree(tree).unwrap_or_else(|e| panic!("tree: {e}"));
    let me = git2::Signature::now("Test", "test@example.com").unwrap_or_else(|e| panic!("{e}"));
    repo.commit(Some("HEAD"), &me, &me, "initial", &tree, &[])
        .unwrap_or_else(|e| panic!("commit: {e}"));
}

/// `git ARGS` in `dir`: its stdout, or a panic with its stderr.
///
/// # Panics
/// When git cannot run or fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("git: {e}"));
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A run's events as `weft events RUN --json` prints them, one JSON
/// envelope each.
///
/// # Panics
/// When `weft events` fails or prints a line that is not JSON.
#[must_use]
pub fn events(sb: &Sandbox, run_id: &str) -> Vec<serde_json::Value> {
    let out = sb.run(&["events", run_id, "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    out.stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The events named `name` (`stage.completed`, …) among `events`.
#[must_use]
pub fn named<'a>(events: &'a [serde_json::Value], name: &str) -> Vec<&'a serde_json::Value> {
    events.iter().filter(|e| e["event"] == name).collect()
}

/// The live (not zombie) processes whose environment holds `marker` (say
/// `HOME=/tmp/x\0`, or a path only one test's processes are given): what a
/// test started and must not leave behind.
#[must_use]
pub fn processes_with_env(marker: &str) -> Vec<String> {
    let mut alive = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        let state = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // A zombie has run its last instruction; only its parent's wait is left.
        let zombie = state
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z'));
        if !zombie && String::from_utf8_lossy(&environ).contains(marker) {
            alive.push(pid);
        }
    }
    alive
}

/// Waits until `done` holds, at most `timeout`, checking every 20 ms;
/// panics naming `what` otherwise.
pub fn wait_until(what: &str, timeout: std::time::Duration, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + timeout;
    while !done() {
        assert!(std::time::Instant::now() < deadline, "never: {what}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Processes whose command line names `dir`: `pid: command line`.
#[must_use]
pub fn processes_naming(dir: &Path) -> Vec<String> {
    let needle = dir.to_string_lossy().into_owned();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) || name == std::process::id().to_string() {
            continue;
        }
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains(&needle) {
                found.push(format!("{name}: {cmdline}"));
            }
        }
    }
    found
}
