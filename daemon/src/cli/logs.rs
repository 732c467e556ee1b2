//! `weft logs RUN [NODE]`: what a run's stages wrote, read from the stage
//! folders of the run directory, in execution order; with `--follow`, the
//! output of running stages as it arrives.

use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::LogsArgs;
use super::exit::{self, CliError, CliResult, EXIT_OK};
use super::reader::Reader;
use crate::ipc::protocol::RunDetail;
use crate::model::LlmUsage;
use crate::model::RunStatus;
use crate::model::{Event, EventKind};
use crate::store::{RunDir, RunRecord, StageRecord};
use crate::util::duration::elapsed;

/// How often `--follow` reads what running stages added to their files
/// (and, with `--no-daemon`, looks for new events).
const POLL: Duration = Duration::from_millis(200);

/// The most bytes read from a log file at once; a long output is copied in
/// pieces of this size, so memory stays bounded whatever it holds.
const CHUNK: u64 = 64 * 1024;

/// At most this many events are read from the database at a time.
const EVENT_PAGE: u32 = 1000;

/// `weft logs`.
pub fn run(args: &LogsArgs) -> CliResult {
    let home = super::home()?;
    super::block_on(async {
        let reader = Reader::open(&home, args.no_daemon)
            .await
            .map_err(CliError::Usage)?;
        let RunDetail { run, stages } = reader.get(&args.run).await.map_err(CliError::Usage)?;
        if args.follow && active(run.status) {
            let mut out = std::io::stdout().lock();
            return match follow(&reader, &run, &stages, args, &mut out).await {
                Ok(()) => exit::code(EXIT_OK),
                Err(Failure::Read(e)) => Err(CliError::Usage(e)),
                Err(Failure::Write(e)) => super::output_done(Err(e)),
            };
        }
        let dir = RunDir::open(&run.run_dir);
        if args.diff && args.node.is_none() {
            let path = run_diff(&run).map_err(CliError::Usage)?;
            let mut out = std::io::stdout().lock();
            return super::output_done(copy_log(&mut out, &path, None));
        }
        let chosen = choose(&stages, args.node.as_deref(), args.visit)
            .map_err(|message| CliError::Usage(format!("run {}: {message}", run.id)))?;
        if args.diff {
            checkpointed(&run).map_err(CliError::Usage)?;
            let mut out = std::io::stdout().lock();
            let written = chosen.iter().try_for_each(|stage| {
                writeln!(out, "{}", header(stage))?;
                copy_log(
                    &mut out,
                    &dir.node_dir(&stage.node_id, stage.visit).join("diff.patch"),
                    None,
                )
            });
            return super::output_done(written);
        }
        let mut out = std::io::stdout().lock();
        let written = chosen
            .iter()
            .try_for_each(|stage| write_stage(&mut out, &dir, stage));
        super::output_done(written)
    })
}

/// The whole run's diff, `final.patch`: an error says why there is none
/// (the run is not checkpointed in git, or has not ended).
fn run_diff(run: &RunRecord) -> Result<std::path::PathBuf, String> {
    checkpointed(run)?;
    let path = run.run_dir.join("final.patch");
    if path.is_file() {
        return Ok(path);
    }
    Err(format!(
        "run {} has no final.patch yet: it is written when the run ends ({}); a stage's diff is `weft logs {} NODE --diff`",
        run.id,
        run.status.as_str(),
        run.id
    ))
}

/// An error unless the run was checkpointed in git (its manifest names its
/// branch).
fn checkpointed(run: &RunRecord) -> Result<(), String> {
    let manifest =
        crate::limits::read_capped(&run.run_dir.join("manifest.json"), crate::limits::MIB)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok());
    match manifest {
        Some(m) if m["run_branch"].is_string() => Ok(()),
        _ => Err(format!(
            "run {} was not checkpointed in git (its work dir was in no repository, or it ran with --no-checkpoint): it has no diffs",
            run.id
        )),
    }
}

/// Whether a run with `status` may still run stages (without a resume).
fn active(status: RunStatus) -> bool {
    matches!(
        status,
        RunStatus::Queued | RunStatus::Running | RunStatus::Blocked
    )
}

enum Failure {
    Read(String),
    Write(std::io::Error),
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        Failure::Write(e)
    }
}

/// A stage whose files `--follow` copies out as they grow.
struct Followed {
    node: String,
    visit: u32,
    folder: PathBuf,
    /// How far stdout.log, stderr.log and an agent's transcript.jsonl have
    /// been copied.
    copied: [u64; 3],
    /// The end of a line not finished yet, per stream; it is printed once
    /// its newline arrives (or the stage ends), so streams never mix
    /// within a line.
    partial: [Vec<u8>; 3],
}

/// Where `--follow` stands: which stage and stream it printed last.
#[derive(Default)]
struct Cursor {
    at: Option<(String, u32, usize)>,
    /// True while the last byte printed was not a newline.
    mid_line: bool,
}

/// `--follow`: prints the finished stages chosen, then streams the output
/// of running and new stages as it arrives until the run ends (or, with
/// `--visit`, until that visit ends). New stages are learnt from the
/// daemon's subscription, or with `--no-daemon` from the database every
/// [`POLL`]; their output is read from the stage folder's files either way,
/// since output events are capped and the files are not.
async fn follow(
    reader: &Reader,
    run: &crate::store::RunRecord,
    stages: &[StageRecord],
    args: &LogsArgs,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let dir = RunDir::open(&run.run_dir);
    let wanted = |node: &str, visit: u32| {
        args.node.as_deref().is_none_or(|n| n == node) && args.visit.is_none_or(|v| v == visit)
    };
    // Subscribe before printing what is recorded: every event after
    // `last_seq` arrives, so no stage can start unseen in between.
    let mut after = run.last_seq;
    let mut live = reader
        .subscribe(&run.id, after)
        .await
        .map_err(Failure::Read)?;
    let mut followed: Vec<Followed> = Vec::new();
    let mut cursor = Cursor::default();
    let mut seen_any = false;
    for stage in stages.iter().filter(|s| wanted(&s.node_id, s.visit)) {
        seen_any = true;
        if stage.status == "running" {
            writeln!(out, "{}", header(stage))?;
            cursor.at = Some((stage.node_id.clone(), stage.visit, 0));
            followed.push(Followed::new(&dir, &stage.node_id, stage.visit));
        } else {
            write_stage(out, &dir, stage)?;
        }
    }
    out.flush()?;
    loop {
        let events = match &mut live {
            Some(subscription) => {
                tokio::select! {
                    event = subscription.next() => match event {
                        Some(event) => vec![event],
                        None => {
                            return Err(Failure::Read(format!(
                                "lost the connection to weftd; `weft logs {} --follow` continues",
                                run.id
                            )));
                        }
                    },
                    () = tokio::time::sleep(POLL) => Vec::new(),
                }
            }
            None => {
                tokio::time::sleep(POLL).await;
                let ended = !active(reader.status(&run.id).await.map_err(Failure::Read)?);
                let page = reader
                    .events(&run.id, after, EVENT_PAGE)
                    .await
                    .map_err(Failure::Read)?;
                if page.is_empty() && ended {
                    // Ended without a final event (its process died).
                    for stage in &mut followed {
                        stage.copy(out, &mut cursor, true)?;
                    }
                    return Ok(());
                }
                page
            }
        };
        for stage in &mut followed {
            stage.copy(out, &mut cursor, false)?;
        }
        for event in events {
            after = after.max(event.seq);
            if let (EventKind::StageStarted { .. }, Some(node), Some(visit)) =
                (&event.kind, &event.node_id, event.visit)
            {
                seen_any |= wanted(node, visit);
            }
            let step = on_event(&event, &dir, &wanted, &mut followed, &mut cursor, out)?;
            out.flush()?;
            match step {
                Step::Continue => {}
                Step::VisitDone => return Ok(()),
                Step::RunEnded => {
                    if let Some(node) = args.node.as_deref().filter(|_| !seen_any) {
                        return Err(Failure::Read(format!(
                            "run {}: node `{node}` never ran",
                            run.id
                        )));
                    }
                    return Ok(());
                }
            }
        }
        out.flush()?;
    }
}

/// What `--follow` does after an event.
enum Step {
    Continue,
    /// The one visit asked for (`--visit`) has ended.
    VisitDone,
    RunEnded,
}

/// Starts following a wanted stage that starts, and finishes one that
/// ends: the rest of its output, an LLM stage's response, and a closing
/// line with its status and duration.
fn on_event(
    event: &Event,
    dir: &RunDir,
    wanted: &impl Fn(&str, u32) -> bool,
    followed: &mut Vec<Followed>,
    cursor: &mut Cursor,
    out: &mut impl Write,
) -> std::io::Result<Step> {
    let (node, visit) = match (&event.node_id, event.visit) {
        (Some(node), Some(visit)) => (node.as_str(), visit),
        _ => ("", 0),
    };
    match &event.kind {
        EventKind::StageStarted { .. }
            if wanted(node, visit) && !followed.iter().any(|f| f.is(node, visit)) =>
        {
            cursor.end_line(out)?;
            writeln!(out, "== {node}@{visit} (running) ==")?;
            cursor.at = Some((node.to_string(), visit, 0));
            followed.push(Followed::new(dir, node, visit));
        }
        EventKind::StageCompleted {
            status,
            duration_ms,
            ..
        }
        | EventKind::StageFailed {
            status,
            duration_ms,
            ..
        } => {
            let Some(at) = followed.iter().position(|f| f.is(node, visit)) else {
                return Ok(Step::Continue);
            };
            let mut stage = followed.remove(at);
            stage.copy(out, cursor, true)?;
            cursor.end_line(out)?;
            // An agent's transcript already ended with its reply.
            let transcript = stage.copied[2] > 0;
            if let Some(text) = read(&stage.folder.join("response.md")).filter(|_| !transcript) {
                writeln!(out, "-- response --")?;
                write_text(out, &text)?;
            }
            let status = if matches!(event.kind, EventKind::StageFailed { .. }) {
                "failed"
            } else {
                status.as_str()
            };
            writeln!(
                out,
                "-- {node}@{visit} {status} in {} --",
                elapsed(Duration::from_millis(*duration_ms))
            )?;
            cursor.at = None;
            // With `--visit`, the one stage wanted has ended.
            if wanted(node, visit) && !wanted(node, visit + 1) {
                return Ok(Step::VisitDone);
            }
        }
        EventKind::RunCompleted { .. }
        | EventKind::RunFailed { .. }
        | EventKind::RunCancelled { .. }
        | EventKind::RunInterrupted { .. } => {
            for stage in followed.iter_mut() {
                stage.copy(out, cursor, true)?;
            }
            cursor.end_line(out)?;
            return Ok(Step::RunEnded);
        }
        _ => {}
    }
    Ok(Step::Continue)
}

impl Followed {
    fn new(dir: &RunDir, node: &str, visit: u32) -> Followed {
        Followed {
            node: node.to_string(),
            visit,
            folder: dir.node_dir(node, visit),
            copied: [0; 3],
            partial: [Vec::new(), Vec::new(), Vec::new()],
        }
    }

    fn is(&self, node: &str, visit: u32) -> bool {
        self.node == node && self.visit == visit
    }

    /// Copies what the stage's files gained since the last call: whole
    /// lines, or everything when `last` (the stage has ended).
    fn copy(
        &mut self,
        out: &mut impl Write,
        cursor: &mut Cursor,
        last: bool,
    ) -> std::io::Result<()> {
        for stream in 0..2 {
            let path = self.folder.join(["stdout.log", "stderr.log"][stream]);
            loop {
                let chunk = read_from(&path, self.copied[stream]);
                if chunk.is_empty() {
                    break;
                }
                self.copied[stream] += chunk.len() as u64;
                self.partial[stream].extend_from_slice(&chunk);
                let whole = if self.partial[stream].len() as u64 >= CHUNK {
                    self.partial[stream].len()
                } else {
                    self.partial[stream]
                        .iter()
                        .rposition(|&b| b == b'\n')
                        .map_or(0, |i| i + 1)
                };
                let text: Vec<u8> = self.partial[stream].drain(..whole).collect();
                self.emit(out, cursor, stream, &text)?;
            }
            if last {
                let rest = std::mem::take(&mut self.partial[stream]);
                self.emit(out, cursor, stream, &rest)?;
            }
        }
        self.copy_transcript(out, cursor)
    }

    /// Prints the entries an agent's session appended to its transcript
    /// since the last call, readably; a line is printed once it is whole
    /// (a line cut short by a crash never is).
    fn copy_transcript(
        &mut self,
        out: &mut impl Write,
        cursor: &mut Cursor,
    ) -> std::io::Result<()> {
        const STREAM: usize = 2;
        let path = self.folder.join(crate::agent::transcript::TRANSCRIPT_FILE);
        loop {
            let chunk = read_from(&path, self.copied[STREAM]);
            if chunk.is_empty() {
                return Ok(());
            }
            self.copied[STREAM] += chunk.len() as u64;
            self.partial[STREAM].extend_from_slice(&chunk);
            let whole = self.partial[STREAM]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            let lines: Vec<u8> = self.partial[STREAM].drain(..whole).collect();
            if self.partial[STREAM].len() > MAX_TRANSCRIPT_LINE {
                // A line this long is not shown (the file has it).
                self.partial[STREAM].clear();
            }
            let mut text = Vec::new();
            for line in lines.split(|&b| b == b'\n') {
                text.extend(super::transcript::render_line(line));
            }
            self.emit(out, cursor, STREAM, &text)?;
        }
    }

    fn emit(
        &self,
        out: &mut impl Write,
        cursor: &mut Cursor,
        stream: usize,
        text: &[u8],
    ) -> std::io::Result<()> {
        if text.is_empty() {
            return Ok(());
        }
        cursor.switch(out, &self.node, self.visit, stream)?;
        out.write_all(text)?;
        cursor.mid_line = !text.ends_with(b"\n");
        Ok(())
    }
}

impl Cursor {
    /// Ends a line left unfinished, so that a marker starts its own.
    fn end_line(&mut self, out: &mut impl Write) -> std::io::Result<()> {
        if std::mem::take(&mut self.mid_line) {
            writeln!(out)?;
        }
        Ok(())
    }

    /// Marks a change of stage (`== node@visit ==`) or of stream (`--
    /// stderr --`, `-- stdout --`) before text from another place.
    fn switch(
        &mut self,
        out: &mut impl Write,
        node: &str,
        visit: u32,
        stream: usize,
    ) -> std::io::Result<()> {
        let here = Some((node.to_string(), visit, stream));
        if self.at == here {
            return Ok(());
        }
        self.end_line(out)?;
        let same_stage = self
            .at
            .as_ref()
            .is_some_and(|(n, v, _)| n == node && *v == visit);
        if !same_stage {
            writeln!(out, "== {node}@{visit} ==")?;
        }
        if same_stage || stream >= 1 {
            writeln!(out, "-- {} --", ["stdout", "stderr", "transcript"][stream])?;
        }
        self.at = here;
        Ok(())
    }
}

/// A transcript line longer than this is skipped by `--follow`.
const MAX_TRANSCRIPT_LINE: usize = 4 * 1024 * 1024;

/// Up to [`CHUNK`] bytes of the regular file at `path` from `offset`;
/// empty when there are none (yet), or the path is not a regular file.
fn read_from(path: &Path, offset: u64) -> Vec<u8> {
    let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
    let Ok(mut file) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(i32::try_from(flags.bits()).unwrap_or(0))
        .open(path)
    else {
        return Vec::new();
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) || file.seek(SeekFrom::Start(offset)).is_err() {
        return Vec::new();
    }
    let mut bytes = Vec::new();
    let _ = file.take(CHUNK).read_to_end(&mut bytes);
    bytes
}
/// The stages to show: all, or NODE's (one visit with `--visit`). A node or
/// visit that never ran is an error naming the ones that did.
fn choose<'a>(
    stages: &'a [StageRecord],
    node: Option<&str>,
    visit: Option<u32>,
) -> Result<Vec<&'a StageRecord>, String> {
    let Some(node) = node else {
        return Ok(stages.iter().collect());
    };
    let of_node: Vec<&StageRecord> = stages.iter().filter(|s| s.node_id == node).collect();
    if of_node.is_empty() {
        let mut ran: Vec<&str> = Vec::new();
        for stage in stages {
            if !ran.contains(&stage.node_id.as_str()) {
                ran.push(&stage.node_id);
            }
        }
        return Err(if ran.is_empty() {
            format!("node `{node}` never ran; no stage has run yet")
        } else {
            format!("node `{node}` never ran; these did: {}", ran.join(", "))
        });
    }
    let Some(visit) = visit else {
        return Ok(of_node);
    };
    let matching: Vec<&StageRecord> = of_node
        .iter()
        .copied()
        .filter(|s| s.visit == visit)
        .collect();
    if matching.is_empty() {
        let visits: Vec<String> = of_node.iter().map(|s| s.visit.to_string()).collect();
        return Err(format!(
            "node `{node}` has no visit {visit}; its visits are {}",
            visits.join(", ")
        ));
    }
    Ok(matching)
}

/// `== node@visit (status, duration) ==`: a running or interrupted stage
/// has no duration, so its header names only its status.
fn header(stage: &StageRecord) -> String {
    let duration = stage
        .duration_ms
        .map(|ms| format!(", {}", elapsed(Duration::from_millis(ms))))
        .unwrap_or_default();
    // An LLM stage's header names the model and what it spent.
    let llm = stage
        .outcome
        .as_ref()
        .and_then(|o| o.get("llm"))
        .and_then(|l| serde_json::from_value::<LlmUsage>(l.clone()).ok())
        .map(|l| format!(", {}", l.describe()))
        .unwrap_or_default();
    format!(
        "== {}@{} ({}{duration}{llm}) ==",
        stage.node_id, stage.visit, stage.status
    )
}

/// The stage's [`header`], then its stdout, its stderr under `-- stderr --`
/// when there is any, and an agent stage's transcript under `-- transcript
/// --` or a prompt stage's response under `-- response --`.
fn write_stage(out: &mut impl Write, dir: &RunDir, stage: &StageRecord) -> std::io::Result<()> {
    writeln!(out, "{}", header(stage))?;
    let folder = dir.node_dir(&stage.node_id, stage.visit);
    if let Some(ran) = crate::sandbox::run::RanIn::read(&folder) {
        writeln!(out, "-- in container {} ({}) --", ran.container, ran.image)?;
    }
    copy_log(out, &folder.join("stdout.log"), None)?;
    copy_log(out, &folder.join("stderr.log"), Some("-- stderr --"))?;
    // An agent's transcript, with those of earlier attempts (a retry, an
    // attempt a crash cut short) first; its last turn is the response.
    let earlier = (1..)
        .map(|n| {
            (
                n,
                folder.join(crate::engine::handlers::kept_transcript_name(n)),
            )
        })
        .take_while(|(_, path)| path.is_file());
    for (n, path) in earlier {
        super::transcript::write(
            out,
            &path,
            &format!("-- transcript of earlier attempt {n} --"),
        )?;
    }
    let transcript = folder.join(crate::agent::transcript::TRANSCRIPT_FILE);
    if super::transcript::write(out, &transcript, "-- transcript --")? {
        return Ok(());
    }
    if let Some(text) = read(&folder.join("response.md")) {
        writeln!(out, "-- response --")?;
        write_text(out, &text)?;
    }
    Ok(())
}

/// Copies a stage's log to `out` as it is (200 MB of output costs a buffer,
/// not 200 MB), under `title` when it has one, ending in a newline. A
/// missing or empty log, or one that is not a regular file, prints nothing.
fn copy_log(out: &mut impl Write, path: &Path, title: Option<&str>) -> std::io::Result<()> {
    let Ok(mut file) = crate::limits::open_regular(path) else {
        return Ok(());
    };
    let mut buf = vec![0; 64 * 1024];
    let mut last = None;
    loop {
        let n = match std::io::Read::read(&mut file, &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if last.is_none()
            && let Some(title) = title
        {
            writeln!(out, "{title}")?;
        }
        out.write_all(&buf[..n])?;
        last = buf[..n].last().copied();
    }
    if last.is_some_and(|b| b != b'\n') {
        writeln!(out)?;
    }
    Ok(())
}

/// The file's text when it exists, is a regular file of at most 16 MiB (a
/// model's response) and is not empty. Shown as it is, so bytes that are not
/// UTF-8 are replaced rather than refused.
fn read(path: &Path) -> Option<String> {
    let bytes = crate::limits::read_capped(path, 16 * crate::limits::MIB).ok()?;
    (!bytes.is_empty()).then(|| String::from_utf8_lossy(&bytes).into_owned())
}

/// `text`, ending in a newline so the next header starts its own line.
fn write_text(out: &mut impl Write, text: &str) -> std::io::Result<()> {
    out.write_all(text.as_bytes())?;
    if !text.ends_with('\n') {
        writeln!(out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(node: &str, visit: u32, rank: u32) -> StageRecord {
        StageRecord {
            run_id: "R".into(),
            node_id: node.into(),
            visit,
            rank,
            handler: "command".into(),
            status: "succeeded".into(),
            attempts: 1,
            started_at: "2026-01-01T00:00:00.000Z".into(),
            finished_at: None,
            duration_ms: Some(10),
            failure_reason: None,
            outcome: None,
            branch: None,
        }
    }

    #[test]
    fn a_node_selects_all_its_visits_and_visit_narrows_to_one() {
        let stages = [stage("start", 1, 1), stage("t", 1, 2), stage("t", 2, 3)];
        let ranks = |chosen: Vec<&StageRecord>| chosen.iter().map(|s| s.rank).collect::<Vec<_>>();
        assert_eq!(ranks(choose(&stages, None, None).expect("all")), [1, 2, 3]);
        assert_eq!(ranks(choose(&stages, Some("t"), None).expect("t")), [2, 3]);
        assert_eq!(
            ranks(choose(&stages, Some("t"), Some(2)).expect("t@2")),
            [3]
        );
    }

    #[test]
    fn a_node_that_never_ran_names_the_ones_that_did() {
        let stages = [stage("start", 1, 1), stage("t", 1, 2), stage("t", 2, 3)];
        let error = choose(&stages, Some("deploy"), None).expect_err("never ran");
        assert_eq!(error, "node `deploy` never ran; these did: start, t");
        let error = choose(&stages, Some("t"), Some(5)).expect_err("no such visit");
        assert_eq!(error, "node `t` has no visit 5; its visits are 1, 2");
    }
}
