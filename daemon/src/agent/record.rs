//! Writing a session down in the stage directory: `transcript.jsonl`, one
//! [`Entry`] per line, and the full output of each tool call in `tools/`.
//! Recording is best effort: a full disk must not fail the agent, so write
//! errors are counted and reported once, not returned.

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::transcript::{Entry, TOOLS_DIR, TRANSCRIPT_FILE};

#[derive(Debug)]
pub(crate) struct Recorder {
    dir: PathBuf,
    transcript: Option<File>,
    /// The first write error, for one warning.
    pub(crate) error: Option<String>,
}

impl Recorder {
    /// Opens (appending) `dir/transcript.jsonl`; a resumed stage attempt
    /// adds to the same file.
    pub(crate) fn open(dir: &Path) -> Recorder {
        let mut recorder = Recorder {
            dir: dir.to_path_buf(),
            transcript: None,
            error: None,
        };
        let opened = std::fs::create_dir_all(dir).and_then(|()| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join(TRANSCRIPT_FILE))
        });
        match opened {
            Ok(file) => recorder.transcript = Some(file),
            Err(e) => recorder.note(format!("cannot open {TRANSCRIPT_FILE}: {e}")),
        }
        recorder
    }

    /// Appends one line, flushed (a `File` is unbuffered: one write call).
    pub(crate) fn entry(&mut self, entry: &Entry) {
        let Some(file) = self.transcript.as_mut() else {
            return;
        };
        let mut line = match serde_json::to_string(entry) {
            Ok(line) => line,
            Err(e) => return self.note(format!("cannot encode a transcript line: {e}")),
        };
        line.push('\n');
        if let Err(e) = file.write_all(line.as_bytes()) {
            self.note(format!("cannot write {TRANSCRIPT_FILE}: {e}"));
        }
    }

    /// Writes a tool call's full output to `tools/{seq:04}-{tool}.txt` and
    /// returns that path relative to the stage directory.
    pub(crate) fn tool_output(&mut self, seq: u32, tool: &str, content: &str) -> Option<String> {
        let name: String = tool
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '-'
                }
            })
            .take(64)
            .collect();
        let relative = format!("{TOOLS_DIR}/{seq:04}-{name}.txt");
        let written = std::fs::create_dir_all(self.dir.join(TOOLS_DIR))
            .and_then(|()| std::fs::write(self.dir.join(&relative), content));
        match written {
            Ok(()) => Some(relative),
            Err(e) => {
                self.note(format!("cannot write {relative}: {e}"));
                None
            }
        }
    }

    fn note(&mut self, error: String) {
        if self.error.is_none() {
            self.error = Some(error);
        }
    }
}
