//! Reading the TOML configuration files, `$WEFT_HOME/settings.toml` and
//! run configurations (`run.toml`): bounded reads, and the keys nothing
//! reads reported with their position, the way unknown workflow attributes
//! are, so a typo (`max_concurent_runs`) is never silently ignored.
//!
//! Which keys are known is not listed here: a key is unknown when the
//! serde types that read the file skip it ([`serde_ignored`]), so adding a
//! field to a settings struct makes its key known.

use std::path::Path;

use serde::de::DeserializeOwned;

use crate::lang::{Diagnostic, Severity, Span};
use crate::limits::{MAX_CONFIG_BYTES, ReadError, read_text_capped};

/// Diagnostic rule: a key no part of Weft reads.
pub(crate) const UNKNOWN_KEY: &str = "unknown_key";

/// Diagnostic rule: a key of Fabro's run configuration Weft does not
/// implement (`[run.sandbox]`, `[[run.hooks]]`, ...).
pub(crate) const UNSUPPORTED_KEY: &str = "unsupported_key";

/// The sections of Fabro's run configuration (execution/run-configuration.mdx)
/// that Weft reads nothing (or, for `[run.checkpoint]`, not all) of yet:
/// their keys are valid, so they get their own warning rather than
/// "unknown".
const FABRO_RUN_SECTIONS: [&str; 5] = [
    "run.prepare",
    "run.sandbox",
    "run.checkpoint",
    "run.pull_request",
    "run.hooks",
];

/// Reads a configuration file: a regular file of at most
/// [`MAX_CONFIG_BYTES`] of UTF-8. `Ok(None)` when it does not exist; any
/// other failure is worded for the user, naming the file.
pub fn read(path: &Path) -> Result<Option<String>, String> {
    match read_text_capped(path, MAX_CONFIG_BYTES) {
        Ok(text) => Ok(Some(text)),
        Err(ReadError::NotFound) => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// Reads `text` as a `T`, and the dotted paths of the keys `T` skipped
/// (`run.working_dr`, `models.1.nmae`), in the order met.
pub fn parse<T: DeserializeOwned>(text: &str) -> Result<(T, Vec<String>), toml::de::Error> {
    let mut skipped = Vec::new();
    let deserializer = toml::de::Deserializer::parse(text)?;
    let value = serde_ignored::deserialize(deserializer, |path| {
        skipped.push(path.to_string());
    })?;
    Ok((value, skipped))
}

/// The warning for each skipped key of `file` (whose text is `text`), with
/// the position of the key, in file order. A key under a skipped table is
/// not repeated.
#[must_use]
pub fn warnings(file: &str, text: &str, skipped: &[String]) -> Vec<Diagnostic> {
    let Ok(document) = toml::de::DeTable::parse(text) else {
        return Vec::new();
    };
    let name = Path::new(file)
        .file_name()
        .map_or_else(|| file.to_string(), |n| n.to_string_lossy().into_owned());
    let mut seen: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for path in skipped {
        let covered = seen
            .iter()
            .any(|parent| path.starts_with(&format!("{parent}.")) || path == parent);
        if covered {
            continue;
        }
        seen.push(path);
        let fabro = FABRO_RUN_SECTIONS
            .iter()
            .any(|section| path == section || path.starts_with(&format!("{section}.")));
        let mut d = if fabro {
            Diagnostic::new(
                UNSUPPORTED_KEY,
                Severity::Warning,
                format!("`{path}` is a Fabro setting Weft does not implement; it is ignored"),
            )
        } else {
            Diagnostic::new(
                UNKNOWN_KEY,
                Severity::Warning,
                format!("unknown key `{path}` in {name}; it is ignored"),
            )
        };
        d.span = key_span(document.get_ref(), path, text);
        if !fabro {
            d.hint = Some("check the spelling; docs/cli.md lists the keys Weft reads".to_string());
        }
        out.push(d);
    }
    // In the order of the file, whatever order the reader met them in.
    out.sort_by_key(|d| d.span.map(|s| (s.line, s.column)));
    out
}

/// Where the last key of a dotted `path` is written.
fn key_span(table: &toml::de::DeTable<'_>, path: &str, text: &str) -> Option<Span> {
    let mut table = table;
    let mut segments = path.split('.').peekable();
    let mut found = None;
    while let Some(segment) = segments.next() {
        let (key, value) = table.iter().find(|(k, _)| k.get_ref() == segment)?;
        found = Some(key.span());
        if segments.peek().is_none() {
            break;
        }
        let mut value = value.get_ref();
        // An array of tables (`[[models]]`) is entered by index.
        while let Some(array) = value.as_array() {
            let index: usize = segments.next()?.parse().ok()?;
            value = array.get(index)?.get_ref();
        }
        table = value.as_table()?;
    }
    found.map(|range| span_at(text, range))
}

/// The [`Span`] of the byte range `range` of `text`.
fn span_at(text: &str, range: std::ops::Range<usize>) -> Span {
    let start = range.start.min(text.len());
    let before = text.get(..start).unwrap_or("");
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
    Span {
        start: u32::try_from(start).unwrap_or(u32::MAX),
        end: u32::try_from(range.end.min(text.len())).unwrap_or(u32::MAX),
        line: u32::try_from(line).unwrap_or(u32::MAX),
        column: u32::try_from(column).unwrap_or(u32::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    struct Config {
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        section: Section,
    }

    #[derive(Debug, Default, serde::Deserialize)]
    struct Section {
        #[serde(default)]
        size: u32,
    }

    #[test]
    fn skipped_keys_are_reported_with_their_line_and_column() {
        let text =
            "name = \"x\"\nnmae = 1\n[section]\nsize = 2\n  szie = 3\n[other]\na = 1\nb = 2\n";
        let (config, skipped): (Config, _) = parse(text).expect("valid");
        assert_eq!(config.name.as_deref(), Some("x"));
        assert_eq!(config.section.size, 2);
        let mut sorted = skipped.clone();
        sorted.sort();
        assert_eq!(sorted, ["nmae", "other", "section.szie"]);
        let found: Vec<(String, u32, u32)> = warnings("c.toml", text, &skipped)
            .into_iter()
            .map(|d| {
                let span = d.span.expect("a position");
                (d.message, span.line, span.column)
            })
            .collect();
        assert_eq!(
            found,
            [
                (
                    "unknown key `nmae` in c.toml; it is ignored".to_string(),
                    2,
                    1
                ),
                (
                    "unknown key `section.szie` in c.toml; it is ignored".to_string(),
                    5,
                    3
                ),
                (
                    "unknown key `other` in c.toml; it is ignored".to_string(),
                    6,
                    2
                ),
            ]
        );
    }

    #[test]
    fn fabro_sections_weft_does_not_implement_get_their_own_warning() {
        let text = "[run.sandbox]\nprovider = \"docker\"\n[[run.hooks]]\nevent = \"x\"\n";
        let skipped = vec!["run.sandbox".to_string(), "run.hooks".to_string()];
        let found = warnings("run.toml", text, &skipped);
        assert_eq!(found.len(), 2);
        assert!(found.iter().all(|d| d.rule == UNSUPPORTED_KEY));
        assert_eq!(found[1].span.map(|s| s.line), Some(3));
    }

    #[test]
    fn a_config_that_is_not_a_regular_file_or_too_large_is_refused() {
        assert!(read(Path::new("/dev/zero")).is_err_and(|e| e.contains("not a regular file")));
        let dir = tempfile::tempdir().expect("dir");
        let big = dir.path().join("settings.toml");
        std::fs::write(
            &big,
            vec![b'#'; usize::try_from(MAX_CONFIG_BYTES).unwrap_or(0) + 1],
        )
        .expect("write");
        assert!(read(&big).is_err_and(|e| e.contains("larger than")));
        assert_eq!(read(&dir.path().join("missing.toml")), Ok(None));
    }
}
