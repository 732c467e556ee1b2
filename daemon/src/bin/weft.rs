//! `weft`: the Weft command line.

fn main() -> std::process::ExitCode {
    weft::cli::main()
}
