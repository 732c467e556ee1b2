//! `weft artifacts RUN`: the files a run captured from its working
//! directory (`[run.artifacts]`), as a table or JSON; with `--cp PATH DEST`
//! one of them copied out of the blob store.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::ArtifactsArgs;
use super::exit::{CliError, CliResult};
use crate::store::{ArtifactRecord, BlobRef, Blobs};

/// How many hex digits of a content hash the table shows.
const SHORT_HASH: usize = 12;

/// `weft artifacts`.
pub fn run(args: &ArtifactsArgs) -> CliResult {
    let (store, record) = super::open_run(&args.run)?;
    let artifacts = store.artifacts(&record.id).map_err(|e| {
        CliError::Usage(format!(
            "cannot read the artifacts of run {}: {e}",
            record.id
        ))
    })?;
    if let Some([path, dest]) = args.cp.as_deref() {
        return copy_out(&record.id, &artifacts, path, Path::new(dest));
    }
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        serde_json::to_string_pretty(&artifacts)
            .map_err(std::io::Error::other)
            .and_then(|text| writeln!(out, "{text}"))
    } else if artifacts.is_empty() {
        writeln!(
            out,
            "run {} captured no artifacts (set `[run.artifacts] include` in the run configuration)",
            record.id
        )
    } else {
        write_table(&mut out, &artifacts)
    };
    super::output_done(written)
}

/// `--cp PATH DEST`: the latest version of PATH written to DEST, or into
/// DEST when it is an existing directory. An unknown PATH is an error
/// listing the paths the run has.
fn copy_out(run_id: &str, artifacts: &[ArtifactRecord], path: &str, dest: &Path) -> CliResult {
    let fail = |message: String| Err(CliError::Usage(message));
    let wanted = path.trim_start_matches("./");
    // Capture order: the last record of a path is its latest version.
    let Some(artifact) = artifacts.iter().rev().find(|a| a.path == wanted) else {
        return fail(unknown_path(run_id, artifacts, path));
    };
    let Some(blob) = artifact.blob() else {
        return fail(format!(
            "artifact `{}` of run {run_id} names no valid blob (`{}`)",
            artifact.path, artifact.blob_hash
        ));
    };
    let home = super::home()?;
    let bytes = match Blobs::new(&home).get(&blob) {
        Ok(bytes) => bytes,
        Err(e) => return fail(format!("cannot read artifact `{}`: {e}", artifact.path)),
    };
    if BlobRef::of(&bytes) != blob {
        return fail(format!(
            "the stored bytes of artifact `{}` do not match their hash {}; the blob store is damaged",
            artifact.path,
            blob.hex()
        ));
    }
    let target = destination(dest, &artifact.path);
    if let Err(e) = std::fs::write(&target, &bytes) {
        return fail(format!("cannot write {}: {e}", target.display()));
    }
    let written = writeln!(
        std::io::stdout().lock(),
        "copied {} ({}@{}, {}) to {}",
        artifact.path,
        artifact.node_id,
        artifact.visit,
        size(artifact.size),
        target.display()
    );
    super::output_done(written)
}

/// DEST itself, or DEST/basename when DEST is an existing directory.
fn destination(dest: &Path, artifact_path: &str) -> PathBuf {
    if dest.is_dir() {
        // Artifact paths are relative with no `..` segment, so the last
        // segment is a plain file name.
        let name = artifact_path.rsplit('/').next().unwrap_or(artifact_path);
        dest.join(name)
    } else {
        dest.to_path_buf()
    }
}

/// The error for a path the run never captured, listing those it did.
fn unknown_path(run_id: &str, artifacts: &[ArtifactRecord], path: &str) -> String {
    let mut paths: Vec<&str> = artifacts.iter().map(|a| a.path.as_str()).collect();
    paths.sort_unstable();
    paths.dedup();
    if paths.is_empty() {
        format!("run {run_id} has no artifact `{path}`; it captured none")
    } else {
        format!(
            "run {run_id} has no artifact `{path}`; it has: {}",
            paths.join(", ")
        )
    }
}

/// One header line, then one line per artifact in capture order.
fn write_table(out: &mut impl Write, artifacts: &[ArtifactRecord]) -> std::io::Result<()> {
    let header = ["PATH", "STAGE", "SIZE", "HASH", "CAPTURED"];
    let rows: Vec<[String; 5]> = artifacts
        .iter()
        .map(|a| {
            [
                a.path.clone(),
                format!("{}@{}", a.node_id, a.visit),
                size(a.size),
                a.blob_hash.chars().take(SHORT_HASH).collect(),
                a.created_at.clone(),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 5]| -> String {
        let mut text = String::new();
        for (i, (cell, width)) in cells.iter().zip(widths).enumerate() {
            if i > 0 {
                text.push_str("  ");
            }
            text.push_str(cell);
            text.extend(std::iter::repeat_n(
                ' ',
                width.saturating_sub(cell.chars().count()),
            ));
        }
        text.trim_end().to_string()
    };
    writeln!(out, "{}", line(header))?;
    for row in &rows {
        writeln!(out, "{}", line(row.each_ref().map(String::as_str)))?;
    }
    Ok(())
}

/// `512 B`, `1.5 KiB`, `10.0 MiB`.
fn size(bytes: u64) -> String {
    const UNITS: [&str; 3] = ["KiB", "MiB", "GiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    // Precision loss is irrelevant at one decimal.
    #[allow(clippy::cast_precision_loss)]
    let mut value = bytes as f64 / 1024.0;
    let mut unit = UNITS[0];
    for next in &UNITS[1..] {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = next;
    }
    format!("{value:.1} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn artifact(path: &str, node: &str, visit: u32, hash: char) -> ArtifactRecord {
        ArtifactRecord {
            run_id: "R".into(),
            node_id: node.into(),
            visit,
            path: path.into(),
            blob_hash: hash.to_string().repeat(64),
            size: 1536,
            created_at: "2026-01-01T00:00:00.000Z".into(),
        }
    }

    #[test]
    fn sizes_read_in_binary_units_with_one_decimal() {
        assert_eq!(size(0), "0 B");
        assert_eq!(size(1023), "1023 B");
        assert_eq!(size(1536), "1.5 KiB");
        assert_eq!(size(10 * 1024 * 1024), "10.0 MiB");
        assert_eq!(size(3 * 1024 * 1024 * 1024), "3.0 GiB");
    }

    #[test]
    fn the_table_shows_stage_short_hash_and_time() {
        let mut out = Vec::new();
        write_table(
            &mut out,
            &[
                artifact("out/report.txt", "build", 1, 'a'),
                artifact("x", "test", 2, 'b'),
            ],
        )
        .expect("written");
        let text = String::from_utf8(out).expect("utf-8");
        assert_eq!(
            text,
            "PATH            STAGE    SIZE     HASH          CAPTURED\n\
             out/report.txt  build@1  1.5 KiB  aaaaaaaaaaaa  2026-01-01T00:00:00.000Z\n\
             x               test@2   1.5 KiB  bbbbbbbbbbbb  2026-01-01T00:00:00.000Z\n"
        );
    }

    #[test]
    fn an_unknown_path_lists_each_captured_path_once() {
        let artifacts = [
            artifact("b.txt", "build", 1, 'a'),
            artifact("a.txt", "build", 1, 'b'),
            artifact("b.txt", "build", 2, 'c'),
        ];
        assert_eq!(
            unknown_path("R", &artifacts, "nope"),
            "run R has no artifact `nope`; it has: a.txt, b.txt"
        );
        assert_eq!(
            unknown_path("R", &[], "nope"),
            "run R has no artifact `nope`; it captured none"
        );
    }

    #[test]
    fn an_existing_directory_receives_the_file_under_its_own_name() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert_eq!(
            destination(dir.path(), "out/report.txt"),
            dir.path().join("report.txt")
        );
        let file = dir.path().join("copy.txt");
        assert_eq!(destination(&file, "out/report.txt"), file);
    }
}
