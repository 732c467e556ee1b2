//! A hermetic ssh server for the `ssh://` engine tests, with no port and
//! no change to the machine's ssh setup: every connection runs its own
//! `sshd -i` (inetd mode) as the client's `ProxyCommand`, so the client
//! talks to it over a pipe. Its host key, the client's keys, the
//! authorized keys and both configurations are in a temp dir; the client
//! is pointed at them with `ssh -F DIR/ssh_config` (through
//! `WEFT_SSH_COMMAND` or [`SshServer::ssh_command`]).
//!
//! It needs root (sshd logs in as root here) and the Debian packages
//! openssh-server and openssh-client, which `make test` installs. Without
//! them the tests that need it fail saying so; they never skip.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The host name tests put in their `ssh://` addresses; only the client
/// configuration knows it.
pub const HOST: &str = "weft-test";

/// The user sshd logs in.
pub const USER: &str = "root";

const SSHD: &str = "/usr/sbin/sshd";
const SSH: &str = "/usr/bin/ssh";
const SSH_KEYGEN: &str = "/usr/bin/ssh-keygen";

/// sshd's privilege separation directory, which it refuses to run
/// without; the package's service creates it at boot, which a test
/// machine without an init may not have done.
const PRIVSEP_DIR: &str = "/run/sshd";

/// Keys and configurations for logging in to this machine over a pipe;
/// see the module docs. Dropping it removes the directory (it starts no
/// process itself: each ssh client runs its own sshd).
pub struct SshServer {
    dir: tempfile::TempDir,
}

impl SshServer {
    /// Writes a host key, an authorized client key, a client key that is
    /// not authorized, and the configurations.
    ///
    /// # Panics
    /// When openssh is not installed (the message says `make test`
    /// installs it), or a key or file cannot be made.
    #[must_use]
    pub fn new() -> SshServer {
        let missing: Vec<&str> = [SSHD, SSH, SSH_KEYGEN]
            .into_iter()
            .filter(|path| !Path::new(path).exists())
            .collect();
        assert!(
            missing.is_empty(),
            "the ssh:// engine tests need {}; `make test` installs them (Makefile APT_PACKAGES), or: \
             apt-get install -y --no-install-recommends openssh-server openssh-client",
            missing.join(", ")
        );
        if !Path::new(PRIVSEP_DIR).is_dir() {
            std::fs::create_dir_all(PRIVSEP_DIR)
                .unwrap_or_else(|e| panic!("cannot create {PRIVSEP_DIR} for sshd: {e}"));
        }
        let dir = tempfile::Builder::new()
            .prefix("weft-sshd-")
            .tempdir()
            .unwrap_or_else(|e| panic!("cannot create a temp dir: {e}"));
        let server = SshServer { dir };
        for key in ["hostkey", "clientkey", "strangerkey"] {
            server.keygen(key);
        }
        let d = server.dir().display().to_string();
        let read = |name: &str| {
            std::fs::read_to_string(server.path(name))
                .unwrap_or_else(|e| panic!("cannot read {name}: {e}"))
        };
        server.write("authorized_keys", &read("clientkey.pub"));
        // Pinned, so that the client checks the host key strictly.
        server.write("known_hosts", &format!("{HOST} {}", read("hostkey.pub")));
        server.write(
            "sshd_config",
            &format!(
                "HostKey {d}/hostkey\n\
                 AuthorizedKeysFile {d}/authorized_keys\n\
                 PermitRootLogin prohibit-password\n\
                 PasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\n\
                 StrictModes no\n\
                 UsePAM no\n\
                 AllowStreamLocalForwarding yes\n\
                 PidFile none\n"
            ),
        );
        for (config, key) in [
            ("ssh_config", "clientkey"),
            ("stranger_config", "strangerkey"),
        ] {
            // The shell between ssh and sshd names the dir on its command
            // line, so a leftover can be found ([`SshServer::processes`]);
            // sshd renames itself ("sshd: root").
            server.write(
                config,
                &format!(
                    "Host {HOST}\n\
                     \x20 ProxyCommand /bin/sh -c '{SSHD} -i -f {d}/sshd_config; exit'\n\
                     \x20 IdentityFile {d}/{key}\n\
                     \x20 IdentitiesOnly yes\n\
                     \x20 UserKnownHostsFile {d}/known_hosts\n\
                     \x20 StrictHostKeyChecking yes\n"
                ),
            );
        }
        server
    }

    /// `WEFT_SSH_COMMAND` for a client whose key is authorized.
    #[must_use]
    pub fn ssh_command(&self) -> String {
        format!("ssh -F {}", self.path("ssh_config").display())
    }

    /// `WEFT_SSH_COMMAND` for a client whose key is not.
    #[must_use]
    pub fn stranger_ssh_command(&self) -> String {
        format!("ssh -F {}", self.path("stranger_config").display())
    }

    /// The `ssh://` address of the engine socket `remote_socket`.
    #[must_use]
    pub fn address(&self, remote_socket: &Path) -> String {
        format!("ssh://{USER}@{HOST}{}", remote_socket.display())
    }

    /// The directory holding the keys and configurations.
    #[must_use]
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Processes whose command line names the directory: ssh clients
    /// started with its configuration, and the shell in front of each
    /// sshd (which lives as long as its sshd).
    #[must_use]
    pub fn processes(&self) -> Vec<String> {
        crate::processes_naming(self.dir())
    }

    /// Waits until [`SshServer::processes`] is empty, at most `bound`;
    /// what is left otherwise.
    ///
    /// # Errors
    /// The processes still there at the end.
    pub fn wait_for_no_process(&self, bound: Duration) -> Result<(), Vec<String>> {
        let deadline = Instant::now() + bound;
        loop {
            let left = self.processes();
            if left.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(left);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir().join(name)
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.path(name), text)
            .unwrap_or_else(|e| panic!("cannot write {name}: {e}"));
    }

    fn keygen(&self, name: &str) {
        let out = Command::new(SSH_KEYGEN)
            .args(["-q", "-t", "ed25519", "-N", "", "-C", "weft-test", "-f"])
            .arg(self.path(name))
            .output()
            .unwrap_or_else(|e| panic!("cannot run ssh-keygen: {e}"));
        assert!(
            out.status.success(),
            "ssh-keygen {name} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Default for SshServer {
    fn default() -> Self {
        SshServer::new()
    }
}
