//! `weftd`: the Weft daemon. Execution moves here in a later issue; for now it
//! only answers `--version` and `--help` so packaging and scripts can rely on it.

fn main() {
    let arg = std::env::args().nth(1);
    match arg.as_deref() {
        Some("--version" | "-V") => println!("weftd {}", env!("CARGO_PKG_VERSION")),
        _ => {
            println!(
                "weftd {}: the Weft daemon (run execution arrives in a later release)",
                env!("CARGO_PKG_VERSION")
            );
            println!("usage: weftd [--version]");
        }
    }
}
