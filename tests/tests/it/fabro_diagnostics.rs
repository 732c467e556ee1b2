//! Every Fabro workflow that validated keeps validating with the same
//! diagnostics, whatever another dialect adds (issue 21: Weft reads the
//! Attractor spec's dialect too, and must not change how it reads Fabro's).
//!
//! `tests/fixtures/fabro-diagnostics.txt` holds, for each Fabro workflow
//! of the repository that has no error — the complete ```dot blocks of the
//! reference docs, `examples/`, and the engine and import fixtures — one
//! line per warning (`NAME: warning[RULE] LINE:COLUMN`), or `NAME: clean`.
//! The test loads each again and compares. Workflows with errors are left
//! out (they did not validate, so nothing is promised about them), and so
//! are `info` notes (they never change what validates).
//!
//! After a deliberate change, rewrite the file with
//! `WEFT_UPDATE_DIAGNOSTICS=1 cargo nextest run -p weft-tests fabro_diagnostics`
//! and review its diff.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use weft::lang::{LoadOptions, Severity, Workflow};

use crate::reference_blocks::{doc_load_options, fixture_blocks, fixtures_root, is_complete};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or_else(|| Path::new(".."))
        .to_path_buf()
}

/// The `.fabro` files directly in `dir`, sorted.
fn fabro_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "fabro"))
        .collect();
    files.sort();
    files
}

/// Each Fabro workflow's diagnostics when it has no error: its name, then
/// a line per warning, or `clean`.
fn current() -> BTreeMap<String, Vec<String>> {
    let mut all = BTreeMap::new();
    let mut record = |name: String, wf: &Workflow| {
        if wf.diagnostics.iter().any(|d| d.severity == Severity::Error) {
            return;
        }
        let mut lines: Vec<String> = wf
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Warning)
            .map(|d| {
                let at = d
                    .span
                    .map(|s| format!("{}:{}", s.line, s.column))
                    .unwrap_or_default();
                format!("warning[{}] {at}", d.rule)
            })
            .collect();
        if lines.is_empty() {
            lines.push("clean".into());
        }
        all.insert(name, lines);
    };
    for (block, dir) in fixture_blocks(&fixtures_root()) {
        if !is_complete(&block) {
            continue;
        }
        let name = format!("reference/{}#{}", block.file, block.index);
        let wf = Workflow::from_bytes(&name, block.text.as_bytes(), &dir, &doc_load_options());
        record(name, &wf);
    }
    let root = repo();
    for dir in [
        "examples",
        "tests/fixtures/engine",
        "tests/fixtures/imports",
    ] {
        for file in fabro_files(&root.join(dir)) {
            let wf = Workflow::load(&file, &LoadOptions::default())
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let name = file
                .strip_prefix(&root)
                .unwrap_or(&file)
                .to_string_lossy()
                .into_owned();
            record(name, &wf);
        }
    }
    all
}

fn golden() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/fabro-diagnostics.txt")
}

fn render(all: &BTreeMap<String, Vec<String>>) -> String {
    let mut text = String::new();
    for (name, lines) in all {
        for line in lines {
            text.push_str(&format!("{name}: {line}\n"));
        }
    }
    text
}

#[test]
fn fabro_workflows_that_validated_keep_the_same_diagnostics() {
    let now = render(&current());
    if std::env::var_os("WEFT_UPDATE_DIAGNOSTICS").is_some() {
        std::fs::write(golden(), &now).unwrap_or_else(|e| panic!("{e}"));
        return;
    }
    let before = std::fs::read_to_string(golden()).unwrap_or_else(|e| panic!("{e}"));
    let before_names: std::collections::BTreeSet<&str> = before
        .lines()
        .filter_map(|l| l.split_once(": ").map(|(n, _)| n))
        .collect();
    // Only the workflows recorded as validating are promised anything; a
    // workflow that had errors and now validates is welcome.
    let kept: String = now
        .lines()
        .filter(|l| {
            l.split_once(": ")
                .is_some_and(|(n, _)| before_names.contains(n))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    if kept != before {
        let gone: Vec<&str> = before.lines().filter(|l| !kept.contains(l)).collect();
        let new: Vec<&str> = kept.lines().filter(|l| !before.contains(l)).collect();
        panic!(
            "Fabro workflows' diagnostics changed (an error now, or other warnings).\n\
             recorded but not given now:\n  {}\ngiven now but not recorded:\n  {}\n\
             (WEFT_UPDATE_DIAGNOSTICS=1 rewrites the record after a deliberate change)",
            gone.join("\n  "),
            new.join("\n  ")
        );
    }
}
