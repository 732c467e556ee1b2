//! A hermetic Podman Docker-API service for the sandbox tests: all of its
//! state in a temp dir, in its own mount namespace (tests/podman/service.sh),
//! with the test image `weft-test:latest` (busybox + bash, no registry)
//! imported through the API. Dropping it removes its containers, stops the
//! service and leaves no process, cgroup or mount (tests/podman/stop.sh).
//!
//! The service needs root (a mount namespace, runc) and the Debian packages
//! podman, runc, catatonit, busybox-static and bash-static, which
//! `make test` installs. Without them the tests that need the service fail
//! saying so; they never skip.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The image every service has, as create requests name it.
pub const TEST_IMAGE: &str = "weft-test:latest";

/// How long the service may take to answer its first `_ping`: ~0.3 s on
/// an idle machine, much more under a loaded CI.
const START_BOUND: Duration = Duration::from_secs(60);

/// What the tests need installed, and where.
const NEEDED: [(&str, &str); 6] = [
    ("podman", "/usr/bin/podman"),
    ("runc", "/usr/sbin/runc"),
    ("catatonit", "/usr/libexec/podman/catatonit"),
    ("busybox-static", "/bin/busybox"),
    ("bash-static", "/bin/bash-static"),
    ("unshare (util-linux)", "/usr/bin/unshare"),
];

/// A running service; see the module docs.
pub struct PodmanService {
    dir: PathBuf,
    child: Child,
}

impl PodmanService {
    /// Starts a service in a new temp dir and imports [`TEST_IMAGE`].
    ///
    /// # Panics
    /// When podman or the image's packages are not installed (the message
    /// says `make test` installs them), or the service does not come up.
    #[must_use]
    pub fn start() -> PodmanService {
        let missing: Vec<&str> = NEEDED
            .iter()
            .filter(|(_, path)| !Path::new(path).exists())
            .map(|(name, _)| *name)
            .collect();
        assert!(
            missing.is_empty(),
            "the sandbox tests need a Podman service, but {} missing; `make test` installs them \
             (Makefile APT_PACKAGES), or: apt-get install -y --no-install-recommends \
             podman runc catatonit busybox-static bash-static",
            if missing.len() == 1 {
                format!("{} is", missing[0])
            } else {
                format!("{} are", missing.join(", "))
            }
        );
        let dir = fresh_dir();
        let log = std::fs::File::create(dir.with_extension("log"))
            .unwrap_or_else(|e| panic!("cannot create the service's log: {e}"));
        let log_err = log
            .try_clone()
            .unwrap_or_else(|e| panic!("cannot share the service's log: {e}"));
        let child = Command::new("sh")
            .arg(scripts().join("service.sh"))
            .arg(&dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start tests/podman/service.sh: {e}"));
        let mut service = PodmanService { dir, child };
        service.wait_for_ping();
        service.import_test_image();
        service
    }

    /// The service's address, as `DOCKER_HOST` spells it.
    #[must_use]
    pub fn docker_host(&self) -> String {
        format!("unix://{}", self.socket().display())
    }

    /// The directory holding all of the service's state.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The service's process id (podman itself: tests/podman/service.sh
    /// execs it), for reading its CPU time.
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The service's socket.
    #[must_use]
    pub fn socket(&self) -> PathBuf {
        self.dir.join("podman.sock")
    }

    fn wait_for_ping(&mut self) {
        let deadline = Instant::now() + START_BOUND;
        loop {
            if let Ok((200, _)) = request(&self.socket(), "GET", "/_ping", None) {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "the Podman service exited ({status}) before answering:\n{}",
                    self.log()
                );
            }
            assert!(
                Instant::now() < deadline,
                "the Podman service did not answer /_ping within {}s:\n{}",
                START_BOUND.as_secs(),
                self.log()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn import_test_image(&self) {
        let tar = self.dir.with_extension("rootfs.tar");
        let built = Command::new("sh")
            .arg(scripts().join("rootfs.sh"))
            .arg(&tar)
            .output()
            .unwrap_or_else(|e| panic!("cannot run tests/podman/rootfs.sh: {e}"));
        assert!(
            built.status.success(),
            "tests/podman/rootfs.sh failed: {}",
            String::from_utf8_lossy(&built.stderr)
        );
        let bytes =
            std::fs::read(&tar).unwrap_or_else(|e| panic!("cannot read {}: {e}", tar.display()));
        let _ = std::fs::remove_file(&tar);
        // Without this content type Podman imports an empty image, silently.
        let (status, body) = request(
            &self.socket(),
            "POST",
            "/v1.41/images/create?fromSrc=-&repo=weft-test&tag=latest",
            Some(("application/x-tar", &bytes)),
        )
        .unwrap_or_else(|e| panic!("importing the test image: {e}"));
        assert!(
            status == 200 && body.contains("sha256:") && !body.contains("\"error"),
            "importing the test image: {status} {body}"
        );
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.with_extension("log")).unwrap_or_default()
    }

    /// Ids of every container the service has, running or not.
    ///
    /// # Panics
    /// When the service does not answer.
    #[must_use]
    pub fn container_ids(&self) -> Vec<String> {
        let (status, body) = request(&self.socket(), "GET", "/v1.41/containers/json?all=1", None)
            .unwrap_or_else(|e| panic!("listing containers: {e}"));
        assert_eq!(status, 200, "listing containers: {body}");
        let list: serde_json::Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("listing containers: {e}: {body}"));
        list.as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["Id"].as_str().map(str::to_string))
            .collect()
    }
}

impl PodmanService {
    /// One request to the service's Docker API over a connection of its
    /// own (`Connection: close`): the status and the body as text, read
    /// to its end (an attached exec's stream included), 64 MiB at most.
    /// For what `weft::sandbox::docker` has no call for: timing an exec's
    /// API calls one by one (tests/benches/sandbox.rs).
    ///
    /// # Errors
    /// The service does not answer, or not in HTTP.
    pub fn api(
        &self,
        method: &str,
        path: &str,
        json_body: Option<&[u8]>,
    ) -> Result<(u16, String), String> {
        request(
            &self.socket(),
            method,
            path,
            json_body.map(|b| ("application/json", b)),
        )
    }

    /// Kills a container's processes (SIGKILL), as a host reboot or the
    /// fallback of a cancel would; the container stays, stopped.
    ///
    /// # Panics
    /// When the service refuses.
    pub fn kill_container(&self, id: &str) {
        let (status, body) = request(
            &self.socket(),
            "POST",
            &format!("/v1.41/containers/{id}/kill?signal=KILL"),
            None,
        )
        .unwrap_or_else(|e| panic!("killing container {id}: {e}"));
        assert_eq!(status, 204, "killing container {id}: {body}");
    }
}

impl Drop for PodmanService {
    fn drop(&mut self) {
        // Containers outlive the service; remove them while it answers.
        if let Ok((200, _)) = request(&self.socket(), "GET", "/_ping", None) {
            for id in self.container_ids() {
                let _ = request(
                    &self.socket(),
                    "DELETE",
                    &format!("/v1.41/containers/{id}?force=1&v=1"),
                    None,
                );
            }
        }
        let stopped = Command::new("sh")
            .arg(scripts().join("stop.sh"))
            .arg(&self.dir)
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(self.dir.with_extension("log"));
        if !matches!(stopped, Ok(s) if s.success()) && !std::thread::panicking() {
            panic!("tests/podman/stop.sh {} failed", self.dir.display());
        }
    }
}

fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("podman")
}

/// A new directory for one service; short, because the socket's path must
/// fit in 108 bytes.
fn fresh_dir() -> PathBuf {
    let base = std::env::temp_dir();
    for attempt in 0u32..1000 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir = base.join(format!(
            "weft-podman-{}-{:x}",
            std::process::id(),
            nanos ^ attempt
        ));
        if std::fs::create_dir(&dir).is_ok() {
            return dir;
        }
    }
    panic!(
        "cannot create a directory for the Podman service under {}",
        base.display()
    );
}

/// One HTTP/1.1 request over the unix socket; the status and the body as
/// text (chunk sizes included when the reply is chunked: callers only look
/// for words in it, or parse replies that come with a length).
fn request(
    socket: &Path,
    method: &str,
    path: &str,
    body: Option<(&str, &[u8])>,
) -> Result<(u16, String), String> {
    let mut stream = UnixStream::connect(socket).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .map_err(|e| e.to_string())?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: d\r\nConnection: close\r\n");
    if let Some((content_type, bytes)) = body {
        head.push_str(&format!(
            "Content-Type: {content_type}\r\nContent-Length: {}\r\n",
            bytes.len()
        ));
    }
    head.push_str("\r\n");
    stream
        .write_all(head.as_bytes())
        .map_err(|e| e.to_string())?;
    if let Some((_, bytes)) = body {
        stream.write_all(bytes).map_err(|e| e.to_string())?;
    }
    let mut reply = Vec::new();
    stream
        .take(64 << 20)
        .read_to_end(&mut reply)
        .map_err(|e| e.to_string())?;
    let reply = String::from_utf8_lossy(&reply);
    let (head, rest) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("not an HTTP reply: {head}"))?;
    let rest = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(rest)
    } else {
        rest.to_string()
    };
    Ok((status, rest))
}

/// The body of a chunked reply.
fn dechunk(mut text: &str) -> String {
    let mut body = String::new();
    while let Some((size, rest)) = text.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        let (Some(chunk), Some(after)) = (rest.get(..size), rest.get(size..)) else {
            break;
        };
        if size == 0 {
            break;
        }
        body.push_str(chunk);
        text = after.trim_start_matches("\r\n");
    }
    body
}

/// Runs `script` with bash in `container`, in the work dir, to its end.
///
/// # Panics
/// When the engine refuses the exec.
pub async fn bash(
    engine: &weft::sandbox::docker::Engine,
    container: &str,
    script: &str,
) -> weft::sandbox::docker::ExecOutcome {
    let argv = ["bash", "-c", script].map(str::to_string);
    engine
        .exec(
            container,
            weft::sandbox::docker::Command::new(&argv),
            |_, _| {},
            std::future::pending(),
        )
        .await
        .unwrap_or_else(|e| panic!("exec of {script:?}: {e}"))
}
