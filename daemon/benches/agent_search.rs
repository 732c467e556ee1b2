//! The agent's `grep` and `glob` tools over a generated tree of ~50,000
//! files, next to `rg` doing the same search (when `rg` is installed), so
//! the cost of running them in-process through ripgrep's crates can be
//! compared with the tool itself.
//!
//! `cargo bench -p weft --bench agent_search` (`-- --files N` for another
//! tree size). The tree is a temporary directory with nested packages of
//! small source files, a `.gitignore`d build directory of the same size as
//! a package, and a few matches per package. Each case runs a few times;
//! the best and median wall-clock times are printed as a Markdown table.
//! Asserts nothing.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use weft::agent::tools::{Tool, Workspace};
use weft::exec::cancel::Cancel;

/// Runs per case.
const RUNS: usize = 5;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let files = args
        .iter()
        .position(|a| a == "--files")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(50_000usize);
    let dir = tempfile::tempdir()?;
    let made = generate(dir.path(), files)?;
    eprintln!("generated {made} files under {}", dir.path().display());

    let ws = Workspace::new(dir.path(), &[], Cancel::new())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let rg = Command::new("rg")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());

    let mut table = String::from(
        "| case | tool best | tool median | rg best | rg median |\n|---|---|---|---|---|\n",
    );
    let cases: [(&str, Tool, serde_json::Value, Vec<&str>); 4] = [
        (
            "grep literal, few hits",
            Tool::Grep,
            json!({"pattern": "NEEDLE_[0-9]+", "max_results": 2000}),
            vec!["-n", "NEEDLE_[0-9]+"],
        ),
        (
            "grep, many hits (tool: 200 in all; rg -m: 200 per file)",
            Tool::Grep,
            json!({"pattern": "fn \\w+"}),
            vec!["-n", "-m", "200", "fn \\w+"],
        ),
        (
            "grep -i with glob *.md",
            Tool::Grep,
            json!({"pattern": "needle", "case_insensitive": true, "glob_filter": "*.md"}),
            vec!["-n", "-i", "-g", "*.md", "needle"],
        ),
        (
            "glob **/*.rs",
            Tool::Glob,
            json!({"pattern": "**/*.rs"}),
            vec!["--files", "-g", "*.rs"],
        ),
    ];
    for (name, tool, arguments, rg_args) in cases {
        let tool_times = time(|| {
            let out = runtime.block_on(tool.run(&ws, &arguments));
            anyhow::ensure!(!out.is_error, "{name}: {}", out.content);
            Ok(())
        })?;
        let rg_times = if rg {
            Some(time(|| {
                let status = Command::new("rg")
                    .args(&rg_args)
                    .current_dir(dir.path())
                    .stdout(Stdio::null())
                    .status()?;
                // 1: no match, which is a result too.
                anyhow::ensure!(matches!(status.code(), Some(0 | 1)), "{name}: rg {status}");
                Ok(())
            })?)
        } else {
            None
        };
        let (tool_best, tool_median) = summary(&tool_times);
        let (rg_best, rg_median) = rg_times
            .as_deref()
            .map_or(("-".to_string(), "-".to_string()), summary);
        let _ = writeln!(
            table,
            "| {name} | {tool_best} | {tool_median} | {rg_best} | {rg_median} |"
        );
    }
    if !rg {
        table.push_str("\n(rg is not installed: `apt-get install ripgrep` to compare.)\n");
    }
    println!("{table}");
    Ok(())
}

/// Writes about `files` files: packages of 100 files (10 directories of
/// 10), Rust sources with functions, Markdown notes, a needle in one file
/// of each package, and a `target/` directory that `.gitignore` hides.
fn generate(root: &Path, files: usize) -> std::io::Result<usize> {
    std::fs::write(root.join(".gitignore"), "target/\n")?;
    let mut made = 0;
    let mut package = 0;
    while made < files {
        for sub in 0..10 {
            let dir = root.join(format!("pkg{package:04}/mod{sub}"));
            std::fs::create_dir_all(&dir)?;
            for file in 0..10 {
                let (name, text) = if file == 9 {
                    (
                        format!("notes{file}.md"),
                        format!(
                            "# Notes {package}\n\nSome prose about the module.\nA Needle here.\n"
                        ),
                    )
                } else {
                    let mut text = String::new();
                    for f in 0..20 {
                        let _ = writeln!(text, "fn item_{f}(x: u32) -> u32 {{\n    x + {f}\n}}\n");
                    }
                    if sub == 0 && file == 0 {
                        let _ = writeln!(text, "// NEEDLE_{package}");
                    }
                    (format!("file{file}.rs"), text)
                };
                std::fs::write(dir.join(name), text)?;
                made += 1;
            }
        }
        package += 1;
    }
    // Ignored: as many files as one package, all matching everything.
    let target = root.join("target/debug");
    std::fs::create_dir_all(&target)?;
    for i in 0..100 {
        std::fs::write(target.join(format!("gen{i}.rs")), "fn NEEDLE_0() {}\n")?;
    }
    Ok(made)
}

fn time(mut run: impl FnMut() -> anyhow::Result<()>) -> anyhow::Result<Vec<Duration>> {
    (0..RUNS)
        .map(|_| {
            let started = Instant::now();
            run()?;
            Ok(started.elapsed())
        })
        .collect()
}

fn summary(times: &[Duration]) -> (String, String) {
    let mut sorted = times.to_vec();
    sorted.sort();
    let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1000.0);
    (ms(sorted[0]), ms(sorted[sorted.len() / 2]))
}
