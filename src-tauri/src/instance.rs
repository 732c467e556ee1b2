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
//! `ok`, or by `refused: REASON` when the line is not a link the app
//! opens. Whoever listens owns the home: the second process exits after
//! any answer (saying a refusal or a silence on stderr), and opens a
//! window of its own only when nobody listens (no socket, or connecting
//! is refused). Anything else that goes wrong here only costs the
//! single-instance behaviour, never the app.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::time::{Duration, Instant};

use weft::ipc::paths::DaemonPaths;
use weft::store::Home;
use weft::views::DeepLink;

/// How long one exchange may take in all, on either side: a peer that
/// trickles bytes does not hold the serving thread longer.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(3);
/// How long the serving thread waits after a failed accept.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);
/// The longest line accepted: a link is at most 2 KiB, escaped as JSON.
const MAX_LINE: u64 = 64 * 1024;

/// The outcome of [`claim`].
pub enum Claim {
    /// No app of this home runs: start, and serve later starts on the
    /// listener (none when the socket could not be bound).
    First(Option<UnixListener>),
    /// A running app took the route; this process should exit.
    HandedOver,
    /// A running app listens but did not take the route (it refused it,
    /// or did not answer): said on stderr; this process should exit too,
    /// since that app owns the home.
    Refused,
}

/// Hands `route` to the home's running app, or claims the home for this
/// one.
pub fn claim(home: &Home, route: Option<&DeepLink>) -> Claim {
    let paths = DaemonPaths::for_home(home);
    let socket = paths.app_socket();
    // Two first starts at once (the login entry and a clicked
    // notification, a double click) would both find nobody listening and
    // both bind, the second over the first's socket. The whole claim is
    // made under a lock beside the socket, so the second waits and then
    // finds the first listening. Without the lock (a file system that has
    // none), the claim goes on unlocked.
    let _claiming = claim_lock(&paths, &socket);
    match hand_over(&socket, route) {
        Ok(Reply::Ok) => return Claim::HandedOver,
        Ok(Reply::Refused(reason)) => {
            eprintln!(
                "weft-desktop: the app already open for this home refused the link: {reason}"
            );
            return Claim::Refused;
        }
        // Nobody listens (no socket file, or one left by an app that
        // died): this is the first app.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
            ) => {}
        // Somebody listens but the exchange failed (no answer in time, an
        // older app that hung up): it still owns the home.
        Err(e) => {
            eprintln!(
                "weft-desktop: the app already open for this home did not answer on {} ({e})",
                socket.display()
            );
            return Claim::Refused;
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

/// The exclusive lock on `SOCKET.lock`, held until dropped; `None` when it
/// cannot be taken.
fn claim_lock(paths: &DaemonPaths, socket: &Path) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    paths.ensure().ok()?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(socket.with_extension("lock"))
        .ok()?;
    file.lock().ok()?;
    Some(file)
}

/// What the running app answered.
#[derive(Debug, PartialEq, Eq)]
enum Reply {
    Ok,
    Refused(String),
}

/// Sends `route` to the app listening on `socket` and reads its answer.
/// Not connecting is an error of the connect's kind; an answer that is
/// neither `ok` nor a refusal is a refusal saying so.
fn hand_over(socket: &Path, route: Option<&DeepLink>) -> std::io::Result<Reply> {
    let stream = UnixStream::connect(socket)?;
    let until = Instant::now() + EXCHANGE_TIMEOUT;
    let mut line = serde_json::to_vec(&route).map_err(std::io::Error::other)?;
    line.push(b'\n');
    Deadline::new(&stream, until).write_all(&line)?;
    let mut reply = String::new();
    BufReader::new(Deadline::new(&stream, until).take(MAX_REPLY)).read_line(&mut reply)?;
    let reply = reply.trim_end();
    Ok(match reply {
        "ok" => Reply::Ok,
        "" => Reply::Refused("it closed without an answer".into()),
        _ => Reply::Refused(reply.strip_prefix("refused:").map_or_else(
            || format!("unexpected answer {reply:?}"),
            |r| r.trim().to_string(),
        )),
    })
}

/// The longest answer read: `refused: ` and a parse error.
const MAX_REPLY: u64 = 1024;

/// A stream whose reads and writes all end by `until`: each one waits at
/// most the time left, and none starts after it.
struct Deadline<'a> {
    stream: &'a UnixStream,
    until: Instant,
}

impl<'a> Deadline<'a> {
    fn new(stream: &'a UnixStream, until: Instant) -> Self {
        Deadline { stream, until }
    }

    fn left(&self) -> std::io::Result<Duration> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the exchange took too long",
            ))
        } else {
            Ok(left)
        }
    }
}

impl Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.stream.set_read_timeout(Some(self.left()?))?;
        (&mut &*self.stream).read(buf)
    }
}

impl Write for Deadline<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.stream.set_write_timeout(Some(self.left()?))?;
        (&mut &*self.stream).write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
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
                let stream = match stream {
                    Ok(stream) => stream,
                    Err(e) => {
                        // Out of descriptors, say: wait before accepting
                        // again rather than spin on the error.
                        eprintln!("weft-desktop: cannot accept a later start ({e})");
                        std::thread::sleep(ACCEPT_RETRY);
                        continue;
                    }
                };
                match receive(stream) {
                    Ok(route) => open(route),
                    Err(e) => eprintln!("weft-desktop: a second start sent nothing usable ({e})"),
                }
            }
        });
    if let Err(e) = spawned {
        eprintln!("weft-desktop: cannot serve later starts ({e})");
    }
}

/// Reads one start's route and answers it: `ok`, or `refused: REASON`
/// for a line that is not a link the app opens (the sender says so and
/// exits). The whole exchange ends within [`EXCHANGE_TIMEOUT`].
fn receive(stream: UnixStream) -> std::io::Result<Option<DeepLink>> {
    receive_within(&stream, EXCHANGE_TIMEOUT)
}

fn receive_within(stream: &UnixStream, within: Duration) -> std::io::Result<Option<DeepLink>> {
    let until = Instant::now() + within;
    let mut line = String::new();
    BufReader::new(Deadline::new(stream, until).take(MAX_LINE)).read_line(&mut line)?;
    // Any process of this user can connect: its link is checked as one
    // from the command line is.
    // Reading a `DeepLink` checks it (`DeepLink::parse`).
    let route =
        serde_json::from_str::<Option<DeepLink>>(&line).map_err(|e| format!("not a link: {e}"));
    let mut answer = Deadline::new(stream, until);
    match route {
        Ok(route) => {
            answer.write_all(b"ok\n")?;
            Ok(route)
        }
        Err(reason) => {
            let reason: String = reason
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .take(200)
                .collect();
            answer.write_all(format!("refused: {reason}\n").as_bytes())?;
            Err(std::io::Error::other(reason))
        }
    }
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
    fn two_first_starts_at_once_make_one_app_and_one_hand_over() {
        for _ in 0..20 {
            let temp = tempfile::tempdir().expect("temp dir");
            let home = Home::at(temp.path());
            let start = std::sync::Arc::new(std::sync::Barrier::new(2));
            let starts: Vec<_> = (0..2)
                .map(|_| {
                    let home = home.clone();
                    let start = start.clone();
                    std::thread::spawn(move || {
                        start.wait();
                        match claim(&home, None) {
                            // The app: serves the other start, if it comes.
                            Claim::First(Some(listener)) => {
                                let (tx, rx) = mpsc::channel();
                                serve(listener, move |route| {
                                    let _ = tx.send(route);
                                });
                                let heard = rx.recv_timeout(Duration::from_secs(10)).is_ok();
                                if heard { "app" } else { "app, alone" }
                            }
                            Claim::HandedOver => "handed over",
                            Claim::First(None) => "no listener",
                            Claim::Refused => "refused",
                        }
                    })
                })
                .collect();
            let mut outcomes: Vec<&str> = starts
                .into_iter()
                .map(|t| t.join().expect("joined"))
                .collect();
            outcomes.sort_unstable();
            assert_eq!(outcomes, ["app", "handed over"]);
        }
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
        BufReader::new(stream.take(1024))
            .read_line(&mut reply)
            .expect("read");
        assert!(
            reply.starts_with("refused: ") && reply.ends_with('\n'),
            "a refusal, not `ok`, for a link that does not parse: {reply:?}"
        );

        assert!(matches!(claim(&home, Some(&route())), Claim::HandedOver));
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(5))
                .expect("the good one"),
            Some(route()),
            "only the link that parses reaches the window"
        );
    }

    #[test]
    fn a_line_that_is_not_a_link_is_answered_refused_with_the_reason() {
        // A `DeepLink` cannot hold a bad path, so the line is written raw,
        // as any other process of the user could.
        let temp = tempfile::tempdir().expect("temp dir");
        let socket = temp.path().join("app.sock");
        let listener = UnixListener::bind(&socket).expect("bind");
        let app = std::thread::spawn(move || {
            let (stream, _) = listener.accept().expect("accept");
            receive(stream)
        });
        let mut sender = UnixStream::connect(&socket).expect("connect");
        sender
            .write_all(b"{\"path\":\"run/01R/../../etc\"}\n")
            .expect("write");
        let mut answer = String::new();
        BufReader::new(&sender)
            .read_line(&mut answer)
            .expect("answer");
        assert!(answer.starts_with("refused: "), "{answer:?}");
        assert!(answer.len() > "refused: \n".len(), "says why: {answer:?}");
        assert!(app.join().expect("joined").is_err());
    }

    #[test]
    fn a_refusal_reaches_the_sender_which_opens_no_window_of_its_own() {
        let temp = tempfile::tempdir().expect("temp dir");
        let socket = temp.path().join("app.sock");
        let listener = UnixListener::bind(&socket).expect("bind");
        let app = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().expect("accept");
            let mut line = String::new();
            BufReader::new(&stream).read_line(&mut line).expect("line");
            stream
                .write_all(b"refused: no such place\n")
                .expect("answer");
        });
        let link = DeepLink::run("01R").expect("a link");
        let reply = hand_over(&socket, Some(&link)).expect("an answer");
        let Reply::Refused(reason) = reply else {
            panic!("refused, got {reply:?}");
        };
        assert_eq!(reason, "no such place");
        app.join().expect("joined");
    }

    #[test]
    fn an_app_that_listens_but_hangs_up_still_owns_the_home() {
        // An older app, say, that closes on a link it does not parse.
        let temp = tempfile::tempdir().expect("temp dir");
        let home = Home::at(temp.path());
        let paths = DaemonPaths::for_home(&home);
        paths.ensure().expect("runtime dir");
        let listener = UnixListener::bind(paths.app_socket()).expect("bind");
        let app = std::thread::spawn(move || {
            let (stream, _) = listener.accept().expect("accept");
            drop(stream);
        });
        assert!(matches!(claim(&home, Some(&route())), Claim::Refused));
        app.join().expect("joined");
    }

    #[test]
    fn a_sender_that_trickles_bytes_is_cut_off_at_the_exchange_deadline() {
        let (app_side, sender) = UnixStream::pair().expect("pair");
        let trickle = std::thread::spawn(move || {
            let mut sender = sender;
            // One byte every 100 ms, never a newline: each read is quick,
            // the whole is not.
            for _ in 0..100 {
                if sender.write_all(b" ").is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let started = Instant::now();
        let got = receive_within(&app_side, Duration::from_millis(500));
        let took = started.elapsed();
        assert!(got.is_err(), "{got:?}");
        assert!(took < Duration::from_secs(5), "took {took:?}");
        drop(app_side);
        trickle.join().expect("joined");
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
