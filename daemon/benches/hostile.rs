//! Hostile inputs (issue 14): the time and peak memory Weft spends on inputs
//! built to exhaust it — deep nesting, endless files, template and import
//! bombs, huge attribute lists, huge command output, subscribers that never
//! read, a huge workflow sent to the daemon.
//!
//! `cargo bench -p weft --bench hostile` measures the `weft` and `weftd`
//! built with this bench. `-- --weft /path/to/weft` measures another build
//! (its `weftd` must sit beside it), which is how docs/performance.md
//! compares before and after. Each case runs as a child under GNU time
//! (`/usr/bin/time`, for peak RSS), with a wall-clock limit and a 4 GiB
//! address-space limit so that an unbounded build cannot take the machine
//! down: hitting either is reported as such. Prints a Markdown table; asserts
//! nothing.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Wall-clock limit per case.
const LIMIT_SECS: u64 = 60;
/// Address-space limit per case, in KiB (`ulimit -v`).
const AS_LIMIT_KIB: u64 = 4 * 1024 * 1024;

struct Measured {
    wall: f64,
    peak_kib: u64,
    status: String,
}

/// Runs `args` under time + timeout + ulimit and reads what GNU time wrote.
fn measure(weft: &Path, args: &[&str], home: &Path, cwd: &Path, stdin: Option<&Path>) -> Measured {
    let _ = std::fs::create_dir_all(home);
    let out = home.join("time.out");
    let _ = std::fs::remove_file(&out);
    let script = format!(
        "ulimit -v {AS_LIMIT_KIB}; exec /usr/bin/time -f '%e %M %x' -o '{}' timeout -k 2 {LIMIT_SECS} \"$@\"",
        out.display()
    );
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(script)
        .arg("sh")
        .arg(weft)
        .args(args)
        .env("WEFT_HOME", home)
        .env("NO_COLOR", "1")
        .current_dir(cwd)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd.stdin(match stdin {
        Some(p) => std::fs::File::open(p).map_or(Stdio::null(), Stdio::from),
        None => Stdio::null(),
    });
    let output = cmd.output();
    let stderr = output
        .as_ref()
        .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
        .unwrap_or_default();
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    let last = text.lines().last().unwrap_or("");
    let mut parts = last.split_whitespace();
    let wall: f64 = parts
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(f64::NAN);
    let peak_kib: u64 = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let code: i32 = parts.next().and_then(|s| s.parse().ok()).unwrap_or(-1);
    let signal = text
        .lines()
        .find_map(|l| l.strip_prefix("Command terminated by signal "))
        .map(str::trim);
    let status = match (signal, code) {
        (Some("6"), _) if stderr.contains("overflowed its stack") => {
            "crashed: stack overflow (SIGABRT)".to_string()
        }
        (Some(sig), _) => format!("killed by signal {sig}"),
        (None, 124 | 137) => format!("stopped at the {LIMIT_SECS} s limit"),
        (None, 0) => "exit 0".to_string(),
        (None, c) if stderr.contains("memory allocation") || stderr.contains("out of memory") => {
            format!("exit {c}: out of memory at the 4 GiB limit")
        }
        (None, c) => {
            let why = stderr
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .chars()
                .take(90)
                .collect::<String>();
            format!("exit {c}: {why}")
        }
    };
    Measured {
        wall,
        peak_kib,
        status,
    }
}

fn write(dir: &Path, name: &str, text: &str) -> std::io::Result<PathBuf> {
    let path = dir.join(name);
    std::fs::write(&path, text)?;
    Ok(path)
}

const HEAD: &str = "digraph H {\n start [shape=Mdiamond]; exit [shape=Msquare]\n";

fn nesting(depth: usize) -> String {
    let mut s = String::from(HEAD);
    s.push_str(&"subgraph { ".repeat(depth));
    s.push_str(" x [shape=parallelogram, script=\"true\"] ");
    s.push_str(&"} ".repeat(depth));
    s.push_str("\n start -> x -> exit\n}\n");
    s
}

/// `n` files, each importing the next once (a chain) or twice (a bomb).
fn imports(dir: &Path, n: usize, per_file: usize) -> std::io::Result<PathBuf> {
    for i in 0..n {
        let mut s = String::from(HEAD);
        if i + 1 == n {
            s.push_str(" w [shape=parallelogram, script=\"true\"]\n start -> w -> exit\n}\n");
        } else {
            let mut chain = String::from(" start");
            for k in 0..per_file {
                let _ = writeln!(s, " i{k} [import=\"f{}.fabro\"]", i + 1);
                let _ = write!(chain, " -> i{k}");
            }
            let _ = writeln!(s, "{chain} -> exit\n}}");
        }
        write(dir, &format!("f{i}.fabro"), &s)?;
    }
    Ok(dir.join("f0.fabro"))
}

fn template_bomb() -> String {
    format!(
        "{HEAD} p [shape=tab, prompt=\"{{% for a in range(200) %}}{{% for b in range(200) %}}{{% for c in range(200) %}}{{% for d in range(200) %}}xxxxxxxx{{% endfor %}}{{% endfor %}}{{% endfor %}}{{% endfor %}}\"]\n start -> p -> exit\n}}\n"
    )
}

fn many_attributes(n: usize) -> String {
    let mut s = String::from(HEAD);
    s.push_str(" x [shape=parallelogram, script=\"true\"");
    for i in 0..n {
        let _ = write!(s, ", a{i}=\"v\"");
    }
    s.push_str("]\n start -> x -> exit\n}\n");
    s
}

/// A chain of plain command nodes, about `bytes` long in all.
fn big_workflow(bytes: usize) -> String {
    // Failures end the run: no `failure_falls_through` warning per node.
    let mut nodes = format!("{HEAD} graph [on_failure=\"exit\"]\n");
    let mut edges = String::from(" start -> n0\n");
    let mut i: usize = 0;
    while nodes.len() + edges.len() < bytes {
        let _ = writeln!(nodes, " n{i} [shape=parallelogram, script=\"true\"]");
        if i > 0 {
            let _ = writeln!(edges, " n{} -> n{i}", i - 1);
        }
        i += 1;
    }
    let _ = writeln!(edges, " n{} -> exit\n}}", i.saturating_sub(1));
    nodes + &edges
}

fn du_kib(path: &Path) -> u64 {
    Command::new("du")
        .args(["-sk"])
        .arg(path)
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .next()
                .and_then(|s| s.parse().ok())
        })
        .unwrap_or(0)
}

fn proc_status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn socket_of(home: &Path) -> PathBuf {
    home.join("run").join("weftd.sock")
}

fn daemon_pid(home: &Path) -> Option<u32> {
    std::fs::read_to_string(home.join("run").join("weftd.pid"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

fn weft_cmd(weft: &Path, home: &Path) -> Command {
    let mut c = Command::new(weft);
    c.env("WEFT_HOME", home)
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// Five clients subscribe to every run and never read while a run prints
/// `mib` MiB; returns weftd's RSS after the run and its peak.
fn unread_subscribers(weft: &Path, dir: &Path, mib: usize) -> std::io::Result<(u64, u64, f64)> {
    let home = dir.join("subs-home");
    let _ = weft_cmd(weft, &home).args(["daemon", "start"]).status();
    let mut clients = Vec::new();
    for i in 0..5 {
        if let Ok(mut s) = UnixStream::connect(socket_of(&home)) {
            let _ = writeln!(
                s,
                "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"subscribe\",\"params\":{{\"subscription\":\"s{i}\"}}}}"
            );
            clients.push(s);
        }
    }
    let flow = write(
        dir,
        "noisy.fabro",
        &format!(
            "{HEAD} talk [shape=parallelogram, script=\"yes | head -c {}\"]\n start -> talk -> exit\n}}\n",
            mib * 1024 * 1024
        ),
    )?;
    let started = Instant::now();
    let _ = weft_cmd(weft, &home)
        .arg("run")
        .arg(&flow)
        .current_dir(dir)
        .status();
    let wall = started.elapsed().as_secs_f64();
    let pid = daemon_pid(&home).unwrap_or(0);
    let rss = proc_status_kib(pid, "VmRSS:");
    let hwm = proc_status_kib(pid, "VmHWM:");
    drop(clients);
    let _ = weft_cmd(weft, &home).args(["daemon", "stop"]).status();
    Ok((rss, hwm, wall))
}

/// While one client starts a run from a large workflow, another asks for
/// `daemon.status` every 10 ms; returns the slowest answer.
fn status_during_large_start(weft: &Path, dir: &Path, flow: &Path) -> Duration {
    let home = dir.join("status-home");
    let _ = weft_cmd(weft, &home).args(["daemon", "start"]).status();
    let socket = socket_of(&home);
    let request = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"run.start\",\"params\":{{\"workflow\":{{\"path\":\"{}\"}},\"work_dir\":\"{}\",\"dry_run\":true}}}}\n",
        flow.display(),
        dir.display()
    );
    let starter = std::thread::spawn(move || {
        let Ok(mut s) = UnixStream::connect(&socket) else {
            return;
        };
        let _ = s.write_all(request.as_bytes());
        let mut line = String::new();
        let _ = BufReader::new(s).read_line(&mut line);
    });
    let mut worst = Duration::ZERO;
    if let Ok(s) = UnixStream::connect(socket_of(&home))
        && let Ok(read_half) = s.try_clone()
    {
        let mut reader = BufReader::new(read_half);
        let mut writer = s;
        let mut id = 0;
        while !starter.is_finished() {
            id += 1;
            let t = Instant::now();
            let _ = writeln!(
                writer,
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"daemon.status\"}}"
            );
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            worst = worst.max(t.elapsed());
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let _ = starter.join();
    let _ = weft_cmd(weft, &home).args(["daemon", "stop"]).status();
    worst
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let weft = args
        .iter()
        .position(|a| a == "--weft")
        .and_then(|i| args.get(i + 1))
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_weft")), PathBuf::from);
    let only: Option<&String> = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1));
    let dir = tempfile::tempdir()?;
    let d = dir.path();
    let home = d.join("home");
    std::fs::create_dir_all(&home)?;
    println!("Hostile inputs, measured with {}\n", weft.display());
    println!("| input | command | wall | peak RSS | result |");
    println!("| --- | --- | ---: | ---: | --- |");
    let row = |name: &str, cmd: &str, m: &Measured| {
        println!(
            "| {name} | `{cmd}` | {:.2} s | {} MiB | {} |",
            m.wall,
            m.peak_kib / 1024,
            m.status
        );
    };
    let wants = |key: &str| only.is_none_or(|o| o == key);

    if wants("nesting") {
        let f = write(d, "nest.fabro", &nesting(100_000))?;
        row(
            "100,000 nested subgraphs",
            "weft validate",
            &measure(&weft, &["validate", &f.to_string_lossy()], &home, d, None),
        );
    }
    if wants("chain") {
        let sub = d.join("chain");
        std::fs::create_dir_all(&sub)?;
        let f = imports(&sub, 3000, 1)?;
        row(
            "an import chain of 3,000 files",
            "weft validate",
            &measure(&weft, &["validate", &f.to_string_lossy()], &home, d, None),
        );
    }
    if wants("zero") {
        row(
            "/dev/zero as the workflow",
            "weft validate /dev/zero",
            &measure(&weft, &["validate", "/dev/zero"], &home, d, None),
        );
        let f = write(
            d,
            "urandom.fabro",
            &format!("{HEAD} graph [goal=\"@/dev/urandom\"]\n start -> exit\n}}\n"),
        )?;
        row(
            "`goal=\"@/dev/urandom\"`",
            "weft validate",
            &measure(&weft, &["validate", &f.to_string_lossy()], &home, d, None),
        );
    }
    if wants("fifo") {
        let fifo = d.join("workflow.fifo");
        let _ = Command::new("mkfifo").arg(&fifo).status();
        row(
            "a FIFO nobody writes to, as the workflow",
            "weft validate",
            &measure(
                &weft,
                &["validate", &fifo.to_string_lossy()],
                &home,
                d,
                None,
            ),
        );
    }
    if wants("template") {
        let f = write(d, "bomb.fabro", &template_bomb())?;
        row(
            &format!("template bomb ({} bytes)", template_bomb().len()),
            "weft validate",
            &measure(&weft, &["validate", &f.to_string_lossy()], &home, d, None),
        );
    }
    if wants("imports") {
        for files in [22, 15] {
            let sub = d.join(format!("bomb{files}"));
            std::fs::create_dir_all(&sub)?;
            let f = imports(&sub, files, 2)?;
            row(
                &format!("{files} files, each importing the next twice"),
                "weft validate",
                &measure(&weft, &["validate", &f.to_string_lossy()], &home, d, None),
            );
        }
    }
    if wants("attributes") {
        for n in [5_000, 20_000] {
            let f = write(d, &format!("attrs{n}.fabro"), &many_attributes(n))?;
            row(
                &format!("{n} attributes on one node"),
                "weft validate",
                &measure(&weft, &["validate", &f.to_string_lossy()], &home, d, None),
            );
        }
    }
    if wants("big") {
        for mib in [7, 50] {
            let f = write(
                d,
                &format!("big{mib}.fabro"),
                &big_workflow(mib * 1024 * 1024),
            )?;
            row(
                &format!("a {mib} MB workflow"),
                "weft validate",
                &measure(&weft, &["validate", &f.to_string_lossy()], &home, d, None),
            );
        }
    }
    if wants("output") {
        let run_home = d.join("output-home");
        let f = write(
            d,
            "output.fabro",
            &format!(
                "{HEAD} talk [shape=parallelogram, script=\"yes | head -c 200000000\"]\n start -> talk -> exit\n}}\n"
            ),
        )?;
        let m = measure(
            &weft,
            &["run", "--no-daemon", &f.to_string_lossy()],
            &run_home,
            d,
            None,
        );
        let disk = du_kib(&run_home) / 1024;
        row(
            &format!("200 MB of command output (home afterwards: {disk} MiB)"),
            "weft run --no-daemon",
            &m,
        );
    }
    if wants("subscribers") {
        let (rss, hwm, wall) = unread_subscribers(&weft, d, 50)?;
        println!(
            "| 5 subscribers that never read, a run printing 50 MB | weftd | {wall:.2} s | {} MiB (after the run: {} MiB) | |",
            hwm / 1024,
            rss / 1024
        );
    }
    if wants("status") {
        let f = write(d, "large.fabro", &big_workflow(7 * 1024 * 1024))?;
        let worst = status_during_large_start(&weft, d, &f);
        println!(
            "| `daemon.status` while another client starts a 7 MB workflow | weftd | slowest answer {} ms | | |",
            worst.as_millis()
        );
    }
    Ok(())
}
