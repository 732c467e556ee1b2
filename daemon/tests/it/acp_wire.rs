//! The agent line reader (`weft::agent::child_io::Lines`, shared by the
//! ACP and CLI backends) with ACP's parsing, on a real pipe:
//! raced against timers, as the client races it, it loses nothing of a
//! line that arrives in pieces; lines past the cap end the connection;
//! stray lines are kept aside, not fatal.

#![allow(clippy::expect_used)]

use std::time::Duration;

use tokio::io::AsyncWriteExt as _;
use weft::agent::acp::wire::{Incoming, MAX_LINE_BYTES, parse};
use weft::agent::child_io::{Lines, ReadError};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn a_line_arriving_in_pieces_survives_reads_cut_short_by_timers() {
    runtime().block_on(async {
        let (mut tx, rx) = tokio::io::duplex(64);
        let text = "x".repeat(5_000);
        let line = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{{\"text\":\"{text}\"}}}}\n"
        );
        let sent = line.clone();
        let writer = tokio::spawn(async move {
            for _ in 0..3 {
                for piece in sent.as_bytes().chunks(37) {
                    tx.write_all(piece).await.expect("write");
                    tokio::task::yield_now().await;
                }
            }
        });
        let mut lines = Lines::new(rx, MAX_LINE_BYTES);
        let mut got = Vec::new();
        let mut interrupted = 0;
        while got.len() < 3 {
            tokio::select! {
                message = lines.next() => got.push(parse(&message.expect("a message"))),
                () = tokio::time::sleep(Duration::from_micros(50)) => interrupted += 1,
            }
        }
        writer.await.expect("writer");
        assert!(interrupted > 0, "the timers cut reads short");
        for message in got {
            match message {
                Incoming::Notification { params, .. } => {
                    assert_eq!(params["text"].as_str().map(str::len), Some(5_000));
                }
                other => panic!("{other:?} (after {interrupted} interrupted reads)"),
            }
        }
    });
}

#[test]
fn a_line_past_the_cap_ends_reading_and_the_end_of_input_is_closed() {
    runtime().block_on(async {
        let (mut tx, rx) = tokio::io::duplex(1 << 16);
        let writer = tokio::spawn(async move {
            let chunk = vec![b'a'; 1 << 16];
            for _ in 0..(MAX_LINE_BYTES / chunk.len() + 2) {
                if tx.write_all(&chunk).await.is_err() {
                    break;
                }
            }
        });
        let mut lines = Lines::new(rx, MAX_LINE_BYTES);
        assert!(matches!(lines.next().await, Err(ReadError::TooLong)));
        drop(lines);
        let _ = writer.await;

        let (mut tx, rx) = tokio::io::duplex(64);
        tx.write_all(b"\n\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}")
            .await
            .expect("write");
        drop(tx);
        let mut lines = Lines::new(rx, MAX_LINE_BYTES);
        let line = lines.next().await.expect("a line");
        assert!(matches!(
            parse(&line),
            Incoming::Response { result: Ok(_), .. }
        ));
        assert!(matches!(lines.next().await, Err(ReadError::Closed)));
    });
}

#[test]
fn stray_lines_and_every_message_kind_are_told_apart() {
    assert!(matches!(parse(b"starting up..."), Incoming::Garbage(_)));
    assert!(matches!(parse(b"[1,2]"), Incoming::Garbage(_)));
    assert!(matches!(
        parse(br#"{"jsonrpc":"2.0","id":"a-1","method":"fs/read_text_file","params":{}}"#),
        Incoming::Request { .. }
    ));
    assert!(matches!(
        parse(br#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#),
        Incoming::Notification { .. }
    ));
    match parse(
        br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"Authentication required"}}"#,
    ) {
        Incoming::Response { result: Err(e), .. } => {
            assert_eq!(
                (e.code, e.message.as_str()),
                (-32000, "Authentication required")
            );
        }
        other => panic!("{other:?}"),
    }
}
