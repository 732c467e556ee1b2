//! The preamble: a summary of the run so far that the engine prepends to a
//! prompt or agent node's prompt (execution/context.mdx, "Fidelity" and
//! "Preamble construction"; agents/outputs.mdx, "Preamble rendering"). How
//! much it says depends on the node's [`Fidelity`]. Everything here is pure:
//! the engine gathers a [`PreambleInput`] and [`render`] turns it into text.
//!
//! The reference gives one example (compact) and a sentence per mode; the
//! rest are our choices:
//!
//! - `full`: no preamble (the empty string); the conversation carries the
//!   context.
//! - `truncate`: `Goal: …` and `Run: …`, nothing else.
//! - `compact` (the default): the reference's nested bullets. One
//!   `- **node**: status` bullet per stage (`node@2` from the second visit
//!   on), with sub-bullets: `Model: m, 12.4k tokens in / 3.2k out` and
//!   `Files: a, b` for model stages; `Script:` (its first line, cut),
//!   `Stdout:` and `Stderr:` for command stages, each the last 20 lines /
//!   2,000 characters in an indented fenced block, or `(empty)`; `Answer:`
//!   for human gates; `Failure:` for any stage that did not succeed and has a
//!   reason. The response text itself is left out, as in the reference
//!   example: it is in the context as `response.{node}` for prompts that
//!   want it, and `summary:high` shows it.
//! - `summary:high`: a `### node (status, 1.2s)` section per stage with the
//!   same facts plus the whole script, stdout and stderr tails and the head
//!   of the response, each up to 4,000 characters.
//! - `summary:medium`: one line per stage, `- **node**: status — finding`,
//!   where the finding is the failure reason, else the human answer, else the
//!   response's first line, else stdout's last non-empty line. At most
//!   [`MEDIUM_BUDGET_CHARS`] characters (about 1,500 tokens).
//! - `summary:low`: `- node: status` per stage; at most [`LOW_BUDGET_CHARS`]
//!   characters (about 600 tokens).
//!
//! In the two budgeted modes the goal and the context get a fixed share, and
//! when the stages do not fit in the rest the oldest are collapsed into one
//! line such as `- (12 earlier stages: 11 succeeded, 1 failed)`; the newest
//! stages are the ones kept.
//!
//! Start, exit and conditional stages are never shown: they carry no
//! information. Every mode except `truncate` ends with a `## Context` section
//! (omitted when empty) listing the context values the stages have not
//! already shown and that are not engine bookkeeping (see
//! [`shows_in_preamble`]), in the order given, strings on one line and other
//! values as JSON, cut to a length that depends on the mode.
//!
//! Text is cut at character boundaries, never inside a UTF-8 sequence, and a
//! cut is always marked: `…` where a line was shortened, `[… N earlier
//! lines]` / `[… N more lines]` where whole lines were dropped. Terminal
//! escape sequences and carriage-return overwrites are removed from command
//! output. A value that is still a `blob://sha256/…` ref (the engine
//! resolves them first) is shown as `(stored output: blob://sha256/…)`. The
//! output is a function of the input alone, and ends with a newline unless
//! it is empty.

use std::fmt::{self, Write as _};
use std::time::Duration;

use serde_json::Value;

use crate::model::spend::tokens;
use crate::store::BlobRef;
use crate::util;

/// A fidelity mode (execution/context.mdx, "Fidelity").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fidelity {
    /// No preamble: the node continues a conversation thread.
    Full,
    /// Nested bullets with handler-specific details (the default).
    #[default]
    Compact,
    /// A detailed Markdown section per stage.
    SummaryHigh,
    /// A line per stage with its notable finding (~1,500 tokens).
    SummaryMedium,
    /// Just the outcome per stage (~600 tokens).
    SummaryLow,
    /// Only the goal and the run id.
    Truncate,
}

impl Fidelity {
    /// Reads a mode as workflows spell it (`summary:high`, …); anything else
    /// is `None`. Exact, like the `fidelity_valid` rule.
    #[must_use]
    pub fn parse(text: &str) -> Option<Fidelity> {
        Some(match text {
            "full" => Fidelity::Full,
            "compact" => Fidelity::Compact,
            "summary:high" => Fidelity::SummaryHigh,
            "summary:medium" => Fidelity::SummaryMedium,
            "summary:low" => Fidelity::SummaryLow,
            "truncate" => Fidelity::Truncate,
            _ => return None,
        })
    }

    /// The mode as workflows spell it; [`Fidelity::parse`] reads it back.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Fidelity::Full => "full",
            Fidelity::Compact => "compact",
            Fidelity::SummaryHigh => "summary:high",
            Fidelity::SummaryMedium => "summary:medium",
            Fidelity::SummaryLow => "summary:low",
            Fidelity::Truncate => "truncate",
        }
    }

    /// The fidelity a node runs at: the entering edge's `fidelity`, then the
    /// node's, then the graph's `default_fidelity`, then `compact`
    /// (execution/context.mdx, "Setting fidelity"). Unknown strings are
    /// skipped; validation already reports them.
    #[must_use]
    pub fn resolve(
        edge: Option<&str>,
        node: Option<&str>,
        graph_default: Option<&str>,
    ) -> Fidelity {
        [edge, node, graph_default]
            .into_iter()
            .flatten()
            .find_map(Fidelity::parse)
            .unwrap_or_default()
    }

    /// The fidelity of the first node after a resume: `full` degrades to
    /// `summary:high`, because the conversation thread it would continue is
    /// gone (execution/context.mdx, "Fidelity on resume").
    #[must_use]
    pub(crate) fn after_resume(self) -> Fidelity {
        match self {
            Fidelity::Full => Fidelity::SummaryHigh,
            other => other,
        }
    }
}

impl fmt::Display for Fidelity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the preamble is built from; the engine gathers it.
#[derive(Debug, Clone, Default)]
pub struct PreambleInput {
    pub goal: Option<String>,
    pub run_id: String,
    /// Committed stages in execution order.
    pub stages: Vec<StageSummary>,
    /// The run's context values (the engine passes every key; the renderer
    /// drops the ones [`shows_in_preamble`] rejects).
    pub context: Vec<(String, Value)>,
}

/// One committed stage, as the preamble describes it. Fields a handler does
/// not produce stay `None` / empty.
#[derive(Debug, Clone, Default)]
pub struct StageSummary {
    pub node_id: String,
    /// 1 for the first visit.
    pub visit: u32,
    /// "command", "prompt", "agent", "human", "conditional", "start", "exit",
    /// "wait", "parallel", "fan_in", …
    pub handler: String,
    /// "succeeded", "failed", "partially_succeeded", "skipped", …
    pub status: String,
    pub failure_reason: Option<String>,
    pub duration_ms: Option<u64>,
    /// Command stages: the script that ran.
    pub script: Option<String>,
    /// Command stages: the output as text (may be long).
    pub stdout: Option<String>,
    pub stderr: Option<String>,
    /// Prompt and agent stages.
    pub model: Option<String>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// Prompt and agent stages: the full response text (may be long).
    pub response: Option<String>,
    pub files_touched: Vec<String>,
    /// Human gates: the label chosen.
    pub answer: Option<String>,
}

/// The character budget of `summary:medium` (about 1,500 tokens at 4
/// characters a token).
pub(crate) const MEDIUM_BUDGET_CHARS: usize = 6_000;

/// The character budget of `summary:low` (about 600 tokens).
pub(crate) const LOW_BUDGET_CHARS: usize = 2_400;

/// The preamble for `fidelity`: empty for [`Fidelity::Full`], otherwise text
/// ending with a newline (empty when there is nothing to say). The engine
/// separates it from the prompt with a blank line.
#[must_use]
pub fn render(fidelity: Fidelity, input: &PreambleInput) -> String {
    match fidelity {
        Fidelity::Full => String::new(),
        Fidelity::Truncate => truncate(input),
        Fidelity::Compact => compact(input),
        Fidelity::SummaryHigh => summary_high(input),
        Fidelity::SummaryMedium => budgeted(input, &MEDIUM),
        Fidelity::SummaryLow => budgeted(input, &LOW),
    }
}

/// Whether the context key `key` is listed in a preamble's `## Context`.
/// Hidden: the reference's internal prefixes (`internal.`, `current`,
/// `graph.`, `thread.`, `response.`); what the stage bullets already show
/// (`last_stage`, `last_response`, `command.output`, `command.stderr`,
/// `human.gate.*`); and engine bookkeeping (`outcome`, `failure_class`,
/// `failure_signature`, `preferred_label`, `parallel.results`,
/// `parallel.branch`, `parallel.branch_count`). `parallel.fan_in.*` (which
/// branch won) is shown: no stage bullet carries it.
#[must_use]
pub(crate) fn shows_in_preamble(key: &str) -> bool {
    const HIDDEN_PREFIXES: &[&str] = &[
        "internal.",
        "current",
        "graph.",
        "thread.",
        "response.",
        "human.gate.",
    ];
    const HIDDEN_KEYS: &[&str] = &[
        "last_stage",
        "last_response",
        "outcome",
        "failure_class",
        "failure_signature",
        "preferred_label",
        "command.output",
        "command.stderr",
        "parallel.results",
        "parallel.branch",
        "parallel.branch_count",
    ];
    !HIDDEN_PREFIXES.iter().any(|p| key.starts_with(p)) && !HIDDEN_KEYS.contains(&key)
}

// ---------------------------------------------------------------------------
// The modes

fn truncate(input: &PreambleInput) -> String {
    let mut out = String::new();
    if let Some(goal) = &input.goal {
        let _ = writeln!(out, "Goal: {goal}");
    }
    let _ = writeln!(out, "Run: {}", input.run_id);
    out
}

/// Limits of `compact`.
const COMPACT_TAIL_LINES: usize = 20;
const COMPACT_TAIL_CHARS: usize = 2_000;
const COMPACT_LINE_CHARS: usize = 200;
const COMPACT_SCRIPT_CHARS: usize = 160;
const MAX_FILES: usize = 20;

fn compact(input: &PreambleInput) -> String {
    let mut stages = String::new();
    for stage in shown_stages(input) {
        compact_stage(&mut stages, stage);
    }
    let stages = (!stages.is_empty()).then(|| format!("## Completed stages\n{stages}"));
    let context = context_section(input, COMPACT_LINE_CHARS, usize::MAX);
    join_sections([goal_section(input, usize::MAX), stages, context])
}

fn compact_stage(out: &mut String, stage: &StageSummary) {
    let _ = writeln!(
        out,
        "- **{}**: {}",
        stage_name(stage),
        one_line(&stage.status, COMPACT_LINE_CHARS)
    );
    if let Some(line) = model_line(stage) {
        let _ = writeln!(out, "  - {line}");
    }
    if let Some(line) = files_line(stage) {
        let _ = writeln!(out, "  - {line}");
    }
    if is_command(stage) {
        if let Some(script) = &stage.script {
            let _ = writeln!(
                out,
                "  - Script: {}",
                inline_code(&script_line(script, COMPACT_SCRIPT_CHARS))
            );
        }
        let tail = Limits {
            lines: COMPACT_TAIL_LINES,
            chars: COMPACT_TAIL_CHARS,
        };
        output_block(out, "  - ", "    ", "Stdout", stage.stdout.as_deref(), tail);
        output_block(out, "  - ", "    ", "Stderr", stage.stderr.as_deref(), tail);
    }
    if let Some(answer) = &stage.answer {
        let _ = writeln!(
            out,
            "  - Answer: {}",
            text_value(answer, COMPACT_LINE_CHARS)
        );
    }
    if let Some(reason) = failure(stage) {
        let _ = writeln!(
            out,
            "  - Failure: {}",
            text_value(reason, COMPACT_LINE_CHARS)
        );
    }
}

/// Limits of `summary:high`.
const HIGH_BLOCK: Limits = Limits {
    lines: 200,
    chars: 4_000,
};
const HIGH_LINE_CHARS: usize = 500;

fn summary_high(input: &PreambleInput) -> String {
    let mut stages = String::new();
    for stage in shown_stages(input) {
        stages.push('\n');
        high_stage(&mut stages, stage);
    }
    let stages = (!stages.is_empty()).then(|| format!("## Completed stages\n{stages}"));
    let context = context_section(input, HIGH_LINE_CHARS, usize::MAX);
    join_sections([goal_section(input, usize::MAX), stages, context])
}

fn high_stage(out: &mut String, stage: &StageSummary) {
    let status = one_line(&stage.status, HIGH_LINE_CHARS);
    match stage.duration_ms {
        Some(ms) => {
            let _ = writeln!(
                out,
                "### {} ({status}, {})",
                stage_name(stage),
                util::duration::elapsed_in_prose(Duration::from_millis(ms))
            );
        }
        None => {
            let _ = writeln!(out, "### {} ({status})", stage_name(stage));
        }
    }
    let mut facts = Vec::new();
    facts.extend(model_line(stage));
    facts.extend(files_line(stage));
    if let Some(answer) = &stage.answer {
        facts.push(format!("Answer: {}", text_value(answer, HIGH_LINE_CHARS)));
    }
    if let Some(reason) = failure(stage) {
        facts.push(format!("Failure: {}", text_value(reason, HIGH_LINE_CHARS)));
    }
    for fact in &facts {
        let _ = writeln!(out, "- {fact}");
    }
    if is_command(stage) {
        if let Some(script) = &stage.script {
            out.push_str("\nScript:\n");
            fenced(out, "", &head(script, HIGH_BLOCK));
        }
        for (label, text) in [("Stdout", &stage.stdout), ("Stderr", &stage.stderr)] {
            out.push('\n');
            output_block(out, "", "", label, text.as_deref(), HIGH_BLOCK);
        }
    }
    if let Some(response) = &stage.response {
        out.push('\n');
        if let Some(stored) = stored(response) {
            let _ = writeln!(out, "Response: {stored}");
        } else if response.trim().is_empty() {
            out.push_str("Response: (empty)\n");
        } else {
            out.push_str("Response:\n");
            fenced(out, "", &head(response, HIGH_BLOCK));
        }
    }
}

/// How a budgeted mode shares out its characters.
struct Budget {
    total: usize,
    goal_chars: usize,
    context_chars: usize,
    value_chars: usize,
    /// Add the stage's notable finding to its line.
    finding: Option<usize>,
}

const MEDIUM: Budget = Budget {
    total: MEDIUM_BUDGET_CHARS,
    goal_chars: 500,
    context_chars: 1_500,
    value_chars: 160,
    finding: Some(160),
};

const LOW: Budget = Budget {
    total: LOW_BUDGET_CHARS,
    goal_chars: 300,
    context_chars: 500,
    value_chars: 80,
    finding: None,
};

/// The longest collapse line (`- (N earlier stages: …)`), newline included.
const COLLAPSE_CHARS: usize = 200;
const STAGES_HEADING: &str = "## Completed stages\n";

fn budgeted(input: &PreambleInput, budget: &Budget) -> String {
    let goal = goal_section(input, budget.goal_chars);
    let context = context_section(input, budget.value_chars, budget.context_chars);
    let stages: Vec<&StageSummary> = shown_stages(input).collect();
    let lines: Vec<String> = stages
        .iter()
        .map(|stage| budget_line(stage, budget))
        .collect();

    // Sections are joined by one blank line each: count those too.
    let fixed: usize = [&goal, &context]
        .into_iter()
        .flatten()
        .map(|s| chars(s) + 1)
        .sum();
    let room = budget
        .total
        .saturating_sub(fixed + chars(STAGES_HEADING) + 1);
    let all: usize = lines.iter().map(|l| chars(l)).sum();
    let kept = if all <= room {
        lines.len()
    } else {
        // Newest first, leaving room for the collapse line.
        let mut used = COLLAPSE_CHARS;
        lines
            .iter()
            .rev()
            .take_while(|line| {
                used += chars(line);
                used <= room
            })
            .count()
    };
    let dropped = lines.len() - kept;
    let mut section = String::new();
    if dropped > 0 {
        section.push_str(&collapse_line(&stages[..dropped]));
    }
    for line in &lines[dropped..] {
        section.push_str(line);
    }
    let stages = (!section.is_empty()).then(|| format!("{STAGES_HEADING}{section}"));
    join_sections([goal, stages, context])
}

fn budget_line(stage: &StageSummary, budget: &Budget) -> String {
    let status = one_line(&stage.status, 40);
    let name = util::text::truncate(&stage_name(stage), 100);
    let Some(limit) = budget.finding else {
        return format!("- {name}: {status}\n");
    };
    match finding(stage, limit) {
        Some(finding) => format!("- **{name}**: {status} — {finding}\n"),
        None => format!("- **{name}**: {status}\n"),
    }
}

/// The one thing worth knowing about a stage in `summary:medium`.
fn finding(stage: &StageSummary, limit: usize) -> Option<String> {
    if let Some(reason) = failure(stage) {
        return Some(text_value(reason, limit));
    }
    if let Some(answer) = &stage.answer {
        return Some(format!("answered {}", text_value(answer, limit)));
    }
    let texts = [
        stage.response.as_deref().map(|r| (r, false)),
        stage.stdout.as_deref().map(|s| (s, true)),
    ];
    texts.into_iter().flatten().find_map(|(text, last)| {
        if let Some(stored) = stored(text) {
            return Some(stored);
        }
        let mut lines = text.lines().map(clean);
        let line = if last {
            lines.rfind(|l| !l.trim().is_empty())
        } else {
            lines.find(|l| !l.trim().is_empty())
        };
        line.map(|l| util::text::truncate(l.trim(), limit))
    })
}

/// `- (12 earlier stages: 11 succeeded, 1 failed)`: statuses by count, most
/// first, then by name.
fn collapse_line(stages: &[&StageSummary]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for stage in stages {
        match counts.iter_mut().find(|(s, _)| *s == stage.status) {
            Some((_, n)) => *n += 1,
            None => counts.push((&stage.status, 1)),
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    let counts: Vec<String> = counts
        .iter()
        .map(|(status, n)| format!("{n} {}", one_line(status, 40)))
        .collect();
    let noun = if stages.len() == 1 { "stage" } else { "stages" };
    let body = format!("{} earlier {noun}: {}", stages.len(), counts.join(", "));
    // "- (" + ")\n" take five characters.
    format!("- ({})\n", util::text::truncate(&body, COLLAPSE_CHARS - 5))
}

// ---------------------------------------------------------------------------
// Shared pieces

/// Stages worth showing: start, exit and conditional stages say nothing.
fn shown_stages(input: &PreambleInput) -> impl Iterator<Item = &StageSummary> {
    input
        .stages
        .iter()
        .filter(|s| !matches!(s.handler.as_str(), "start" | "exit" | "conditional"))
}

fn goal_section(input: &PreambleInput, limit: usize) -> Option<String> {
    let goal = input.goal.as_deref()?;
    if goal.trim().is_empty() {
        return None;
    }
    Some(if limit == usize::MAX {
        format!("Goal: {goal}\n")
    } else {
        format!("Goal: {}\n", one_line(goal, limit))
    })
}

/// `## Context` with the values [`shows_in_preamble`] accepts, each cut to
/// `value_chars`, the whole at most `section_chars` (the rest counted in a
/// last line).
fn context_section(
    input: &PreambleInput,
    value_chars: usize,
    section_chars: usize,
) -> Option<String> {
    const HEADING: &str = "## Context\n";
    const MORE_CHARS: usize = 40;
    let shown: Vec<&(String, Value)> = input
        .context
        .iter()
        .filter(|(key, _)| shows_in_preamble(key))
        .collect();
    if shown.is_empty() {
        return None;
    }
    let mut out = HEADING.to_owned();
    let mut used = chars(HEADING);
    for (i, (key, value)) in shown.iter().enumerate() {
        let line = format!(
            "- {}: {}\n",
            one_line(key, 100),
            value_text(value, value_chars)
        );
        let n = chars(&line);
        let last = i + 1 == shown.len();
        let reserve = if last { 0 } else { MORE_CHARS };
        if used.saturating_add(n).saturating_add(reserve) > section_chars {
            let left = shown.len() - i;
            let noun = if left == 1 { "value" } else { "values" };
            let _ = writeln!(out, "- ({left} more context {noun})");
            break;
        }
        used += n;
        out.push_str(&line);
    }
    Some(out)
}

/// Non-empty sections separated by blank lines.
fn join_sections<const N: usize>(sections: [Option<String>; N]) -> String {
    sections
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("\n")
}

/// `node`, or `node@3` from the second visit on.
fn stage_name(stage: &StageSummary) -> String {
    if stage.visit > 1 {
        format!("{}@{}", stage.node_id, stage.visit)
    } else {
        stage.node_id.clone()
    }
}

fn is_command(stage: &StageSummary) -> bool {
    stage.handler == "command" || stage.script.is_some()
}

/// The failure reason worth showing: a stage that did not succeed and says why.
fn failure(stage: &StageSummary) -> Option<&str> {
    let reason = stage.failure_reason.as_deref()?;
    (stage.status != "succeeded" && !reason.trim().is_empty()).then_some(reason)
}

/// `Model: m, 12.4k tokens in / 3.2k out` (counts as [`tokens`] writes them
/// everywhere); `Tokens: …` when the model is unknown.
fn model_line(stage: &StageSummary) -> Option<String> {
    let tokens = (stage.input_tokens.is_some() || stage.output_tokens.is_some()).then(|| {
        (
            tokens(stage.input_tokens.unwrap_or(0)),
            tokens(stage.output_tokens.unwrap_or(0)),
        )
    });
    match (&stage.model, tokens) {
        (Some(model), Some((i, o))) => Some(format!(
            "Model: {}, {i} tokens in / {o} out",
            one_line(model, 100)
        )),
        (Some(model), None) => Some(format!("Model: {}", one_line(model, 100))),
        (None, Some((i, o))) => Some(format!("Tokens: {i} in / {o} out")),
        (None, None) => None,
    }
}

/// `Files: a, b`, at most [`MAX_FILES`] named.
fn files_line(stage: &StageSummary) -> Option<String> {
    let files = &stage.files_touched;
    if files.is_empty() {
        return None;
    }
    let mut named: Vec<String> = files
        .iter()
        .take(MAX_FILES)
        .map(|f| one_line(f, COMPACT_LINE_CHARS))
        .collect();
    if files.len() > MAX_FILES {
        named.push(format!("… ({} more)", files.len() - MAX_FILES));
    }
    Some(format!("Files: {}", named.join(", ")))
}

/// A context value on one line: strings as they are, others as JSON.
fn value_text(value: &Value, limit: usize) -> String {
    match value {
        Value::String(s) => text_value(s, limit),
        other => util::text::truncate(&other.to_string(), limit),
    }
}

/// A string on one line, `(empty)` when blank, a leftover blob ref named.
fn text_value(text: &str, limit: usize) -> String {
    if let Some(stored) = stored(text) {
        stored
    } else if text.trim().is_empty() {
        "(empty)".to_owned()
    } else {
        one_line(text, limit)
    }
}

/// `(stored output: blob://sha256/…)` when `text` is a bare blob ref.
fn stored(text: &str) -> Option<String> {
    BlobRef::parse(text.trim()).map(|r| format!("(stored output: {r})"))
}

/// The first non-empty line of a script, cut; `…` when anything was left out.
fn script_line(script: &str, limit: usize) -> String {
    let mut lines = script.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("");
    let line = util::text::truncate(first, limit);
    if lines.next().is_some() && !line.ends_with('…') {
        format!("{line} …")
    } else {
        line
    }
}

/// `text` as Markdown inline code, with a backtick run longer than any inside.
fn inline_code(text: &str) -> String {
    let ticks = "`".repeat(longest_backtick_run(text) + 1);
    if text.starts_with('`') || text.ends_with('`') {
        format!("{ticks} {text} {ticks}")
    } else {
        format!("{ticks}{text}{ticks}")
    }
}

fn longest_backtick_run(text: &str) -> usize {
    let (mut longest, mut run) = (0, 0);
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}

/// How much of a long text to keep.
#[derive(Clone, Copy)]
struct Limits {
    lines: usize,
    chars: usize,
}

/// The kept lines of a long text and the marker for what was dropped.
struct Excerpt {
    lines: Vec<String>,
    /// `[… N earlier lines]` or `[… N more lines]`.
    marker: Option<String>,
    /// Whether the marker goes before the lines (a tail) or after (a head).
    marker_first: bool,
}

/// `{prefix}{label}:` and the tail of `text` in a fenced block indented by
/// `indent`; `(empty)` or the stored-output note instead when that is all.
fn output_block(
    out: &mut String,
    prefix: &str,
    indent: &str,
    label: &str,
    text: Option<&str>,
    limits: Limits,
) {
    let text = text.unwrap_or("");
    if let Some(stored) = stored(text) {
        let _ = writeln!(out, "{prefix}{label}: {stored}");
        return;
    }
    let tail = tail(text, limits);
    if tail.lines.is_empty() {
        let _ = writeln!(out, "{prefix}{label}: (empty)");
        return;
    }
    let _ = writeln!(out, "{prefix}{label}:");
    fenced(out, indent, &tail);
}

/// A fenced code block holding `excerpt`, each line indented by `indent`.
fn fenced(out: &mut String, indent: &str, excerpt: &Excerpt) {
    let longest = excerpt
        .lines
        .iter()
        .map(|l| longest_backtick_run(l))
        .max()
        .unwrap_or(0);
    let fence = "`".repeat((longest + 1).max(3));
    let mut line = |text: &str| {
        if text.is_empty() {
            out.push('\n');
        } else {
            let _ = writeln!(out, "{indent}{text}");
        }
    };
    line(&fence);
    if excerpt.marker_first {
        excerpt.marker.as_deref().into_iter().for_each(&mut line);
    }
    for text in &excerpt.lines {
        line(text);
    }
    if !excerpt.marker_first {
        excerpt.marker.as_deref().into_iter().for_each(&mut line);
    }
    line(&fence);
}

/// The last lines of `text` within `limits`, trailing blank lines dropped.
/// A single last line longer than the limit keeps its end, after `…`.
fn tail(text: &str, limits: Limits) -> Excerpt {
    let all: Vec<&str> = text.lines().collect();
    let end = all
        .iter()
        .rposition(|l| !clean(l).trim().is_empty())
        .map_or(0, |i| i + 1);
    let mut kept = Vec::new();
    let mut used = 0;
    for line in all[..end].iter().rev() {
        if kept.len() == limits.lines {
            break;
        }
        let line = clean(line);
        let n = chars(&line) + 1;
        if used + n > limits.chars {
            if kept.is_empty() {
                kept.push(util::text::truncate_start(&line, limits.chars));
            }
            break;
        }
        used += n;
        kept.push(line);
    }
    kept.reverse();
    let dropped = end - kept.len();
    Excerpt {
        lines: kept,
        marker: (dropped > 0).then(|| lines_marker(dropped, "earlier")),
        marker_first: true,
    }
}

/// The first lines of `text` within `limits`, trailing blank lines dropped.
/// A single first line longer than the limit keeps its start, before `…`.
fn head(text: &str, limits: Limits) -> Excerpt {
    let all: Vec<&str> = text.lines().collect();
    let end = all
        .iter()
        .rposition(|l| !clean(l).trim().is_empty())
        .map_or(0, |i| i + 1);
    let mut kept = Vec::new();
    let mut used = 0;
    for line in &all[..end] {
        if kept.len() == limits.lines {
            break;
        }
        let line = clean(line);
        let n = chars(&line) + 1;
        if used + n > limits.chars {
            if kept.is_empty() {
                kept.push(util::text::truncate(&line, limits.chars));
            }
            break;
        }
        used += n;
        kept.push(line);
    }
    let dropped = end - kept.len();
    Excerpt {
        lines: kept,
        marker: (dropped > 0).then(|| lines_marker(dropped, "more")),
        marker_first: false,
    }
}

/// `[… 1 earlier line]`, `[… 12 more lines]`.
fn lines_marker(n: usize, which: &str) -> String {
    let noun = if n == 1 { "line" } else { "lines" };
    format!("[… {n} {which} {noun}]")
}

/// A line of terminal output as it would read: escape sequences removed,
/// only the text after the last carriage return (an overwrite), no other
/// control characters.
fn clean(line: &str) -> String {
    let line = line.rsplit('\r').find(|s| !s.is_empty()).unwrap_or("");
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.peek() {
                // CSI: parameters, then one final byte in @..~.
                Some('[') => {
                    chars.next();
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC: up to BEL or ESC \.
                Some(']') => {
                    chars.next();
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' {
                            chars.next_if_eq(&'\\');
                            break;
                        }
                    }
                }
                // A two-character escape.
                Some(_) => {
                    chars.next();
                }
                None => {}
            },
            '\t' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// `text` on one line (its non-blank lines joined by spaces), cut to `limit`
/// characters.
fn one_line(text: &str, limit: usize) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let line = clean(line);
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(line);
        if out.len() > limit.saturating_mul(4) {
            // Far past the limit in bytes, so past it in characters: stop reading.
            break;
        }
    }
    util::text::truncate(&out, limit)
}

fn chars(text: &str) -> usize {
    text.chars().count()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn stage(node: &str, handler: &str, status: &str) -> StageSummary {
        StageSummary {
            node_id: node.to_owned(),
            visit: 1,
            handler: handler.to_owned(),
            status: status.to_owned(),
            ..StageSummary::default()
        }
    }

    /// The plan-test-implement run of execution/context.mdx's example.
    fn health_endpoint_run() -> PreambleInput {
        PreambleInput {
            goal: Some("Add a /health endpoint to the API server".to_owned()),
            run_id: "01JRUN".to_owned(),
            stages: vec![
                stage("start", "start", "succeeded"),
                StageSummary {
                    model: Some("claude-sonnet-4-5".to_owned()),
                    input_tokens: Some(12_400),
                    output_tokens: Some(3_200),
                    response: Some("# Plan\nAdd a route.".to_owned()),
                    files_touched: vec!["docs/plan.md".to_owned()],
                    ..stage("plan", "agent", "success")
                },
                StageSummary {
                    script: Some("cargo test 2>&1 || true".to_owned()),
                    stdout: Some("running 42 tests ... 41 passed, 1 failed\n".to_owned()),
                    stderr: Some(String::new()),
                    duration_ms: Some(1_234),
                    ..stage("test", "command", "success")
                },
            ],
            context: vec![
                ("command.output".to_owned(), json!("running 42 tests")),
                ("current_node".to_owned(), json!("implement")),
                ("graph.goal".to_owned(), json!("Add a /health endpoint")),
                ("internal.run_id".to_owned(), json!("01JRUN")),
                ("last_stage".to_owned(), json!("test")),
                ("outcome".to_owned(), json!("success")),
                ("response.plan".to_owned(), json!("# Plan")),
                ("tests_passed".to_owned(), json!(false)),
            ],
        }
    }

    /// `n` command stages, every tenth failing, each with some output.
    fn long_run(n: usize) -> PreambleInput {
        let stages = (0..n)
            .map(|i| StageSummary {
                script: Some(format!("make step-{i}")),
                stdout: Some(format!("building step {i}\n{}\nok\n", "x".repeat(300))),
                response: Some(format!("response {i}")),
                failure_reason: (i % 10 == 0)
                    .then(|| format!("step {i} broke: {}", "y".repeat(400))),
                ..stage(
                    &format!("step_{i}_{}", "n".repeat(30)),
                    "command",
                    if i % 10 == 0 { "failed" } else { "succeeded" },
                )
            })
            .collect();
        let context = (0..100)
            .map(|i| (format!("key_{i}"), json!("v".repeat(500))))
            .collect();
        PreambleInput {
            goal: Some("g".repeat(5_000)),
            run_id: "01JRUN".to_owned(),
            stages,
            context,
        }
    }

    #[test]
    fn compact_renders_the_reference_example() {
        let text = render(Fidelity::Compact, &health_endpoint_run());
        let expected = "\
Goal: Add a /health endpoint to the API server

## Completed stages
- **plan**: success
  - Model: claude-sonnet-4-5, 12.4k tokens in / 3.2k out
  - Files: docs/plan.md
- **test**: success
  - Script: `cargo test 2>&1 || true`
  - Stdout:
    ```
    running 42 tests ... 41 passed, 1 failed
    ```
  - Stderr: (empty)

## Context
- tests_passed: false
";
        assert_eq!(
            text, expected,
            "compact must follow the reference's example"
        );
    }

    #[test]
    fn fidelity_resolves_edge_then_node_then_graph_then_compact() {
        let r = Fidelity::resolve;
        assert_eq!(
            r(Some("full"), Some("truncate"), Some("summary:low")),
            Fidelity::Full,
            "the edge wins"
        );
        assert_eq!(
            r(None, Some("truncate"), Some("summary:low")),
            Fidelity::Truncate,
            "then the node"
        );
        assert_eq!(
            r(None, None, Some("summary:low")),
            Fidelity::SummaryLow,
            "then the graph default"
        );
        assert_eq!(r(None, None, None), Fidelity::Compact, "then compact");
    }

    #[test]
    fn unknown_fidelity_strings_are_skipped() {
        assert_eq!(
            Fidelity::resolve(Some("ful"), Some("summary:medium"), None),
            Fidelity::SummaryMedium,
            "a typo on the edge falls through to the node"
        );
        assert_eq!(
            Fidelity::resolve(Some("summary"), None, Some("FULL")),
            Fidelity::Compact,
            "parsing is exact, like the fidelity_valid rule"
        );
    }

    #[test]
    fn every_mode_reads_back_its_own_spelling() {
        for mode in [
            Fidelity::Full,
            Fidelity::Compact,
            Fidelity::SummaryHigh,
            Fidelity::SummaryMedium,
            Fidelity::SummaryLow,
            Fidelity::Truncate,
        ] {
            assert_eq!(Fidelity::parse(mode.as_str()), Some(mode), "{mode}");
        }
    }

    #[test]
    fn resume_degrades_only_full_to_summary_high() {
        assert_eq!(Fidelity::Full.after_resume(), Fidelity::SummaryHigh);
        assert_eq!(Fidelity::Compact.after_resume(), Fidelity::Compact);
        assert_eq!(Fidelity::SummaryLow.after_resume(), Fidelity::SummaryLow);
        assert_eq!(Fidelity::Truncate.after_resume(), Fidelity::Truncate);
    }

    #[test]
    fn full_renders_nothing() {
        assert_eq!(render(Fidelity::Full, &health_endpoint_run()), "");
        assert_eq!(render(Fidelity::Full, &long_run(50)), "");
    }

    #[test]
    fn truncate_shows_only_goal_and_run_id() {
        assert_eq!(
            render(Fidelity::Truncate, &health_endpoint_run()),
            "Goal: Add a /health endpoint to the API server\nRun: 01JRUN\n"
        );
        let no_goal = PreambleInput {
            run_id: "01JRUN".to_owned(),
            ..PreambleInput::default()
        };
        assert_eq!(render(Fidelity::Truncate, &no_goal), "Run: 01JRUN\n");
    }

    #[test]
    fn internal_keys_never_appear() {
        let mut input = health_endpoint_run();
        for key in [
            "internal.fidelity",
            "current_node",
            "graph.default_fidelity",
            "thread.id",
            "response.plan",
            "last_response",
            "failure_class",
            "failure_signature",
            "preferred_label",
            "command.stderr",
            "human.gate.label",
            "parallel.results",
        ] {
            input
                .context
                .push((key.to_owned(), json!("SECRET-BOOKKEEPING")));
        }
        input
            .context
            .push(("parallel.fan_in.best_id".to_owned(), json!("b")));
        for mode in [
            Fidelity::Compact,
            Fidelity::SummaryHigh,
            Fidelity::SummaryMedium,
            Fidelity::SummaryLow,
            Fidelity::Truncate,
        ] {
            let text = render(mode, &input);
            for hidden in [
                "SECRET-BOOKKEEPING",
                "internal.",
                "current_node",
                "graph.",
                "outcome",
            ] {
                assert!(!text.contains(hidden), "{mode} shows {hidden}:\n{text}");
            }
            if mode != Fidelity::Truncate {
                assert!(
                    text.contains("- parallel.fan_in.best_id: b"),
                    "{mode}: no stage says which branch won, so the context does"
                );
            }
        }
    }

    #[test]
    fn context_section_is_omitted_when_nothing_is_left() {
        let mut input = health_endpoint_run();
        input.context.retain(|(k, _)| k != "tests_passed");
        let text = render(Fidelity::Compact, &input);
        assert!(!text.contains("## Context"), "{text}");
        assert!(text.ends_with("  - Stderr: (empty)\n"), "{text}");
    }

    #[test]
    fn long_stdout_is_cut_to_its_tail_with_a_marker() {
        let stdout: String = (1..=500).map(|i| format!("line {i}\n")).collect();
        let input = PreambleInput {
            stages: vec![StageSummary {
                script: Some("./build.sh".to_owned()),
                stdout: Some(stdout),
                ..stage("build", "command", "succeeded")
            }],
            ..PreambleInput::default()
        };
        let text = render(Fidelity::Compact, &input);
        assert!(
            text.contains("    [… 480 earlier lines]\n    line 481\n"),
            "{text}"
        );
        assert!(
            text.contains("    line 500\n    ```\n"),
            "the tail is kept:\n{text}"
        );
        assert!(!text.contains("line 480\n"), "{text}");

        let high = render(Fidelity::SummaryHigh, &input);
        assert!(high.contains("[… 300 earlier lines]\nline 301\n"), "{high}");
    }

    #[test]
    fn one_huge_stdout_line_keeps_its_end() {
        let input = PreambleInput {
            stages: vec![StageSummary {
                stdout: Some(format!("{}END", "a".repeat(10_000))),
                ..stage("build", "command", "succeeded")
            }],
            ..PreambleInput::default()
        };
        let text = render(Fidelity::Compact, &input);
        assert!(text.contains("    …aaa"), "{text}");
        assert!(text.contains("aaEND\n"), "{text}");
        assert!(chars(&text) < COMPACT_TAIL_CHARS + 200, "{}", chars(&text));
    }

    #[test]
    fn terminal_noise_is_removed_from_output() {
        let input = PreambleInput {
            stages: vec![StageSummary {
                stdout: Some("\u{1b}[32mok\u{1b}[0m\r\n 10%\r 50%\r100% done\n".to_owned()),
                ..stage("build", "command", "succeeded")
            }],
            ..PreambleInput::default()
        };
        let text = render(Fidelity::Compact, &input);
        assert!(text.contains("    ok\n    100% done\n"), "{text:?}");
    }

    #[test]
    fn medium_and_low_stay_within_budget_for_500_stages() {
        let input = long_run(500);
        for (mode, budget) in [
            (Fidelity::SummaryMedium, MEDIUM_BUDGET_CHARS),
            (Fidelity::SummaryLow, LOW_BUDGET_CHARS),
        ] {
            let text = render(mode, &input);
            assert!(
                chars(&text) <= budget,
                "{mode}: {} > {budget}",
                chars(&text)
            );
            let collapsed = text
                .lines()
                .find(|l| l.starts_with("- (") && l.contains("earlier stages:"))
                .unwrap_or_else(|| panic!("{mode} collapses old stages:\n{text}"));
            assert!(collapsed.contains("succeeded, "), "{collapsed}");
            assert!(collapsed.contains("failed)"), "{collapsed}");
            assert!(text.contains("step_499_"), "{mode} keeps the newest stage");
            assert!(!text.contains("step_0_"), "{mode} drops the oldest stage");
            assert!(
                text.contains("more context values)"),
                "{mode} caps the context"
            );
        }
    }

    #[test]
    fn medium_collapse_counts_add_up() {
        let text = render(Fidelity::SummaryMedium, &long_run(500));
        let shown = text.lines().filter(|l| l.starts_with("- **step_")).count();
        let collapsed = text
            .lines()
            .find_map(|l| l.strip_prefix("- ("))
            .and_then(|l| l.split(' ').next())
            .and_then(|n| n.parse::<usize>().ok());
        assert_eq!(collapsed.map(|c| c + shown), Some(500), "{text}");
    }

    #[test]
    fn small_runs_are_not_collapsed() {
        let text = render(Fidelity::SummaryLow, &health_endpoint_run());
        assert_eq!(
            text,
            "Goal: Add a /health endpoint to the API server\n\n\
             ## Completed stages\n- plan: success\n- test: success\n\n\
             ## Context\n- tests_passed: false\n"
        );
    }

    #[test]
    fn medium_shows_one_notable_finding_per_stage() {
        let input = PreambleInput {
            stages: vec![
                StageSummary {
                    response: Some("\n\nThe plan is ready.\nMore.".to_owned()),
                    ..stage("plan", "prompt", "succeeded")
                },
                StageSummary {
                    stdout: Some("compiling\n2 tests passed\n\n".to_owned()),
                    ..stage("test", "command", "succeeded")
                },
                StageSummary {
                    failure_reason: Some("exit code 101".to_owned()),
                    stdout: Some("noise".to_owned()),
                    ..stage("lint", "command", "failed")
                },
                StageSummary {
                    answer: Some("[A] Approve".to_owned()),
                    ..stage("review", "human", "succeeded")
                },
            ],
            ..PreambleInput::default()
        };
        let text = render(Fidelity::SummaryMedium, &input);
        assert_eq!(
            text,
            "## Completed stages\n\
             - **plan**: succeeded — The plan is ready.\n\
             - **test**: succeeded — 2 tests passed\n\
             - **lint**: failed — exit code 101\n\
             - **review**: succeeded — answered [A] Approve\n"
        );
    }

    #[test]
    fn summary_high_reports_each_stage_in_detail() {
        let text = render(Fidelity::SummaryHigh, &health_endpoint_run());
        for line in [
            "## Completed stages\n\n### plan (success)\n",
            "- Model: claude-sonnet-4-5, 12.4k tokens in / 3.2k out\n",
            "Response:\n```\n# Plan\nAdd a route.\n```\n",
            "### test (success, 1.2s)\n",
            "Script:\n```\ncargo test 2>&1 || true\n```\n",
            "Stdout:\n```\nrunning 42 tests ... 41 passed, 1 failed\n```\n",
            "Stderr: (empty)\n",
            "## Context\n- tests_passed: false\n",
        ] {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
    }

    #[test]
    fn long_responses_keep_their_head_in_summary_high() {
        let response: String = (1..=1_000).map(|i| format!("point {i}\n")).collect();
        let input = PreambleInput {
            stages: vec![StageSummary {
                response: Some(response),
                ..stage("plan", "agent", "succeeded")
            }],
            ..PreambleInput::default()
        };
        let text = render(Fidelity::SummaryHigh, &input);
        assert!(text.contains("```\npoint 1\npoint 2\n"), "{text}");
        assert!(
            text.contains("point 200\n[… 800 more lines]\n```\n"),
            "{text}"
        );
    }

    #[test]
    fn failures_visits_and_answers_are_shown() {
        let input = PreambleInput {
            stages: vec![
                StageSummary {
                    visit: 2,
                    failure_reason: Some("tests failed\nsee log".to_owned()),
                    ..stage("fix", "agent", "failed")
                },
                StageSummary {
                    answer: Some("Ship it".to_owned()),
                    ..stage("approve", "human", "succeeded")
                },
                stage("gate", "conditional", "succeeded"),
                stage("exit", "exit", "succeeded"),
            ],
            ..PreambleInput::default()
        };
        let text = render(Fidelity::Compact, &input);
        assert_eq!(
            text,
            "## Completed stages\n\
             - **fix@2**: failed\n  - Failure: tests failed see log\n\
             - **approve**: succeeded\n  - Answer: Ship it\n"
        );
    }

    #[test]
    fn leftover_blob_refs_are_named_not_inlined() {
        let blob = format!("blob://sha256/{}", "ab".repeat(32));
        let input = PreambleInput {
            stages: vec![StageSummary {
                stdout: Some(blob.clone()),
                ..stage("test", "command", "succeeded")
            }],
            context: vec![("report".to_owned(), json!(blob))],
            ..PreambleInput::default()
        };
        let text = render(Fidelity::Compact, &input);
        assert!(
            text.contains(&format!("  - Stdout: (stored output: {blob})\n")),
            "{text}"
        );
        assert!(
            text.contains(&format!("- report: (stored output: {blob})\n")),
            "{text}"
        );
    }

    #[test]
    fn context_values_are_one_line_and_cut() {
        let input = PreambleInput {
            context: vec![
                ("notes".to_owned(), json!("first\n\nsecond")),
                ("long".to_owned(), json!("z".repeat(1_000))),
                ("obj".to_owned(), json!({"a": [1, 2]})),
                ("blank".to_owned(), json!("")),
            ],
            ..PreambleInput::default()
        };
        let text = render(Fidelity::Compact, &input);
        assert!(text.contains("- notes: first second\n"), "{text}");
        assert!(
            text.contains(&format!("- long: {}…\n", "z".repeat(199))),
            "{text}"
        );
        assert!(text.contains("- obj: {\"a\":[1,2]}\n"), "{text}");
        assert!(text.contains("- blank: (empty)\n"), "{text}");
    }

    #[test]
    fn multi_byte_text_is_cut_safely() {
        let wide = "é日本🦀".repeat(3_000);
        assert_eq!(chars(&util::text::truncate(&wide, 10)), 10);
        assert_eq!(chars(&util::text::truncate_start(&wide, 10)), 10);
        let input = PreambleInput {
            goal: Some(wide.clone()),
            stages: (0..50)
                .map(|i| StageSummary {
                    script: Some(wide.clone()),
                    stdout: Some(format!("{wide}\n{wide}")),
                    stderr: Some(wide.clone()),
                    response: Some(wide.clone()),
                    failure_reason: Some(wide.clone()),
                    answer: Some(wide.clone()),
                    files_touched: vec![wide.clone()],
                    ..stage(&format!("n{i}"), "command", "failed")
                })
                .collect(),
            context: vec![("k".to_owned(), json!(wide))],
            ..PreambleInput::default()
        };
        for mode in [
            Fidelity::Compact,
            Fidelity::SummaryHigh,
            Fidelity::SummaryMedium,
            Fidelity::SummaryLow,
        ] {
            let text = render(mode, &input);
            assert!(text.contains('…'), "{mode} marks its cuts");
        }
        assert!(chars(&render(Fidelity::SummaryMedium, &input)) <= MEDIUM_BUDGET_CHARS);
        assert!(chars(&render(Fidelity::SummaryLow, &input)) <= LOW_BUDGET_CHARS);
    }

    #[test]
    fn scripts_with_backticks_stay_inline_code() {
        assert_eq!(inline_code("echo `date`"), "`` echo `date` ``");
        assert_eq!(inline_code("a `b` c"), "``a `b` c``");
        assert_eq!(inline_code("`x`"), "`` `x` ``");
        assert_eq!(script_line("set -e\ncargo test\n", 100), "set -e …");
    }

    #[test]
    fn rendering_is_deterministic() {
        let input = long_run(120);
        for mode in [
            Fidelity::Compact,
            Fidelity::SummaryHigh,
            Fidelity::SummaryMedium,
            Fidelity::SummaryLow,
        ] {
            assert_eq!(render(mode, &input), render(mode, &input), "{mode}");
        }
    }
}
