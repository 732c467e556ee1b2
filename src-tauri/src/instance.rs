//! One app window per home. The app is started again with a `weft://` link
//! (a clicked gate notification, `weft open`, the desktop's scheme
//! handler); when the app is already open, that second process must not
//! open a second window: it hands its link to
//! the running app over a Unix socket beside the daemon's
//! ([`DaemonPaths::app_socket`]) and exits. The running app raises its
//! window and tells the UI to open the link (event [`crate::OPEN_ROUTE_EVENT`]).
//!
//! The exchange is one line each way: the JSON of `Option<DeepLink>`
//! (`null` for a plain start, which only raises the window), answered by
//! `ok`. Anything that goes wrong here only costs the single-instance
//! behaviour, never the app: it then starts as if it were alone.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::time::Duration;

use weft::ipc::paths::DaemonPaths;
use weft::store::Home;
use weft::views::DeepLink;

/// How long either side waits on the other.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(3);
/// The longest line accepted: a link is at most 2 KiB, escaped as JSON.
const MAX_LINE: u64 = 64 * 1024;

/// The outcome of [`claim`].
pub enum Claim {
    /// No app of this home runs: start, and serve later starts on the
    /// listener (none when the socket could not be bound).
    First(Option<UnixListener>),
    /// A running app took the route; this process should exit.
    HandedOver,
}

/// Hands `route` to the home's running app, or claims the home for this
/// one.
pub fn claim(home: &Home, route: Option<&DeepLink>) -> Claim {
    let paths = DaemonPaths::for_home(home);
    let socket = paths.app_socket();
    match hand_over(&socket, route) {
        Ok(()) => return Claim::HandedOver,
        // Nobody listens (no socket file, or one left by an app that
        // died): this is the first app.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
            ) => {}
        Err(e) => {
            eprintln!(
                "weft-desktop: the app already open for this home did not answer on {} ({e}); opening another window",
                socket.display()
            );
            return Claim::First(None);
        }
    }
    let listener = paths
        .ensure()
        .map_err(|e| std::io::Error::other(e.to_string()))
        .and_then(|()| bind(&socket));
    match listener {
        Ok(listener) => Claim::First(Some(listener)),
        Err(e) => {
            eprintln!(
                "weft-desktop: cannot listen on {} ({e}); a second start will open a second window",
                socket.display()
            );
            Claim::First(None)
        }
    }
}

/// Sends `route` to the app listening on `socket` and waits for its `ok`.
fn hand_over(socket: &Path, route: Option<&DeepLink>) -> std::io::Result<()> {
    let mut stream = UnixStream::connect(socket)?;
    stream.set_read_timeout(Some(EXCHANGE_TIMEOUT))?;
    stream.set_write_timeout(Some(EXCHANGE_TIMEOUT))?;
    let mut line = serde_json::to_vec(&route).map_err(std::io::Error::other)?;
    line.push(b'\n');
    stream.write_all(&line)?;
    let mut reply = String::new();
    BufReader::new(stream.take(16)).read_line(&mut reply)?;
    if reply.trim_end() == "ok" {
        Ok(())
    } else {
        Err(std::io::Error::other(format!("unexpected reply {reply:?}")))
    }
}

/// Binds `socket` (mode 0600 inside the 0700 runtime directory), replacing
/// a file left by an app that died.
fn bind(socket: &Path) -> std::io::Result<UnixListener> {
    use std::os::unix::fs::PermissionsExt;
    if socket.exists() {
        // [`claim`] only gets here when connecting was refused: stale.
        std::fs::remove_file(socket)?;
    }
    let listener = UnixListener::bind(socket)?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// Serves later starts on a background thread: each one's route goes to
/// `open` (`None` for a plain start).
pub fn serve(listener: UnixListener, open: impl Fn(Option<DeepLink>) + Send + 'static) {
    let spawned = std::thread::Builder::new()
        .name("single-instance".into())
        .spawn(move || {
            for stream in listener.incoming() {
                match stream.and_then(receive) {
                    Ok(route) => open(route),
                    Err(e) => eprintln!("weft-desktop: a second start sent nothing usable ({e})"),
                }
            }
        });
    if let Err(e) = spawned {
        eprintln!("weft-desktop: cannot serve later starts ({e})");
    }
}

/// Reads one start's route and acknowledges it.
fn receive(stream: UnixStream) -> std::io::Result<Option<DeepLink>> {
    stream.set_read_timeout(Some(EXCHANGE_TIMEOUT))?;
    stream.set_write_timeout(Some(EXCHANGE_TIMEOUT))?;
    let mut line = String::new();
    BufReader::new((&stream).take(MAX_LINE)).read_line(&mut line)?;
    let route: Option<DeepLink> = serde_json::from_str(&line).map_err(std::io::Error::other)?;
    // Any process of this user can connect: its link is checked as one
    // from the command line is.
    let route = route
        .map(|link| DeepLink::parse(link.path()))
        .transpose()
        .map_err(std::io::Error::other)?;
    (&stream).write_all(b"ok\n")?;
    Ok(route)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn route() -> DeepLink {
        DeepLink::stage("01RUN", "build step", Some(2), Some("output")).expect("valid link")
    }

    #[test]
    fn the_second_start_hands_its_route_to_the_first() {
        let temp = tempfile::tempdir().expect("temp dir");
        let home = Home::at(temp.path());
        let Claim::First(Some(listener)) = claim(&home, None) else {
            panic!("the first start of a home claims it");
        };
        let (tx, rx) = mpsc::channel();
        serve(listener, move |route| tx.send(route).expect("send"));

        assert!(matches!(claim(&home, Some(&route())), Claim::HandedOver));
        let got = rx
            .recv_timeout(Duration::from_secs(5))
            .expect("the first app hears of it");
        assert_eq!(got, Some(route()));

        assert!(
            matches!(claim(&home, None), Claim::HandedOver),
            "a plain start too"
        );
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(5)).expect("plain"),
            None
        );
    }

    #[test]
    fn a_link_that_does_not_parse_is_refused_and_never_opened() {
        let temp = tempfile::tempdir().expect("temp dir");
        let home = Home::at(temp.path());
        let Claim::First(Some(listener)) = claim(&home, None) else {
            panic!("first");
        };
        let (tx, rx) = mpsc::channel();
        serve(listener, move |route| tx.send(route).expect("send"));
        let socket = DaemonPaths::for_home(&home).app_socket();
        let mut stream = UnixStream::connect(&socket).expect("connect");
        stream
            .write_all(b"{\"path\":\"run/01R/../../etc\"}\n")
            .expect("send");
        let mut reply = String::new();
        BufReader::new(stream.take(16))
            .read_line(&mut reply)
            .expect("read");
        assert_eq!(reply, "", "no `ok` for a link that does not parse");

        assert!(matches!(claim(&home, Some(&route())), Claim::HandedOver));
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(5))
                .expect("the good one"),
            Some(route()),
            "only the link that parses reaches the window"
        );
    }

    #[test]
    fn a_socket_left_by_an_app_that_died_is_claimed_again() {
        let temp = tempfile::tempdir().expect("temp dir");
        let home = Home::at(temp.path());
        let Claim::First(Some(listener)) = claim(&home, None) else {
            panic!("first");
        };
        drop(listener); // the app died; its socket file stays behind
        let socket = DaemonPaths::for_home(&home).app_socket();
        assert!(socket.exists(), "the stale file is what this test is about");
        assert!(matches!(
            claim(&home, Some(&route())),
            Claim::First(Some(_))
        ));
    }

    #[test]
    fn other_homes_are_other_apps() {
        let a = tempfile::tempdir().expect("a");
        let b = tempfile::tempdir().expect("b");
        let Claim::First(Some(_listener)) = claim(&Home::at(a.path()), None) else {
            panic!("a");
        };
        assert!(matches!(
            claim(&Home::at(b.path()), None),
            Claim::First(Some(_))
        ));
    }
}
