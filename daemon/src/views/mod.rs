//! The desktop app's read queries: one method per screen, each reading one
//! consistent snapshot of the database (one read transaction) plus the run
//! directory's files.
//!
//! [`Views`] opens the database read-only with a busy timeout, so history
//! browses while weftd writes, and also while it is stopped. A home with no
//! database yet (nothing ever ran) is not an error: lists are empty and a
//! run lookup is [`StoreError::RunNotFound`].

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::ipc::protocol::RunList;
use crate::model::ModelChoice;
use crate::model::RunSummary;
use crate::model::{Code, Event};
use crate::model::{Retro, RetroSummary};
use crate::store::{
    ArtifactRecord, BlobRef, Blobs, EVENTS_PAGE_MAX, Home, QuestionRecord, Result, RunDir,
    StageRecord, Store, StoreError, write_atomic,
};

mod attention;
mod changes;
mod spending;

/// Where the app opens: a `weft://` deep link (its grammar is in
/// [`crate::model::link`]).
pub use crate::model::link::DeepLink;
pub use crate::store::{
    DaySpend, ModelSpend, RunSpendLine, SpendFigures, Spending, SpendingQuery, StageSpend,
};
pub use attention::{AppSettings, Attention, TrayState, WaitingGate};
pub use changes::{Changes, ChangesState, RunGit};

/// The most a text read from a stage folder holds (1 MiB); longer files are
/// cut and named in [`StageFiles::truncated`].
pub(crate) const STAGE_TEXT_MAX: u64 = 1024 * 1024;

/// The most matches one [`Views::search_logs`] returns.
pub(crate) const LOG_MATCHES_MAX: u32 = 5_000;

/// A log line in a [`LogMatch`] is cut to this many characters.
const LOG_LINE_MAX: usize = 1_000;

/// A page of the run list (`runs` screen).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RunsPage {
    /// Newest first.
    pub runs: Vec<RunSummary>,
    /// How many runs match the filters in all (for the virtualised list).
    pub total: u64,
    /// Pending questions per listed run; runs without any are absent.
    pub open_questions: BTreeMap<String, u32>,
}

/// The run options the detail screen shows (never the stored environment).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct RunViewOptions {
    #[serde(default)]
    pub dry_run: bool,
    #[serde(default)]
    pub auto_approve: bool,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub artifacts: Vec<String>,
    #[serde(default)]
    pub model: ModelChoice,
}

/// Everything the run detail screen shows, from one snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RunView {
    pub run: RunSummary,
    /// `--input` values as given.
    #[ts(type = "Record<string, JsonValue>")]
    pub inputs: serde_json::Map<String, serde_json::Value>,
    pub options: RunViewOptions,
    pub edge_count: u32,
    /// In execution order (`rank`).
    pub stages: Vec<StageRecord>,
    /// Every question of the run, oldest first.
    pub questions: Vec<QuestionRecord>,
    /// The run directory's `graph.fabro` (the workflow as it ran); empty
    /// when the file is missing.
    pub graph_source: String,
    /// In capture order.
    pub artifacts: Vec<ArtifactRecord>,
    /// The run's git checkpoint facts (base commit, branches); absent when
    /// the run is not checkpointed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub git: Option<RunGit>,
}

/// One stage's files from its folder in the run directory; `None` for a
/// file the stage did not write.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct StageFiles {
    /// `prompt.md`.
    pub prompt: Option<String>,
    /// `response.md`.
    pub response: Option<String>,
    /// `stdout.log`.
    pub stdout: Option<String>,
    /// `stderr.log`.
    pub stderr: Option<String>,
    /// `status.json`, when it parses.
    pub status: Option<serde_json::Value>,
    /// The command a command stage ran (from `script_invocation.json`).
    pub script: Option<String>,
    /// The fields above that were cut to [`STAGE_TEXT_MAX`] bytes: logs keep
    /// their end (where failures are), other texts their start.
    pub truncated: Vec<String>,
}

/// Which stored text a [`LogMatch`] is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum LogStream {
    Stdout,
    Stderr,
    Response,
}

impl LogStream {
    const ALL: [LogStream; 3] = [LogStream::Stdout, LogStream::Stderr, LogStream::Response];

    fn file_name(self) -> &'static str {
        match self {
            LogStream::Stdout => "stdout.log",
            LogStream::Stderr => "stderr.log",
            LogStream::Response => "response.md",
        }
    }
}

/// One line of a stage's stored output that contains the searched text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct LogMatch {
    pub node_id: String,
    pub visit: u32,
    pub stream: LogStream,
    /// 1-based.
    pub line_number: u32,
    /// The line, cut to 1,000 characters.
    pub line: String,
}

/// The most paths an [`AppError`] carries.
const MAX_ERROR_PATHS: usize = 100;

/// The error every desktop-app command returns: a stable, machine-readable
/// [`Code`] the UI matches on (`run.not_found`, `daemon.not_running`, ...)
/// and a `message` for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct AppError {
    pub code: Code,
    pub message: String,
    /// The paths a refusal is about, when the daemon named them (the dirty
    /// files or the conflicts of `apply.dirty` / `apply.conflicts`, its
    /// `data.paths`, the first few); absent otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(as = "Option<Vec<String>>", optional)]
    pub paths: Vec<String>,
}

impl AppError {
    /// An error with this code and message.
    #[must_use]
    pub fn new(code: Code, message: impl Into<String>) -> AppError {
        AppError {
            code,
            message: message.into(),
            paths: Vec::new(),
        }
    }
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl From<StoreError> for AppError {
    fn from(e: StoreError) -> AppError {
        AppError::new(e.code(), e.to_string())
    }
}

impl From<crate::ipc::client::ClientError> for AppError {
    /// Keeps the client's code: `daemon.not_running` (the UI offers to
    /// start the daemon), or the daemon's own (`run.not_found`, ...); a code
    /// this build does not know (a newer daemon's) is `rpc.error`, with the
    /// daemon's message.
    fn from(e: crate::ipc::client::ClientError) -> AppError {
        let code = Code::parse(e.code()).unwrap_or(Code::RpcError);
        let paths = match &e {
            crate::ipc::client::ClientError::Rpc(rpc) => rpc_paths(rpc),
            _ => Vec::new(),
        };
        AppError {
            paths,
            ..AppError::new(code, e.to_string())
        }
    }
}

/// `data.paths` of a daemon error: its strings, at most [`MAX_ERROR_PATHS`]
/// (the daemon sends a few; a peer sending more is not believed).
fn rpc_paths(rpc: &crate::ipc::protocol::RpcError) -> Vec<String> {
    let Some(serde_json::Value::Array(paths)) =
        rpc.data.as_ref().and_then(|d| d.details.get("paths"))
    else {
        return Vec::new();
    };
    paths
        .iter()
        .filter_map(|p| p.as_str().map(str::to_owned))
        .take(MAX_ERROR_PATHS)
        .collect()
}

/// The app's read-only view of a home's run history.
#[derive(Debug)]
pub struct Views {
    /// `None` when the home has no database yet.
    store: Option<Store>,
}

impl Views {
    /// Opens `home`'s database read-only (busy timeout, no migration). A
    /// missing database gives empty views; a database from a newer Weft is
    /// [`StoreError::SchemaTooNew`].
    pub fn open(home: &Home) -> Result<Views> {
        if !home.db_path().is_file() {
            return Ok(Views { store: None });
        }
        Ok(Views {
            store: Some(Store::open_read_only(home)?),
        })
    }

    /// The run list: runs matching `query`'s filters (status, workflow,
    /// label, text, archived), newest first, paged by `limit`/`offset`, with
    /// the number of matching runs and each listed run's pending questions.
    /// The filters are the store's one run-list query ([`crate::store::RunFilter`]).
    pub fn runs(&self, query: &RunList) -> Result<RunsPage> {
        let Some(store) = &self.store else {
            return Ok(RunsPage {
                runs: Vec::new(),
                total: 0,
                open_questions: BTreeMap::new(),
            });
        };
        // One snapshot for the count, the page and its questions.
        let _tx = store.snapshot()?;
        let filter = query.filter();
        let total = store.count_runs(&filter)?;
        let records = store.list_runs(&filter)?;
        let ids: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
        let open_questions = store.pending_question_counts(&ids)?;
        Ok(RunsPage {
            runs: records.into_iter().map(RunSummary::from).collect(),
            total,
            open_questions,
        })
    }

    /// One run (by id or unique prefix) with its stages, questions,
    /// artifacts and workflow source.
    pub fn run(&self, id_or_prefix: &str) -> Result<RunView> {
        let store = self.store(id_or_prefix)?;
        let _tx = store.snapshot()?;
        let record = store.find_run(id_or_prefix)?;
        let stages = store.stages(&record.id)?;
        let questions = store.questions(Some(&record.id), false)?;
        let artifacts = store.artifacts(&record.id)?;
        let graph_source = crate::limits::read_text_capped(
            &record.run_dir.join("graph.fabro"),
            crate::limits::MAX_WORKFLOW_BYTES,
        )
        .unwrap_or_default();
        let options = serde_json::from_value(record.options.clone()).unwrap_or_default();
        let git = changes::run_git(&record.run_dir);
        Ok(RunView {
            git,
            inputs: record.inputs.clone(),
            options,
            edge_count: record.edge_count,
            stages,
            questions,
            graph_source,
            artifacts,
            run: RunSummary::from(record),
        })
    }

    /// The run's events with `seq > after_seq`, ascending, at most `limit`
    /// (capped at [`EVENTS_PAGE_MAX`]).
    pub fn events(&self, id_or_prefix: &str, after_seq: u64, limit: u32) -> Result<Vec<Event>> {
        let store = self.store(id_or_prefix)?;
        let _tx = store.snapshot()?;
        let record = store.find_run(id_or_prefix)?;
        store.events(&record.id, after_seq, Some(limit.min(EVENTS_PAGE_MAX)))
    }

    /// The files of stage `node_id@visit` of the run. A stage that wrote
    /// nothing (or never ran) has every field `None`.
    pub fn stage_files(&self, id_or_prefix: &str, node_id: &str, visit: u32) -> Result<StageFiles> {
        let dir = self.run_dir(id_or_prefix)?;
        let folder = dir.node_dir(node_id, visit);
        let mut files = StageFiles::default();
        let mut text = |name: &str, field: &str, keep_end: bool| {
            let (text, cut) = read_capped(&folder.join(name), STAGE_TEXT_MAX, keep_end)?;
            if cut {
                files.truncated.push(field.to_string());
            }
            Some(text)
        };
        let prompt = text("prompt.md", "prompt", false);
        let response = text("response.md", "response", false);
        let stdout = text("stdout.log", "stdout", true);
        let stderr = text("stderr.log", "stderr", true);
        files.prompt = prompt;
        files.response = response;
        files.stdout = stdout;
        files.stderr = stderr;
        // Small files Weft wrote; capped all the same, as a run directory
        // is only as trustworthy as what else writes in it.
        files.status = crate::limits::read_capped(&folder.join("status.json"), crate::limits::MIB)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok());
        files.script = crate::limits::read_capped(
            &folder.join("script_invocation.json"),
            crate::limits::MAX_WORKFLOW_BYTES,
        )
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .and_then(|v| v.get("command").and_then(|c| c.as_str()).map(String::from));
        // Written after the stage's commit, off the run's critical path: a
        // stage just committed (or whose executor crashed before writing
        // them) has them in the database already.
        if files.status.is_none() || files.script.is_none() {
            let store = self.store(id_or_prefix)?;
            let record = store.find_run(id_or_prefix)?;
            if let Some(committed) = store.committed_stage_files(&record.id, node_id, visit)? {
                let json = |name: &str| {
                    committed
                        .get(name)
                        .and_then(Option::as_deref)
                        .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
                };
                if files.status.is_none() {
                    files.status = json("status.json");
                }
                if files.script.is_none() {
                    files.script = json("script_invocation.json")
                        .and_then(|v| v.get("command").and_then(|c| c.as_str()).map(String::from));
                }
            }
        }
        Ok(files)
    }

    /// Lines containing `query` (ignoring case) in every stage's stored
    /// stdout, stderr and response, in execution order, at most `limit`
    /// (capped at [`LOG_MATCHES_MAX`]). The whole stored files are searched,
    /// not only what a screen shows. An empty query matches nothing.
    pub fn search_logs(
        &self,
        id_or_prefix: &str,
        query: &str,
        limit: u32,
    ) -> Result<Vec<LogMatch>> {
        let store = self.store(id_or_prefix)?;
        let (record, stages) = {
            let _tx = store.snapshot()?;
            let record = store.find_run(id_or_prefix)?;
            let stages = store.stages(&record.id)?;
            (record, stages)
        };
        let needle = query.to_lowercase();
        let limit = limit.min(LOG_MATCHES_MAX) as usize;
        let mut matches = Vec::new();
        if needle.is_empty() || limit == 0 {
            return Ok(matches);
        }
        let dir = RunDir::open(&record.run_dir);
        for stage in &stages {
            let folder = dir.node_dir(&stage.node_id, stage.visit);
            for stream in LogStream::ALL {
                let Ok(file) = std::fs::File::open(folder.join(stream.file_name())) else {
                    continue;
                };
                let mut reader = BufReader::new(file);
                let mut bytes = Vec::new();
                let mut line_number = 0u32;
                loop {
                    bytes.clear();
                    match reader.read_until(b'\n', &mut bytes) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                    line_number = line_number.saturating_add(1);
                    let line = String::from_utf8_lossy(&bytes);
                    let line = line.trim_end_matches(['\n', '\r']);
                    if line.to_lowercase().contains(&needle) {
                        matches.push(LogMatch {
                            node_id: stage.node_id.clone(),
                            visit: stage.visit,
                            stream,
                            line_number,
                            line: line.chars().take(LOG_LINE_MAX).collect(),
                        });
                        if matches.len() >= limit {
                            return Ok(matches);
                        }
                    }
                }
            }
        }
        Ok(matches)
    }

    /// The store, or `RunNotFound` for `wanted` when there is no database.
    /// Every workflow name of the store's runs, sorted (the runs list's
    /// workflow filter offers them all, not only those of the pages read).
    /// None before the first run.
    pub fn workflow_names(&self) -> Result<Vec<String>> {
        self.store
            .as_ref()
            .map_or(Ok(Vec::new()), Store::workflow_names)
    }

    /// The retro of a run (by id or unique prefix); `None` when it has
    /// none.
    pub fn retro(&self, id_or_prefix: &str) -> Result<Option<Retro>> {
        let store = self.store(id_or_prefix)?;
        let _tx = store.snapshot()?;
        let record = store.find_run(id_or_prefix)?;
        store.retro(&record.id)
    }

    /// The retros list, newest first, at most
    /// [`crate::store::MAX_RETROS_LISTED`].
    pub fn retros(&self) -> Result<Vec<RetroSummary>> {
        self.store.as_ref().map_or(Ok(Vec::new()), |store| {
            store.retros(crate::store::MAX_RETROS_LISTED)
        })
    }

    fn store(&self, wanted: &str) -> Result<&Store> {
        self.store
            .as_ref()
            .ok_or_else(|| StoreError::RunNotFound(wanted.trim().to_string()))
    }

    fn run_dir(&self, id_or_prefix: &str) -> Result<RunDir> {
        let store = self.store(id_or_prefix)?;
        let record = store.find_run(id_or_prefix)?;
        Ok(RunDir::open(record.run_dir))
    }

    /// The latest captured version of artifact `path` of the run, for a
    /// preview: text-like media as text (at most [`ARTIFACT_TEXT_MAX`]
    /// bytes), images as base64 (at most [`ARTIFACT_IMAGE_MAX`] bytes; a
    /// larger image is `truncated` with no bytes), anything else as size
    /// and media type only.
    pub fn artifact(&self, id_or_prefix: &str, path: &str) -> Result<ArtifactContent> {
        let (latest, blob, blobs) = self.latest_artifact(id_or_prefix, path)?;
        let media = artifact_media(path);
        let mut content = ArtifactContent {
            path: latest.path.clone(),
            size: latest.size,
            media: media.to_string(),
            text: None,
            base64: None,
            truncated: false,
        };
        if media.starts_with("text/") || media == "application/json" || media == "image/svg+xml" {
            let bytes = blobs.get(&blob)?;
            let cap = usize::try_from(ARTIFACT_TEXT_MAX).unwrap_or(usize::MAX);
            content.truncated = bytes.len() > cap;
            let shown = &bytes[..bytes.len().min(cap)];
            content.text = Some(String::from_utf8_lossy(shown).into_owned());
        }
        if media.starts_with("image/") {
            if latest.size > ARTIFACT_IMAGE_MAX {
                content.truncated = true;
            } else {
                let bytes = blobs.get(&blob)?;
                content.base64 = Some(base64_encode(&bytes));
            }
        }
        Ok(content)
    }

    /// Writes the latest captured version of artifact `path` of the run to
    /// `artifacts/PATH` in the run directory and returns that file, for
    /// "reveal in folder": the captured bytes may no longer be in the
    /// working directory, and the blob store names files by hash. Writes
    /// only when the file is missing or differs; the bytes are checked
    /// against their hash first, so a damaged blob is never shown as the
    /// artifact.
    pub fn export_artifact(&self, id_or_prefix: &str, path: &str) -> Result<PathBuf> {
        let (latest, blob, blobs) = self.latest_artifact(id_or_prefix, path)?;
        let bytes = blobs.get(&blob)?;
        if BlobRef::of(&bytes) != blob {
            return Err(StoreError::BlobMissing(format!(
                "{} (artifact `{path}`: the stored bytes do not match their hash)",
                latest.blob_hash
            )));
        }
        let run_dir = self.run_dir(id_or_prefix)?;
        // Recorded paths passed `is_artifact_path` (relative, no `.`/`..`),
        // so the target stays inside `artifacts/`.
        let target = latest
            .path
            .split('/')
            .fold(run_dir.path().join(ARTIFACT_EXPORT_DIR), |dir, segment| {
                dir.join(segment)
            });
        if std::fs::read(&target).ok().as_deref() != Some(&bytes[..]) {
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(|e| {
                    StoreError::io(format!("cannot create {}", parent.display()), e)
                })?;
            }
            write_atomic(&target, &bytes)?;
        }
        Ok(target)
    }

    /// The run's latest capture of `path` (capture order: the last record
    /// wins), its blob, and the blob store; [`StoreError::ArtifactNotFound`]
    /// when the run never captured it.
    fn latest_artifact(
        &self,
        id_or_prefix: &str,
        path: &str,
    ) -> Result<(ArtifactRecord, BlobRef, Blobs)> {
        let store = self.store(id_or_prefix)?;
        let record = store.find_run(id_or_prefix)?;
        let latest = store
            .artifacts(&record.id)?
            .into_iter()
            .rev()
            .find(|a| a.path == path)
            .ok_or_else(|| StoreError::ArtifactNotFound {
                run: record.id.clone(),
                path: path.to_string(),
            })?;
        let blob = latest.blob().ok_or_else(|| {
            StoreError::BlobMissing(format!("{} (artifact `{path}`)", latest.blob_hash))
        })?;
        let home = Home::at(store.path().parent().unwrap_or_else(|| Path::new(".")));
        Ok((latest, blob, Blobs::new(&home)))
    }
}

/// The folder of the run directory that [`Views::export_artifact`] writes
/// to.
pub(crate) const ARTIFACT_EXPORT_DIR: &str = "artifacts";

/// The most bytes of a text artifact [`Views::artifact`] returns, 1 MiB.
pub(crate) const ARTIFACT_TEXT_MAX: u64 = 1024 * 1024;

/// The largest image [`Views::artifact`] returns, 10 MiB.
pub(crate) const ARTIFACT_IMAGE_MAX: u64 = 10 * 1024 * 1024;

/// An artifact's bytes for a preview; see [`Views::artifact`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ArtifactContent {
    pub path: String,
    /// In bytes, of the whole artifact.
    pub size: u64,
    /// Guessed from the extension: `text/plain`, `text/markdown`,
    /// `application/json`, `image/png|jpeg|gif|svg+xml|webp`, `text/html`,
    /// or `application/octet-stream`.
    pub media: String,
    /// For text-like media (and SVG), UTF-8 with invalid bytes replaced.
    pub text: Option<String>,
    /// For images, standard base64 with padding.
    pub base64: Option<String>,
    /// Whether the text was cut, or an image was too large to send.
    pub truncated: bool,
}

/// The media type of an artifact, from its extension.
fn artifact_media(path: &str) -> &'static str {
    let name = path.rsplit('/').next().unwrap_or(path);
    let ext = match name.rsplit_once('.') {
        Some((_, ext)) => ext.to_ascii_lowercase(),
        None => return "application/octet-stream",
    };
    match ext.as_str() {
        "md" | "markdown" => "text/markdown",
        "json" => "application/json",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "webp" => "image/webp",
        "html" | "htm" => "text/html",
        "txt" | "log" | "csv" | "tsv" | "yaml" | "yml" | "toml" | "xml" | "rs" | "py" | "js"
        | "ts" | "tsx" | "sh" | "fabro" | "dot" | "diff" | "patch" => "text/plain",
        _ => "application/octet-stream",
    }
}

/// Standard base64 (RFC 4648) with padding.
fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The file's text (invalid UTF-8 replaced), at most `max` bytes of it: the
/// end when `keep_end` (starting at a line), else the start; and whether it
/// was cut. `None` when the file cannot be read.
fn read_capped(path: &Path, max: u64, keep_end: bool) -> Option<(String, bool)> {
    let mut file = std::fs::File::open(path).ok()?;
    let size = file.metadata().ok()?.len();
    let cut = size > max;
    if cut && keep_end {
        file.seek(SeekFrom::Start(size - max)).ok()?;
    }
    let mut bytes = Vec::new();
    file.take(max).read_to_end(&mut bytes).ok()?;
    if cut && keep_end {
        // Start at a whole line (and so never inside a UTF-8 sequence).
        if let Some(newline) = bytes.iter().position(|b| *b == b'\n') {
            bytes.drain(..=newline);
        }
    }
    Some((String::from_utf8_lossy(&bytes).into_owned(), cut))
}

#[cfg(test)]
mod tests;
