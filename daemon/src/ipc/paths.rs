//! Where the daemon of a [`Home`] lives: its runtime directory, socket,
//! lock file, pid file and log.
//!
//! Each `WEFT_HOME` has its own daemon, so everything hangs off the home:
//!
//! - the runtime directory `$WEFT_HOME/run/` (mode 0700) holds
//!   `weftd.lock`, `weftd.pid`, `weftd.log` and, normally, `weftd.sock`;
//! - the socket is `$WEFT_HOME/run/weftd.sock` unless that path is longer
//!   than [`MAX_SOCKET_PATH_BYTES`] (Unix socket paths are limited to about
//!   104 bytes). A long home instead gets `$XDG_RUNTIME_DIR/weft/<hash>.sock`
//!   when `XDG_RUNTIME_DIR` is set (absolute) and the result is short enough,
//!   else `/tmp/weft-<uid>/<hash>.sock`, where `<hash>` is the first 16 hex
//!   digits of the SHA-256 of the canonical home path. Both fallback
//!   directories are 0700 and must belong to the user. `/tmp` is used
//!   literally, not `$TMPDIR`, so a CLI and a daemon with different
//!   temporary directories still agree.
//!
//! The rule is a pure function of the home path, `XDG_RUNTIME_DIR` and the
//! uid, so the CLI, the app and the daemon always compute the same socket.

use std::fs::DirBuilder;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::store::Home;

/// The longest socket path used as is, in bytes. `sun_path` holds 108
/// bytes on Linux and 104 on macOS, including the terminating NUL; 100
/// leaves a margin.
pub(crate) const MAX_SOCKET_PATH_BYTES: usize = 100;

/// The mode of every directory the daemon's files live in.
pub(crate) const PRIVATE_DIR_MODE: u32 = 0o700;

/// The mode of the socket file.
pub(crate) const SOCKET_MODE: u32 = 0o600;

/// The daemon's files for one home.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonPaths {
    /// `$WEFT_HOME/run/`, mode 0700.
    pub runtime_dir: PathBuf,
    /// The socket clients connect to (see the module docs for the rule).
    pub socket: PathBuf,
    /// `run/weftd.lock`: held (flock) by the running daemon; the single
    /// instance guard.
    pub lock: PathBuf,
    /// `run/weftd.pid`: the running daemon's pid.
    pub pid: PathBuf,
    /// `run/weftd.log`: where a detached daemon writes its log.
    pub log: PathBuf,
}

impl DaemonPaths {
    /// The paths for `home`, reading `XDG_RUNTIME_DIR` and the uid of this
    /// process. Creates nothing; see [`DaemonPaths::ensure`].
    #[must_use]
    pub fn for_home(home: &Home) -> DaemonPaths {
        let xdg = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
        DaemonPaths::resolve(
            home.root(),
            xdg.as_deref(),
            rustix::process::getuid().as_raw(),
        )
    }

    /// The paths for the home at `root`, given `XDG_RUNTIME_DIR` and the
    /// uid: the rule of the module docs, without touching the environment.
    #[must_use]
    pub fn resolve(root: &Path, xdg_runtime_dir: Option<&Path>, uid: u32) -> DaemonPaths {
        let root = canonical(root);
        let runtime_dir = root.join("run");
        let preferred = runtime_dir.join("weftd.sock");
        let socket = if fits(&preferred) {
            preferred
        } else {
            let name = format!("{}.sock", home_hash(&root));
            xdg_runtime_dir
                .filter(|dir| dir.is_absolute())
                .map(|dir| dir.join("weft").join(&name))
                .filter(|socket| fits(socket))
                .unwrap_or_else(|| PathBuf::from(format!("/tmp/weft-{uid}")).join(&name))
        };
        DaemonPaths {
            lock: runtime_dir.join("weftd.lock"),
            pid: runtime_dir.join("weftd.pid"),
            log: runtime_dir.join("weftd.log"),
            runtime_dir,
            socket,
        }
    }

    /// The directory holding the socket: the runtime directory, or a
    /// fallback directory for a long home.
    #[must_use]
    pub(crate) fn socket_dir(&self) -> &Path {
        self.socket.parent().unwrap_or(&self.runtime_dir)
    }

    /// The desktop app's single-instance socket, beside the daemon's
    /// (`weftd.app.sock`, or `<hash>.app.sock` in a fallback directory): a
    /// second app started for the same home hands its route to the first
    /// over it. Four bytes longer than the daemon's socket, which the
    /// margin of [`MAX_SOCKET_PATH_BYTES`] allows.
    #[must_use]
    pub fn app_socket(&self) -> PathBuf {
        let stem = self
            .socket
            .file_stem()
            .map_or_else(|| "weftd".into(), |s| s.to_string_lossy().into_owned());
        self.socket.with_file_name(format!("{stem}.app.sock"))
    }

    /// Creates the runtime directory and the socket's directory, each 0700
    /// (tightening an existing one that is looser), and checks they belong
    /// to this user. The daemon calls this before binding.
    pub fn ensure(&self) -> Result<(), PathsError> {
        ensure_private_dir(&self.runtime_dir)?;
        if self.socket_dir() != self.runtime_dir {
            ensure_private_dir(self.socket_dir())?;
        }
        Ok(())
    }
}

/// The home path made absolute and, when it exists, canonical, so that two
/// spellings of one home find the same socket.
fn canonical(root: &Path) -> PathBuf {
    std::fs::canonicalize(root)
        .or_else(|_| std::path::absolute(root))
        .unwrap_or_else(|_| root.to_path_buf())
}

fn fits(socket: &Path) -> bool {
    socket.as_os_str().len() <= MAX_SOCKET_PATH_BYTES
}

/// The first 16 hex digits of the SHA-256 of the home path's bytes.
fn home_hash(root: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let digest = Sha256::digest(root.as_os_str().as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// Why a daemon directory cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PathsError {
    #[error("cannot create or inspect {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a directory (a symlink or a file is in the way); remove it", path.display())]
    NotADirectory { path: PathBuf },
    #[error(
        "{} belongs to uid {owner}, not to you (uid {uid}); someone else may be intercepting Weft's socket: remove it",
        path.display()
    )]
    NotOwned { path: PathBuf, owner: u32, uid: u32 },
    #[error("{} has mode {mode:03o}; it must be private (0700): run `chmod 700 {}`", path.display(), path.display())]
    NotPrivate { path: PathBuf, mode: u32 },
}

impl PathsError {
    /// A stable, machine-readable code.
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            PathsError::Io { .. } => "daemon.dir_io",
            PathsError::NotADirectory { .. } => "daemon.dir_not_a_directory",
            PathsError::NotOwned { .. } => "daemon.dir_not_owned",
            PathsError::NotPrivate { .. } => "daemon.dir_not_private",
        }
    }
}

/// Creates `dir` (and missing parents, also 0700) as a 0700
/// directory, or tightens an existing directory of this user to 0700. Fails
/// when `dir` is a symlink, not a directory, or another user's.
pub(crate) fn ensure_private_dir(dir: &Path) -> Result<(), PathsError> {
    let io = |source| PathsError::Io {
        path: dir.to_path_buf(),
        source,
    };
    if let Some(parent) = dir.parent() {
        // A missing parent is the home (or a fallback folder): private too.
        DirBuilder::new()
            .recursive(true)
            .mode(PRIVATE_DIR_MODE)
            .create(parent)
            .map_err(io)?;
    }
    match DirBuilder::new().mode(PRIVATE_DIR_MODE).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io(e)),
    }
    match check_private_dir(dir) {
        Err(PathsError::NotPrivate { .. }) => {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(PRIVATE_DIR_MODE))
                .map_err(io)?;
            check_private_dir(dir)
        }
        other => other,
    }
}

/// Checks that `dir` is a real directory (not a symlink), owned by this
/// process's user, with no permissions for group or others.
pub(crate) fn check_private_dir(dir: &Path) -> Result<(), PathsError> {
    let meta = std::fs::symlink_metadata(dir).map_err(|source| PathsError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    if !meta.file_type().is_dir() {
        return Err(PathsError::NotADirectory {
            path: dir.to_path_buf(),
        });
    }
    let uid = rustix::process::getuid().as_raw();
    if meta.uid() != uid {
        return Err(PathsError::NotOwned {
            path: dir.to_path_buf(),
            owner: meta.uid(),
            uid,
        });
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(PathsError::NotPrivate {
            path: dir.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode_of(path: &Path) -> u32 {
        std::fs::metadata(path)
            .expect("metadata")
            .permissions()
            .mode()
            & 0o777
    }

    #[test]
    fn a_short_home_keeps_its_socket_in_its_runtime_dir() {
        let paths = DaemonPaths::resolve(Path::new("/h/weft"), None, 1000);
        assert_eq!(paths.runtime_dir, Path::new("/h/weft/run"));
        assert_eq!(paths.socket, Path::new("/h/weft/run/weftd.sock"));
        assert_eq!(paths.lock, Path::new("/h/weft/run/weftd.lock"));
        assert_eq!(paths.pid, Path::new("/h/weft/run/weftd.pid"));
        assert_eq!(paths.socket_dir(), paths.runtime_dir);
    }

    #[test]
    fn a_long_home_puts_its_socket_under_xdg_runtime_dir_by_hash() {
        let long = PathBuf::from(format!("/h/{}", "x".repeat(120)));
        let paths = DaemonPaths::resolve(&long, Some(Path::new("/run/user/1000")), 1000);
        assert!(paths.socket.starts_with("/run/user/1000/weft"), "{paths:?}");
        assert!(paths.socket.as_os_str().len() <= MAX_SOCKET_PATH_BYTES);
        assert_eq!(
            paths.lock,
            long.join("run/weftd.lock"),
            "the lock stays in the home: it has no length limit"
        );
        let name = paths
            .socket
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        assert_eq!(name.len(), "0123456789abcdef.sock".len(), "{name}");
    }

    #[test]
    fn the_app_socket_sits_beside_the_daemon_socket_one_per_home() {
        let short = DaemonPaths::resolve(Path::new("/h/weft"), None, 1000);
        assert_eq!(short.app_socket(), Path::new("/h/weft/run/weftd.app.sock"));
        let xdg = Some(Path::new("/run/user/1000"));
        let a = DaemonPaths::resolve(
            &PathBuf::from(format!("/h/{}/a", "x".repeat(120))),
            xdg,
            1000,
        );
        let b = DaemonPaths::resolve(
            &PathBuf::from(format!("/h/{}/b", "x".repeat(120))),
            xdg,
            1000,
        );
        assert_eq!(a.app_socket().parent(), a.socket.parent());
        assert_ne!(a.app_socket(), b.app_socket(), "two homes, two apps");
        assert!(
            a.app_socket().as_os_str().len() <= 104,
            "fits sun_path everywhere"
        );
    }

    #[test]
    fn without_xdg_runtime_dir_a_long_home_falls_back_to_a_per_user_tmp_dir() {
        let long = PathBuf::from(format!("/h/{}", "x".repeat(120)));
        for xdg in [None, Some(Path::new("relative/dir"))] {
            let paths = DaemonPaths::resolve(&long, xdg, 1234);
            assert!(paths.socket.starts_with("/tmp/weft-1234"), "{paths:?}");
        }
    }

    #[test]
    fn different_homes_get_different_sockets() {
        let a = PathBuf::from(format!("/h/{}/a", "x".repeat(120)));
        let b = PathBuf::from(format!("/h/{}/b", "x".repeat(120)));
        let xdg = Some(Path::new("/run/user/1000"));
        assert_ne!(
            DaemonPaths::resolve(&a, xdg, 1000).socket,
            DaemonPaths::resolve(&b, xdg, 1000).socket,
            "tests run several daemons at once with different homes"
        );
        assert_ne!(
            DaemonPaths::resolve(Path::new("/h/a"), xdg, 1000).socket,
            DaemonPaths::resolve(Path::new("/h/b"), xdg, 1000).socket
        );
    }

    #[test]
    fn two_spellings_of_one_home_find_the_same_socket() {
        let temp = tempfile::tempdir().expect("temp dir");
        let home = temp.path().join("home");
        std::fs::create_dir(&home).expect("mkdir");
        let other = temp.path().join("home/../home/.");
        assert_eq!(
            DaemonPaths::resolve(&home, None, 1).socket,
            DaemonPaths::resolve(&other, None, 1).socket
        );
    }

    #[test]
    fn ensure_creates_the_runtime_dir_private() {
        let temp = tempfile::tempdir().expect("temp dir");
        let paths = DaemonPaths::for_home(&Home::at(temp.path().join("home")));
        paths.ensure().expect("ensure");
        assert_eq!(mode_of(&paths.runtime_dir), 0o700);
        paths.ensure().expect("ensure is idempotent");
    }

    #[test]
    fn ensure_tightens_a_loose_directory_and_check_refuses_it() {
        let temp = tempfile::tempdir().expect("temp dir");
        let dir = temp.path().join("run");
        std::fs::create_dir(&dir).expect("mkdir");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let error = check_private_dir(&dir).expect_err("0755 is not private");
        assert_eq!(error.code(), "daemon.dir_not_private");
        ensure_private_dir(&dir).expect("ensure fixes our own directory");
        assert_eq!(mode_of(&dir), 0o700);
    }

    #[test]
    fn a_symlink_or_file_in_place_of_the_directory_is_refused() {
        let temp = tempfile::tempdir().expect("temp dir");
        let target = temp.path().join("elsewhere");
        std::fs::create_dir(&target).expect("mkdir");
        let link = temp.path().join("run");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        let error = ensure_private_dir(&link).expect_err("a symlink could point anywhere");
        assert_eq!(error.code(), "daemon.dir_not_a_directory");
        let file = temp.path().join("file");
        std::fs::write(&file, "").expect("write");
        assert_eq!(
            check_private_dir(&file).expect_err("a file").code(),
            "daemon.dir_not_a_directory"
        );
    }
}
