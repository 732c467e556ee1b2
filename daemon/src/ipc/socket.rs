//! The local socket itself, through the `interprocess` crate: a Unix domain
//! socket here (a named pipe on Windows, later). The client connects with
//! [`connect`]; the daemon binds with [`listen`], which replaces a stale
//! socket but never steals a live one.

use std::io;
use std::path::{Path, PathBuf};

use interprocess::local_socket::tokio::prelude::*;
use interprocess::local_socket::tokio::{Listener, Stream};
use interprocess::local_socket::{GenericFilePath, ListenerOptions, Name};
use interprocess::os::unix::local_socket::ListenerOptionsExt;

use super::paths::SOCKET_MODE;

fn name(socket: &Path) -> io::Result<Name<'_>> {
    socket.to_fs_name::<GenericFilePath>()
}

/// Connects to the socket at `socket`. The error is the OS's: `NotFound`
/// when there is no socket file, `ConnectionRefused` when nobody listens on
/// it (a daemon that died), `PermissionDenied` for another user's socket.
pub async fn connect(socket: &Path) -> io::Result<Stream> {
    Stream::connect(name(socket)?).await
}

/// Why the daemon cannot listen.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    /// A daemon answers on the socket already; it is left alone.
    #[error("another daemon is listening on {}", socket.display())]
    InUse { socket: PathBuf },
    #[error("cannot listen on {}: {source}", socket.display())]
    Io {
        socket: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl ListenError {
    /// A stable, machine-readable code.
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            ListenError::InUse { .. } => "daemon.socket_in_use",
            ListenError::Io { .. } => "daemon.socket_io",
        }
    }
}

/// Binds the socket at `socket` with mode 0600 (its directory must exist;
/// see [`super::DaemonPaths::ensure`]). A socket file left by a dead
/// daemon (connecting is refused) is removed and bound again; one that
/// accepts a connection belongs to a live daemon and gives
/// [`ListenError::InUse`].
///
/// Call it while holding the daemon's lock file, so two starting daemons
/// cannot both decide the socket is stale. The listener removes the socket
/// file when dropped.
pub fn listen(socket: &Path) -> Result<Listener, ListenError> {
    let io_error = |source| ListenError::Io {
        socket: socket.to_path_buf(),
        source,
    };
    match bind(socket) {
        Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
            match std::os::unix::net::UnixStream::connect(socket) {
                Ok(_) => Err(ListenError::InUse {
                    socket: socket.to_path_buf(),
                }),
                Err(probe) if probe.kind() == io::ErrorKind::ConnectionRefused => {
                    std::fs::remove_file(socket).map_err(io_error)?;
                    bind(socket).map_err(io_error)
                }
                Err(_) => Err(io_error(e)),
            }
        }
        other => other.map_err(io_error),
    }
}

/// Whether the peer of `stream` is this process's user. The socket's 0600
/// mode inside a 0700 directory already keeps other users out; this is the
/// second lock, for a socket whose permissions were loosened by hand.
/// Where the platform cannot tell the peer's uid, the permissions alone
/// decide (the peer is allowed).
#[must_use]
pub(crate) fn peer_is_same_user(stream: &Stream) -> bool {
    match stream.peer_creds() {
        Ok(creds) => creds
            .euid()
            .is_none_or(|uid| uid == rustix::process::geteuid().as_raw()),
        Err(_) => true,
    }
}

fn bind(socket: &Path) -> io::Result<Listener> {
    let options = || -> io::Result<ListenerOptions<'_>> {
        Ok(ListenerOptions::new()
            .name(name(socket)?)
            .reclaim_name(true))
    };
    match options()?.mode(SOCKET_MODE).create_tokio() {
        // Platforms that cannot set the mode before binding (macOS): chmod
        // right after. The 0700 directory keeps others out meanwhile.
        Err(e) if e.kind() == io::ErrorKind::Unsupported => {
            use std::os::unix::fs::PermissionsExt;
            let listener = options()?.create_tokio()?;
            std::fs::set_permissions(socket, std::fs::Permissions::from_mode(SOCKET_MODE))?;
            Ok(listener)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[tokio::test]
    async fn a_listening_socket_is_private_and_not_stolen() {
        let temp = tempfile::tempdir().expect("temp dir");
        let socket = temp.path().join("weftd.sock");
        let listener = listen(&socket).expect("listen");
        let mode = std::fs::metadata(&socket)
            .expect("socket")
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600, "only the user may connect");
        let error = listen(&socket).expect_err("a live socket is never stolen");
        assert_eq!(error.code(), "daemon.socket_in_use");
        drop(listener);
        assert!(!socket.exists(), "the listener removes its socket file");
    }

    #[tokio::test]
    async fn a_stale_socket_is_replaced() {
        let temp = tempfile::tempdir().expect("temp dir");
        let socket = temp.path().join("weftd.sock");
        // A daemon that died leaves its socket file behind.
        drop(std::os::unix::net::UnixListener::bind(&socket).expect("bind"));
        assert!(socket.exists());
        let _listener = listen(&socket).expect("the stale socket is replaced");
        connect(&socket).await.expect("the new listener answers");
    }
}
