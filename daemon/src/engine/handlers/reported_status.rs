//! A command's own report of its outcome: the JSON file it may write at
//! `$WEFT_STATUS_FILE` (the status-file contract of StrongDM's Attractor
//! spec, its appendix C; docs/engine.md, "A command's status file").
//!
//! Decision, the name and the flow: the file is `reported_status.json` in
//! the stage's folder, not `status.json`. The engine writes its own
//! `status.json` there after the commit, from another thread; with one name
//! the stage's report would be replaced by the engine's record, or the
//! record refused. With two, the report stays as the command wrote it and
//! `status.json` says what the engine made of it. The file is removed
//! before each attempt, so an attempt never reads what an earlier attempt
//! (or a run interrupted before the stage was committed, then resumed)
//! left there.

use std::io::ErrorKind;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use serde_json::{Map, Value};

use crate::engine::output;
use crate::limits;
use crate::model::Outcome;

/// The file's name in the stage's folder.
pub(crate) const FILE_NAME: &str = "reported_status.json";

/// The largest status file read. A report is a few hundred bytes; context
/// updates that need more belong in files of the work dir.
pub(crate) const MAX_BYTES: u64 = 64 * 1024;

/// Removes whatever is at `path`, so that only this attempt's report is
/// read: a file or link, or a directory an earlier attempt made there.
pub(crate) fn clear(path: &Path) -> Result<(), String> {
    let removed = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => Err(e),
        // Does not follow links inside it: only the stage's folder is touched.
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
    };
    removed.map_err(|e| {
        format!(
            "could not remove the status file {} left by an earlier attempt: {e}",
            path.display()
        )
    })
}

/// The report at `path`: `None` when the command wrote none; an error,
/// naming the problem, when what is there is not a regular file of at most
/// [`MAX_BYTES`] holding a JSON object.
pub(crate) fn read(path: &Path) -> Result<Option<Map<String, Value>>, String> {
    let shown = path.display();
    let refuse = |why: String| format!("the status file {shown} {why}");
    let meta = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(refuse(format!("cannot be read: {e}"))),
        Ok(meta) => meta,
    };
    if meta.file_type().is_symlink() {
        return Err(refuse(
            "is a symbolic link; write the report itself there, as a regular file".into(),
        ));
    }
    // O_NOFOLLOW: a link put there since the check is refused, not
    // followed; O_NONBLOCK: a FIFO does not wait for a writer. What was
    // opened is checked again below.
    let flags =
        rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY | rustix::fs::OFlags::NOFOLLOW;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(i32::try_from(flags.bits()).unwrap_or(0))
        .open(path)
        .map_err(|e| refuse(format!("cannot be read: {e}")))?;
    let opened = file
        .metadata()
        .map_err(|e| refuse(format!("cannot be read: {e}")))?;
    if !opened.is_file() {
        return Err(refuse(format!(
            "is {}, not a regular file",
            limits::file_kind(&opened.file_type())
        )));
    }
    let too_large = || {
        refuse(format!(
            "is larger than the limit of {}",
            limits::human_bytes(MAX_BYTES)
        ))
    };
    if opened.len() > MAX_BYTES {
        return Err(too_large());
    }
    let bytes = limits::read_bounded(file, MAX_BYTES).map_err(|e| match e {
        limits::ReadError::TooLarge { .. } => too_large(),
        other => refuse(format!("cannot be read: {other}")),
    })?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(report)) => Ok(Some(report)),
        Ok(other) => Err(refuse(format!(
            "must hold a JSON object (outcome, preferred_next_label, suggested_next_ids, \
             context_updates, notes, failure_reason); it holds {}",
            crate::agent::tools::json_kind(&other)
        ))),
        Err(e) => Err(refuse(format!("is not valid JSON: {e}"))),
    }
}

/// Applies `report` to `outcome` (the exit status's): its fields as a
/// routing directive's, and `notes`. An error names the field.
pub(crate) fn apply(report: &Map<String, Value>, outcome: &mut Outcome) -> Result<(), String> {
    output::apply_routing(report, outcome)?;
    output::apply_notes(report, outcome)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]
    use super::*;
    use crate::model::{FailureClass, Status};

    fn report(dir: &Path, text: &str) -> std::path::PathBuf {
        let path = dir.join(FILE_NAME);
        std::fs::write(&path, text).expect("write");
        path
    }

    #[test]
    fn no_file_means_no_report() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert_eq!(read(&dir.path().join(FILE_NAME)), Ok(None));
        clear(&dir.path().join(FILE_NAME)).expect("nothing to clear");
    }

    #[test]
    fn an_attractor_report_routes_and_updates_the_context() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = report(
            dir.path(),
            r#"{"outcome": "partial_success", "preferred_next_label": "Fix",
                "context_updates": {"k": "v"}, "notes": "two of three passed"}"#,
        );
        let found = read(&path).expect("valid").expect("present");
        let mut outcome = Outcome::succeeded();
        apply(&found, &mut outcome).expect("applies");
        assert_eq!(outcome.status, Status::PartiallySucceeded);
        assert_eq!(outcome.preferred_label.as_deref(), Some("Fix"));
        assert_eq!(outcome.context_updates["k"], "v");
        assert_eq!(outcome.notes, ["two of three passed"]);
    }

    #[test]
    fn a_reported_success_replaces_the_exit_status_failure() {
        let mut outcome = Outcome::failed(FailureClass::Deterministic, "exit 1");
        let found: Map<String, Value> =
            serde_json::from_str(r#"{"outcome": "success", "notes": ["a", "b"]}"#).expect("json");
        apply(&found, &mut outcome).expect("applies");
        assert_eq!(outcome.status, Status::Succeeded);
        assert_eq!(outcome.failure, None);
        assert_eq!(outcome.notes, ["a", "b"]);
    }

    #[test]
    fn invalid_fields_are_named() {
        for (text, field) in [
            (r#"{"outcome": "maybe"}"#, "outcome"),
            (r#"{"notes": 3}"#, "notes"),
            (r#"{"notes": ["a", 1]}"#, "notes"),
            (r#"{"context_updates": []}"#, "context_updates"),
            (r#"{"suggested_next_ids": "a"}"#, "suggested_next_ids"),
            (r#"{"preferred_next_label": 1}"#, "preferred_next_label"),
            (r#"{"failure_reason": {}}"#, "failure_reason"),
        ] {
            let found: Map<String, Value> = serde_json::from_str(text).expect("json");
            let err = apply(&found, &mut Outcome::succeeded()).expect_err(text);
            assert!(err.contains(&format!("`{field}`")), "{text}: {err}");
        }
    }

    #[test]
    fn only_a_small_regular_file_holding_an_object_is_read() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join(FILE_NAME);

        std::fs::create_dir(&path).expect("mkdir");
        let err = read(&path).expect_err("a directory");
        assert!(err.contains("is a directory, not a regular file"), "{err}");
        clear(&path).expect("a directory is cleared");
        assert!(!path.exists());

        std::os::unix::fs::symlink("/dev/zero", &path).expect("link");
        let err = read(&path).expect_err("a link");
        assert!(err.contains("symbolic link"), "{err}");
        clear(&path).expect("a link is cleared");
        assert!(std::fs::symlink_metadata(&path).is_err());

        let big = format!(r#"{{"notes": "{}"}}"#, "x".repeat(70 * 1024));
        let err = read(&report(dir.path(), &big)).expect_err("too large");
        assert!(err.contains("larger than the limit of 64 KiB"), "{err}");

        let err = read(&report(dir.path(), "[1]")).expect_err("not an object");
        assert!(err.contains("it holds an array"), "{err}");
        let err = read(&report(dir.path(), "{")).expect_err("not JSON");
        assert!(err.contains("is not valid JSON"), "{err}");
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join(FILE_NAME);
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &path,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        )
        .expect("mkfifo");
        let err = read(&path).expect_err("a FIFO");
        assert!(err.contains("FIFO"), "{err}");
    }
}
