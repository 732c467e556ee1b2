//! `weftd`: the Weft daemon. `weftd --foreground` serves until stopped (for
//! service managers and tests); plain `weftd` starts it in the background
//! and returns once it answers. See `weft::server`.

use std::process::ExitCode;

const USAGE: &str = "usage: weftd [--foreground]

Runs Weft's daemon for WEFT_HOME (default: the platform data directory).
  --foreground   serve in this process until SIGTERM, Ctrl-C or `weft daemon stop`
  (no option)    start it in the background and print its pid and socket
  --version      print the version";

fn main() -> ExitCode {
    let arg = std::env::args().nth(1);
    let home = match weft::store::Home::from_env() {
        Ok(h) => h,
        Err(e) => {
            eprintln!("weftd: {e}");
            return ExitCode::from(2);
        }
    };
    match arg.as_deref() {
        Some("--version" | "-V") => {
            println!("weftd {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        Some("--help" | "-h") => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        Some("--foreground") => {
            // Before anything else runs: keys out of the environment that
            // commands could read, into memory; no /proc access for them.
            weft::secrets::protect_process("weftd");
            foreground(home)
        }
        None => background(&home),
        Some(other) => {
            eprintln!("weftd: unknown option `{other}`\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn runtime() -> Option<tokio::runtime::Runtime> {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => Some(rt),
        Err(e) => {
            eprintln!("weftd: cannot start the async runtime: {e}");
            None
        }
    }
}

fn foreground(home: weft::store::Home) -> ExitCode {
    let Some(rt) = runtime() else {
        return ExitCode::FAILURE;
    };
    let local = tokio::task::LocalSet::new();
    let result = local.block_on(&rt, weft::server::serve_holding_lock(home));
    // Commands may still hold blocking reads; do not wait for them.
    rt.shutdown_timeout(std::time::Duration::from_millis(200));
    match result {
        Ok(lock) => {
            // Released by the kernel as the process exits, not before:
            // `weft daemon stop` returns when the lock is free, and must
            // not return while this process still runs.
            std::mem::forget(lock);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("weftd: {e}");
            ExitCode::FAILURE
        }
    }
}

fn background(home: &weft::store::Home) -> ExitCode {
    let Some(rt) = runtime() else {
        return ExitCode::FAILURE;
    };
    let me = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("weftd: cannot find my own executable: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(weft::server::detach::start_detached(home, &me)) {
        Ok((info, started)) => {
            let verb = if started {
                "started"
            } else {
                "already running"
            };
            println!(
                "weftd {verb} (pid {}, socket {})",
                info.pid,
                info.socket_path.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("weftd: {e}");
            ExitCode::FAILURE
        }
    }
}
