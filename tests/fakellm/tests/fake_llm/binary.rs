use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::support::{Provider, send};

#[test]
fn binary_prints_its_url_serves_scripts_and_exits_when_stdin_closes() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_weft-fakellm"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    let addr: SocketAddr = url.strip_prefix("http://").unwrap().parse().unwrap();
    assert!(addr.ip().is_loopback());

    let scripted = send(
        addr,
        "POST",
        "/_fake/script/sk-bin",
        &[],
        json!({"text": "from the binary"}).to_string().as_bytes(),
    );
    assert_eq!(scripted.status, 200, "a single reply is accepted too");
    let reply = send(
        addr,
        "POST",
        "/v1/chat/completions",
        &[("Authorization", "Bearer sk-bin")],
        Provider::Chat.request("hi", false).to_string().as_bytes(),
    );
    assert_eq!(Provider::Chat.text_of(&reply.json()), "from the binary");

    drop(child.stdin.take());
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("weft-fakellm did not exit when its stdin closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success());
}
