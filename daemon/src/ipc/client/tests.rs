//! The client against a fake daemon: a task on a real socket in a temp dir
//! that speaks the protocol as each test scripts it.

use std::future::Future;
use std::time::Duration;

use interprocess::local_socket::tokio::prelude::*;
use tokio::io::{AsyncWriteExt, BufReader};

use super::*;
use crate::ipc::codec::FrameWriter;
use crate::ipc::protocol::{
    Call, DaemonInfo, DaemonStatus, Notification, PROTOCOL_VERSION, Response, RunGet,
    decode_request,
};
use crate::model::EventKind;
use crate::store::StoreError;

/// The fake daemon's end of one connection.
struct Conn {
    reader: FrameReader<BufReader<ReadHalf<Stream>>>,
    writer: FrameWriter<WriteHalf<Stream>>,
}

impl Conn {
    /// The next request, typed.
    async fn request(&mut self) -> (Option<Id>, Call) {
        let value: Value = self
            .reader
            .read()
            .await
            .expect("a readable line")
            .expect("a request, not the end");
        decode_request(value).expect("a valid request")
    }

    async fn reply<T: serde::Serialize>(&mut self, id: Option<Id>, result: &T) {
        self.send(&ServerMessage::from(Response::success(id, result)))
            .await;
    }

    async fn event(&mut self, subscription: &str, seq: u64) {
        self.send(&ServerMessage::from(Notification::event(
            subscription,
            event(seq),
        )))
        .await;
    }

    async fn send(&mut self, message: &ServerMessage) {
        self.writer.write(message).await.expect("write");
    }
}

fn event(seq: u64) -> Event {
    Event {
        seq,
        ts: "2026-12-02T12:00:00.000Z".into(),
        run_id: "01JRUN".into(),
        node_id: None,
        visit: None,
        kind: EventKind::RunNotice {
            message: format!("event {seq}"),
        },
    }
}

fn info() -> DaemonInfo {
    DaemonInfo {
        version: "0.1.0".into(),
        protocol: PROTOCOL_VERSION,
        pid: 1,
        uptime_ms: 2,
        runs_running: 0,
        runs_queued: 0,
        home: "/h".into(),
        db_path: "/h/weft.db".into(),
        socket_path: "/h/run/weftd.sock".into(),
        notifications_paused: Some(false),
    }
}

/// A fake daemon for a fresh home: binds the home's socket, then runs
/// `script` on the first connection. Returns the home (and the temp dir
/// keeping it alive) and the server task.
async fn fake_daemon<F, Fut>(script: F) -> (tempfile::TempDir, Home, JoinHandle<()>)
where
    F: FnOnce(Conn) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let temp = tempfile::tempdir().expect("temp dir");
    let home = Home::at(temp.path().join("home"));
    let paths = DaemonPaths::for_home(&home);
    paths.ensure().expect("runtime dir");
    let listener = socket::listen(&paths.socket).expect("listen");
    let server = tokio::spawn(async move {
        let stream = listener.accept().await.expect("accept");
        let (read, write) = tokio::io::split(stream);
        script(Conn {
            reader: FrameReader::new(BufReader::new(read)),
            writer: FrameWriter::new(write),
        })
        .await;
        // Keep the listener (and its socket file) until the script is done.
        drop(listener);
    });
    (temp, home, server)
}

/// Bounds every wait, so a broken client fails the test instead of hanging.
async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), future)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

#[tokio::test]
async fn replies_are_matched_by_id_whatever_the_order_with_events_interleaved() {
    let (_temp, home, server) = fake_daemon(|mut conn| async move {
        let (first_id, first) = conn.request().await;
        let (second_id, second) = conn.request().await;
        // Answer status first, whichever order the requests came in, with
        // events for an unknown subscription in between.
        let (status_id, get_id) = match (first, second) {
            (Call::DaemonStatus(_), Call::RunGet(_)) => (first_id, second_id),
            (Call::RunGet(_), Call::DaemonStatus(_)) => (second_id, first_id),
            other => panic!("unexpected calls {other:?}"),
        };
        conn.event("nobody", 1).await;
        conn.reply(status_id, &info()).await;
        conn.event("nobody", 2).await;
        conn.send(&ServerMessage::from(Response::failure(
            get_id,
            RpcError::from(StoreError::RunNotFound("zz".into())),
        )))
        .await;
    })
    .await;
    let client = within("connect", Client::connect(&home))
        .await
        .expect("connect");
    let (status, run) = within("both replies", async {
        tokio::join!(
            client.call(DaemonStatus {}),
            client.call(RunGet { run: "zz".into() })
        )
    })
    .await;
    assert_eq!(status.expect("status succeeds"), info());
    let error = run.expect_err("the run is unknown");
    assert_eq!(error.code(), "run.not_found", "{error}");
    assert!(matches!(error, ClientError::Rpc(_)));
    server.await.expect("server");
}

#[tokio::test]
async fn events_sent_before_the_subscribe_reply_are_not_lost() {
    let (_temp, home, server) = fake_daemon(|mut conn| async move {
        let (id, call) = conn.request().await;
        let Call::Subscribe(subscribe) = call else {
            panic!("expected subscribe, got {call:?}");
        };
        assert_eq!(subscribe.run.as_deref(), Some("01J"));
        assert_eq!(subscribe.after_seq, 0);
        // The backlog goes out before the reply, as a real daemon may do.
        conn.event(&subscribe.subscription, 1).await;
        conn.event(&subscribe.subscription, 2).await;
        conn.event("someone-else", 99).await;
        conn.reply(
            id,
            &Subscribed {
                subscription: subscribe.subscription.clone(),
                run_id: Some("01JRUN".into()),
            },
        )
        .await;
        conn.event(&subscribe.subscription, 3).await;
        let (id, call) = conn.request().await;
        assert_eq!(
            call,
            Call::Unsubscribe(Unsubscribe {
                subscription: "cli-1".into()
            })
        );
        conn.reply(id, &Unsubscribed { existed: true }).await;
    })
    .await;
    let client = within("connect", Client::connect(&home))
        .await
        .expect("connect");
    let mut events = within(
        "subscribe",
        client.subscribe("cli-1", Some("01J".into()), 0),
    )
    .await
    .expect("subscribed");
    assert_eq!(events.id(), "cli-1");
    assert_eq!(events.run_id(), Some("01JRUN"));
    for seq in 1..=3 {
        let event = within("an event", events.next()).await.expect("an event");
        assert_eq!(event.seq, seq, "events arrive in order, none missing");
    }
    let unsubscribed = within("unsubscribe", client.unsubscribe("cli-1"))
        .await
        .expect("unsubscribe");
    assert!(unsubscribed.existed);
    assert_eq!(
        within("the end", events.next()).await,
        None,
        "the stream ends after unsubscribing"
    );
    server.await.expect("server");
}

#[tokio::test]
async fn a_second_live_subscription_with_the_same_id_is_refused() {
    let (_temp, home, _server) = fake_daemon(|mut conn| async move {
        let (id, _) = conn.request().await;
        conn.reply(
            id,
            &Subscribed {
                subscription: "s".into(),
                run_id: None,
            },
        )
        .await;
        // Hold the connection open until the client is done.
        let _ = conn.reader.read::<Value>().await;
    })
    .await;
    let client = within("connect", Client::connect(&home))
        .await
        .expect("connect");
    let _first = within("subscribe", client.subscribe("s", None, 0))
        .await
        .expect("subscribed");
    let error = within("subscribe again", client.subscribe("s", None, 0))
        .await
        .expect_err("the id is taken");
    assert_eq!(error.code(), "subscription.exists");
}

#[tokio::test]
async fn no_daemon_means_daemon_not_running() {
    let temp = tempfile::tempdir().expect("temp dir");
    let home = Home::at(temp.path().join("home"));
    let error = Client::connect(&home).await.expect_err("nothing listens");
    assert_eq!(error.code(), "daemon.not_running", "{error}");
    assert!(
        error.to_string().contains("weft daemon start"),
        "the message tells the user what to do: {error}"
    );
}

#[tokio::test]
async fn a_stale_socket_means_daemon_not_running() {
    let temp = tempfile::tempdir().expect("temp dir");
    let home = Home::at(temp.path().join("home"));
    let paths = DaemonPaths::for_home(&home);
    paths.ensure().expect("runtime dir");
    // A daemon that died leaves its socket file; connecting is refused.
    drop(std::os::unix::net::UnixListener::bind(&paths.socket).expect("bind"));
    let error = Client::connect(&home).await.expect_err("refused");
    assert!(
        matches!(error, ClientError::DaemonNotRunning { .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_daemon_that_hangs_up_fails_pending_calls_and_ends_subscriptions() {
    let (_temp, home, server) = fake_daemon(|mut conn| async move {
        let (id, _) = conn.request().await;
        conn.reply(
            id,
            &Subscribed {
                subscription: "s".into(),
                run_id: None,
            },
        )
        .await;
        let _ = conn.request().await;
        // Hang up without answering the second call.
    })
    .await;
    let client = within("connect", Client::connect(&home))
        .await
        .expect("connect");
    let mut events = within("subscribe", client.subscribe("s", None, 0))
        .await
        .expect("subscribed");
    let error = within("the failed call", client.call(DaemonStatus {}))
        .await
        .expect_err("the daemon hung up");
    assert!(matches!(error, ClientError::Disconnected), "{error:?}");
    assert_eq!(within("the end", events.next()).await, None);
    server.await.expect("server");
    assert!(client.is_closed());
    let error = within("a later call", client.call(DaemonStatus {}))
        .await
        .expect_err("closed");
    assert_eq!(error.code(), "ipc.disconnected", "later calls fail at once");
}

#[tokio::test]
async fn a_garbled_reply_is_a_protocol_error() {
    let (_temp, home, server) = fake_daemon(|mut conn| async move {
        let _ = conn.request().await;
        conn.writer
            .get_mut()
            .write_all(b"this is not json\n")
            .await
            .expect("write");
        let _ = conn.writer.get_mut().flush().await;
        let _ = conn.reader.read::<Value>().await;
    })
    .await;
    let client = within("connect", Client::connect(&home))
        .await
        .expect("connect");
    let error = within("the call", client.call(DaemonStatus {}))
        .await
        .expect_err("garbage");
    assert_eq!(error.code(), "ipc.protocol", "{error}");
    drop(client);
    server.await.expect("server");
}

#[tokio::test]
async fn a_reply_of_the_wrong_shape_is_a_protocol_error_for_that_call_only() {
    let (_temp, home, server) = fake_daemon(|mut conn| async move {
        let (id, _) = conn.request().await;
        conn.reply(id, &"not a status").await;
        let (id, _) = conn.request().await;
        conn.reply(id, &info()).await;
    })
    .await;
    let client = within("connect", Client::connect(&home))
        .await
        .expect("connect");
    let error = within("the call", client.call(DaemonStatus {}))
        .await
        .expect_err("wrong shape");
    assert_eq!(error.code(), "ipc.protocol");
    let status = within("the next call", client.call(DaemonStatus {}))
        .await
        .expect("the connection is still usable");
    assert_eq!(status, info());
    server.await.expect("server");
}

#[tokio::test]
async fn a_dropped_call_does_not_disturb_the_next_one() {
    let (_temp, home, server) = fake_daemon(|mut conn| async move {
        let (slow, _) = conn.request().await;
        let (fast, _) = conn.request().await;
        // The first caller gave up; its late reply must go nowhere.
        conn.reply(slow, &info()).await;
        conn.reply(fast, &DaemonInfo { pid: 2, ..info() }).await;
    })
    .await;
    let client = within("connect", Client::connect(&home))
        .await
        .expect("connect");
    let gave_up =
        tokio::time::timeout(Duration::from_millis(50), client.call(DaemonStatus {})).await;
    assert!(
        gave_up.is_err(),
        "the fake daemon does not answer the first call alone"
    );
    let status = within("the second call", client.call(DaemonStatus {}))
        .await
        .expect("status");
    assert_eq!(status.pid, 2, "the second call gets its own reply");
    server.await.expect("server");
}

#[test]
fn the_client_runs_on_a_current_thread_runtime_driven_by_block_on() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let (_temp, home, server) = fake_daemon(|mut conn| async move {
            let (id, _) = conn.request().await;
            conn.reply(id, &info()).await;
        })
        .await;
        let client = within("connect", Client::connect(&home))
            .await
            .expect("connect");
        let status = within("status", client.call(DaemonStatus {}))
            .await
            .expect("status");
        assert_eq!(status.protocol, PROTOCOL_VERSION);
        server.await.expect("server");
    });
}

/// Reads the next request, which must be `subscribe`, and replies to it.
async fn expect_subscribe(conn: &mut Conn) -> Subscribe {
    let (id, call) = conn.request().await;
    let Call::Subscribe(subscribe) = call else {
        panic!("expected subscribe, got {call:?}");
    };
    conn.reply(
        id,
        &Subscribed {
            subscription: subscribe.subscription.clone(),
            run_id: Some("01JRUN".into()),
        },
    )
    .await;
    subscribe
}

#[tokio::test]
async fn a_lagged_subscription_is_continued_after_its_last_event() {
    let (_temp, home, server) = fake_daemon(|mut conn| async move {
        let first = expect_subscribe(&mut conn).await;
        assert_eq!(first.after_seq, 0);
        conn.event("follow", 1).await;
        conn.event("follow", 2).await;
        conn.send(&ServerMessage::from(Notification::lagged(
            "follow",
            Some(2),
        )))
        .await;
        let again = expect_subscribe(&mut conn).await;
        assert_eq!(again.subscription, "follow", "the same id, free again");
        assert_eq!(again.run.as_deref(), Some("01JRUN"), "the resolved run");
        assert_eq!(again.after_seq, 2, "after the last event received");
        conn.event("follow", 3).await;
        let _ = conn.reader.read::<Value>().await;
    })
    .await;
    let client = within("connect", Client::connect(&home))
        .await
        .expect("connect");
    let mut events = within(
        "subscribe",
        client.subscribe("follow", Some("01J".into()), 0),
    )
    .await
    .expect("subscribed");
    for seq in 1..=3 {
        let event = within("an event", events.next()).await.expect("an event");
        assert_eq!(event.seq, seq, "no gap and no repeat across the lag");
    }
    drop(client);
    server.await.expect("server");
}

#[tokio::test]
async fn a_consumer_that_falls_behind_is_caught_up_from_where_it_stopped() {
    let total = u64::try_from(SUBSCRIPTION_BUFFER).expect("fits") + 100;
    let (behind, fell_behind) = oneshot::channel();
    let (_temp, home, server) = fake_daemon(move |mut conn| async move {
        expect_subscribe(&mut conn).await;
        for seq in 1..=total {
            conn.event("s", seq).await;
        }
        // The client stops the flow once its buffer is full ...
        let (id, call) = conn.request().await;
        assert_eq!(
            call,
            Call::Unsubscribe(Unsubscribe {
                subscription: "s".into()
            })
        );
        conn.reply(id, &Unsubscribed { existed: true }).await;
        let _ = behind.send(());
        // ... and, once its consumer has read what it kept, continues.
        let again = expect_subscribe(&mut conn).await;
        let kept = u64::try_from(SUBSCRIPTION_BUFFER).expect("fits");
        assert_eq!(again.after_seq, kept);
        for seq in kept + 1..=total {
            conn.event("s", seq).await;
        }
        let _ = conn.reader.read::<Value>().await;
    })
    .await;
    let client = within("connect", Client::connect(&home))
        .await
        .expect("connect");
    let mut events = within("subscribe", client.subscribe("s", Some("01J".into()), 0))
        .await
        .expect("subscribed");
    within("the client to fall behind", fell_behind)
        .await
        .expect("signal");
    for seq in 1..=total {
        let event = within("an event", events.next()).await.expect("an event");
        assert_eq!(event.seq, seq, "every event once, in order");
    }
    drop(client);
    server.await.expect("server");
}
