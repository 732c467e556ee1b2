//! Support for the end-to-end tests in `tests/tests/`: locating the real
//! binaries and running them in a sandbox with its own `WEFT_HOME`.

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
