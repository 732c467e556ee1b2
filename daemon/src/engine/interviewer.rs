//! Questions for human gates and the ways they get answered
//! (workflows/human-in-the-loop.mdx).
//!
//! A gate's options are its outgoing edges ([`choices`]); the engine builds a
//! [`Question`] from them and hands it to an [`Interviewer`]: the terminal
//! ([`Console`]), `--auto-approve` ([`AutoApprove`]) or a test script
//! ([`Scripted`]). Typed text becomes an [`Answer`] through [`match_answer`].
//!
//! Gates fail closed (execution/failures.mdx, "Human gates fail closed when
//! unanswered"): a closed stdin, an unreadable terminal or an exhausted
//! script yields [`Answer::Interrupted`], never a default choice. Only the
//! caller's timeout with `human.default_choice`, or [`AutoApprove`], picks an
//! option nobody typed.

use std::collections::VecDeque;
use std::future::Future;
use std::io::{BufRead, IsTerminal, Write};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tokio::task::JoinHandle;

use crate::lang::graph::Graph;
use crate::lang::value::Value;
use crate::util::lock::lock;

/// One option of a gate: an outgoing edge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    /// The accelerator, e.g. `A` from `[A] Approve` (see [`parse_accelerator`]).
    pub key: Option<String>,
    /// The edge label as written (`[A] Approve`); the target id when the
    /// edge has no label.
    pub label: String,
    /// The label without its accelerator (`Approve`).
    pub text: String,
    /// The edge's target node id.
    pub target: String,
}

/// What a human gate asks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Question {
    /// Chosen by the caller; unique within a run.
    pub id: String,
    /// The gate node.
    pub node_id: String,
    /// The gate node's label, or its id when it has none.
    pub text: String,
    /// The previous stage's response or output, shown above the question.
    pub context: Option<String>,
    /// The fixed options, in edge declaration order.
    pub choices: Vec<Choice>,
    /// True when the gate has a `freeform=true` edge: text that matches no
    /// choice is then an answer of its own.
    pub freeform: bool,
    /// How long the gate waits for an answer (its `timeout`), if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// What a timeout picks (`human.default_choice`), if set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_choice: Option<String>,
}

impl Question {
    /// The question gate `node_id` of `graph` asks: its label (the id when
    /// unlabelled, or when the node is missing) and its [`choices`].
    #[must_use]
    pub fn for_gate(
        id: impl Into<String>,
        graph: &Graph,
        node_id: &str,
        context: Option<String>,
    ) -> Question {
        let text = graph
            .node(node_id)
            .map_or_else(|| node_id.to_string(), |n| n.label().into_owned());
        let (choices, freeform) = choices(graph, node_id);
        let (timeout_ms, default_choice) = graph.node(node_id).map_or((None, None), wait_of);
        Question {
            id: id.into(),
            node_id: node_id.to_string(),
            text,
            context,
            choices,
            freeform,
            timeout_ms,
            default_choice,
        }
    }

    /// What happens when nobody answers, for people: `times out in 5m,
    /// then takes "Hold"`, `times out in 30s, then fails (no default
    /// choice)`; `None` for a gate without a timeout, which waits for good.
    #[must_use]
    pub(crate) fn wait_note(&self) -> Option<String> {
        let after =
            crate::util::duration::setting(std::time::Duration::from_millis(self.timeout_ms?));
        Some(match &self.default_choice {
            Some(default) => {
                let shown = match match_answer(self, default) {
                    Some(Answer::Choice(i)) => self
                        .choices
                        .get(i)
                        .map_or(default.as_str(), |c| c.text.as_str()),
                    _ => default.as_str(),
                };
                format!("times out in {after}, then takes \"{shown}\"")
            }
            None => format!("times out in {after}, then fails (no default choice)"),
        })
    }

    /// True when nothing can answer the question: no choices, no freeform
    /// edge.
    #[must_use]
    pub(crate) fn is_unanswerable(&self) -> bool {
        self.choices.is_empty() && !self.freeform
    }
}

/// How a question was answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The choice at this index of [`Question::choices`].
    Choice(usize),
    /// Text for the gate's freeform edge.
    Freeform(String),
    /// No answer could be captured (stdin closed, prompt canceled, script
    /// exhausted); the string says why. The gate fails: it must not advance.
    Interrupted(String),
    /// The person explicitly declined to answer. Also not an approval.
    Skipped,
}

/// The longest accelerator key: short enough that `Yes - ship it` reads as
/// key `Yes`, long enough to keep `Approve - with notes` whole.
const MAX_KEY_CHARS: usize = 3;

/// Splits an edge label into its accelerator key and the remaining text.
///
/// The three formats of human-in-the-loop.mdx are recognised: `[K] Label`,
/// `K) Label` and `K - Label` (the dash needs whitespace on both sides, so
/// `A-B test` is plain text). The key is 1 to 3 alphanumeric characters and
/// the text after it must not be empty; anything else has no accelerator
/// and comes back as `(None, label trimmed)`. Keys keep their case; matching
/// ignores it.
#[must_use]
pub(crate) fn parse_accelerator(label: &str) -> (Option<String>, String) {
    let trimmed = label.trim();
    let forms: [Form; 3] = [bracketed, parenthesised, dashed];
    forms
        .iter()
        .find_map(|form| {
            form(trimmed).filter(|(key, text)| {
                !text.is_empty()
                    && (1..=MAX_KEY_CHARS).contains(&key.chars().count())
                    && key.chars().all(char::is_alphanumeric)
            })
        })
        .map_or_else(
            || (None, trimmed.to_string()),
            |(key, text)| (Some(key.to_string()), text.to_string()),
        )
}

/// Splits a label in one accelerator format into (key, text), unchecked.
type Form = fn(&str) -> Option<(&str, &str)>;

/// `[K] Label`
fn bracketed(label: &str) -> Option<(&str, &str)> {
    let (key, text) = label.strip_prefix('[')?.split_once(']')?;
    Some((key, text.trim()))
}

/// `K) Label`
fn parenthesised(label: &str) -> Option<(&str, &str)> {
    let (key, text) = label.split_once(')')?;
    Some((key, text.trim()))
}

/// `K - Label`
fn dashed(label: &str) -> Option<(&str, &str)> {
    let (key, text) = label.split_once('-')?;
    let spaced = key.ends_with(char::is_whitespace) && text.starts_with(char::is_whitespace);
    spaced.then(|| (key.trim_end(), text.trim()))
}

/// A gate node's `timeout` (in milliseconds) and `human.default_choice`.
#[must_use]
pub fn wait_of(node: &crate::lang::graph::Node) -> (Option<u64>, Option<String>) {
    let timeout = node
        .attrs
        .value("timeout")
        .and_then(Value::as_duration)
        .map(|d| u64::try_from(d.to_std().as_millis()).unwrap_or(u64::MAX));
    let default = node
        .attrs
        .non_empty("human.default_choice")
        .map(|d| d.trim().to_string());
    (timeout, default)
}

/// The options of gate `node_id`: its outgoing edges in declaration order,
/// and whether it has a `freeform=true` edge.
///
/// Freeform edges are not choices; they set the flag. Unlabelled edges with
/// a `condition` are not choices either: they are routes the engine takes on
/// its own, such as the `condition="outcome=failed"` failure route of
/// execution/failures.mdx, and offering them would let a person pick the
/// failure path. An edge with no label is offered under its target id.
#[must_use]
pub fn choices(graph: &Graph, node_id: &str) -> (Vec<Choice>, bool) {
    let mut out = Vec::new();
    let mut freeform = false;
    for edge in graph.edges_from(node_id) {
        if edge.attrs.value("freeform").and_then(Value::as_bool) == Some(true) {
            freeform = true;
            continue;
        }
        let label = edge.label().filter(|l| !l.trim().is_empty());
        if label.is_none() && edge.condition().is_some() {
            continue;
        }
        let target = edge.to.to_string();
        let label = label.map_or_else(|| target.clone(), |l| l.trim().to_string());
        let (key, text) = parse_accelerator(&label);
        out.push(Choice {
            key,
            label,
            text,
            target,
        });
    }
    (out, freeform)
}

/// Reads typed text as an answer to `question`, or `None` when it selects
/// nothing.
///
/// The input is trimmed; empty input matches nothing. Then, in this order,
/// the first rule that matches any choice wins (the first such choice):
/// 1. a number from 1 to the number of choices selects that choice;
/// 2. an accelerator key, ignoring case;
/// 3. the full label or the text without its accelerator, ignoring case;
/// 4. the target node id, exactly (ids are case-sensitive).
///
/// Anything else is [`Answer::Freeform`] when the gate has a freeform edge,
/// and `None` otherwise.
#[must_use]
pub(crate) fn match_answer(question: &Question, input: &str) -> Option<Answer> {
    let input = input.trim();
    if input.is_empty() {
        return None;
    }
    let lower = input.to_lowercase();
    let choices = &question.choices;
    let by_number = || {
        input
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| input.parse::<usize>().ok())
            .flatten()
            .filter(|n| (1..=choices.len()).contains(n))
            .map(|n| n - 1)
    };
    let by_key = || {
        choices
            .iter()
            .position(|c| c.key.as_ref().is_some_and(|k| k.to_lowercase() == lower))
    };
    let by_label = || {
        choices
            .iter()
            .position(|c| c.label.to_lowercase() == lower || c.text.to_lowercase() == lower)
    };
    let by_target = || choices.iter().position(|c| c.target == input);
    by_number()
        .or_else(by_key)
        .or_else(by_label)
        .or_else(by_target)
        .map(Answer::Choice)
        .or_else(|| {
            question
                .freeform
                .then(|| Answer::Freeform(input.to_string()))
        })
}

/// Something that answers human gates.
pub trait Interviewer: Send + Sync {
    /// Asks and waits. Timeouts are the caller's business (it wraps this in
    /// `tokio::time::timeout`), so implementations must tolerate the future
    /// being dropped at any await point.
    fn ask<'a>(
        &'a self,
        question: &'a Question,
    ) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>>;
}

/// At most this many lines of the previous stage's output are shown above a
/// question; its end, where agents put their conclusions.
const CONTEXT_LINES: usize = 20;

/// A line read from the console, with when it arrived; `None` at EOF.
type ReadResult = std::io::Result<Option<(Instant, String)>>;

/// Asks on a terminal (or a pipe): prints the question and reads a line.
///
/// On a TTY it shows a menu of accelerators (`  [A] Approve`) and
/// `Choose [A/R/S]: `; when piped, a numbered list (`  1) [A] Approve`) and
/// `Answer (number, key or label): `. Freeform-only gates go straight to a
/// `> ` text prompt. Unmatched answers are re-asked. EOF gives
/// `Interrupted("stdin closed")`.
///
/// If an `ask` is dropped (its timeout fired) while a read is in progress,
/// that read stays pending and the next `ask` takes it over; a line that
/// arrived before the next question was printed was typed for the old one
/// and is ignored, so a late answer never answers a different gate.
pub(crate) struct Console {
    reader: Arc<Mutex<Box<dyn BufRead + Send>>>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    tty: bool,
    /// The read in progress, if any. Kept here rather than in the `ask`
    /// future so that dropping the future does not lose the line.
    pending: tokio::sync::Mutex<Option<JoinHandle<ReadResult>>>,
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Console").field("tty", &self.tty).finish()
    }
}

impl Console {
    /// A console on stdin, writing to stderr (stdout stays free for the
    /// run's own output). TTY or piped is decided by stdin.
    #[must_use]
    pub(crate) fn stdio() -> Console {
        let tty = std::io::stdin().is_terminal();
        Console::new(
            std::io::BufReader::new(std::io::stdin()),
            std::io::stderr(),
            tty,
        )
    }

    /// A console on any reader and writer; `tty` picks the menu style.
    pub fn new(
        reader: impl BufRead + Send + 'static,
        writer: impl Write + Send + 'static,
        tty: bool,
    ) -> Console {
        Console {
            reader: Arc::new(Mutex::new(Box::new(reader))),
            writer: Arc::new(Mutex::new(Box::new(writer))),
            tty,
            pending: tokio::sync::Mutex::new(None),
        }
    }

    async fn converse(&self, question: &Question) -> Answer {
        if question.is_unanswerable() {
            return Answer::Interrupted(format!(
                "gate `{}` has no options to choose from",
                question.node_id
            ));
        }
        let prompt = self.prompt(question);
        if let Err(e) = self.write(&format!("{}{prompt}", self.menu(question))) {
            return Answer::Interrupted(format!("could not show the question: {e}"));
        }
        let asked_at = Instant::now();
        loop {
            let line = match self.next_line().await {
                Ok(Some((at, _))) if at < asked_at => {
                    // Typed for an earlier question whose ask timed out.
                    if let Err(e) = self.write(&format!(
                        "(ignored input typed before this question)\n{prompt}"
                    )) {
                        return Answer::Interrupted(format!("could not show the question: {e}"));
                    }
                    continue;
                }
                Ok(Some((_, line))) => {
                    if !self.tty {
                        // A piped answer is not echoed by a terminal; echo
                        // it so the transcript reads as question, answer.
                        let _ = self.write(&format!("{}\n", line.trim_end()));
                    }
                    line
                }
                Ok(None) => {
                    if !self.tty {
                        let _ = self.write("\n");
                    }
                    return Answer::Interrupted("stdin closed".to_string());
                }
                Err(e) => return Answer::Interrupted(format!("could not read the answer: {e}")),
            };
            if let Some(answer) = match_answer(question, &line) {
                return answer;
            }
            let retry = if line.trim().is_empty() {
                prompt.clone()
            } else {
                format!(
                    "`{}` is not an option. {}\n{prompt}",
                    line.trim(),
                    valid_answers(question)
                )
            };
            if let Err(e) = self.write(&retry) {
                return Answer::Interrupted(format!("could not show the question: {e}"));
            }
        }
    }

    /// Everything above the prompt: context, question, options.
    fn menu(&self, question: &Question) -> String {
        let mut out = String::new();
        if let Some(context) = question.context.as_deref().map(str::trim)
            && !context.is_empty()
        {
            let lines: Vec<&str> = context.lines().collect();
            let hidden = lines.len().saturating_sub(CONTEXT_LINES);
            if hidden > 0 {
                out.push_str(&format!("… ({hidden} earlier lines not shown)\n"));
            }
            for line in lines.iter().skip(hidden) {
                out.push_str(line);
                out.push('\n');
            }
            out.push('\n');
        }
        out.push_str(&question.text);
        out.push('\n');
        for (i, choice) in question.choices.iter().enumerate() {
            let n = i + 1;
            let line = match (&choice.key, self.tty) {
                (Some(key), true) => format!("  [{key}] {}", choice.text),
                (None, true) => format!("  [{n}] {}", choice.text),
                (Some(key), false) => format!("  {n}) [{key}] {}", choice.text),
                (None, false) => format!("  {n}) {}", choice.text),
            };
            out.push_str(&line);
            out.push('\n');
        }
        if let Some(note) = question.wait_note() {
            out.push_str(&format!("  ({note})\n"));
        }
        out
    }

    fn prompt(&self, question: &Question) -> String {
        match (question.choices.is_empty(), self.tty, question.freeform) {
            (true, _, _) => "> ".to_string(),
            (false, true, false) => format!("Choose [{}]: ", shortcuts(question)),
            (false, true, true) => format!("Choose [{}] or type a reply: ", shortcuts(question)),
            (false, false, false) => "Answer (number, key or label): ".to_string(),
            (false, false, true) => "Answer (number, key, label or free text): ".to_string(),
        }
    }

    /// Writes to the console. A closed pipe (`weft run ... 2>&1 | head`) is
    /// not a failure: nobody reads the question, but an answer may still
    /// arrive on stdin.
    fn write(&self, text: &str) -> std::io::Result<()> {
        let mut writer = lock(&self.writer);
        match writer
            .write_all(text.as_bytes())
            .and_then(|()| writer.flush())
        {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            other => other,
        }
    }

    /// The next line, from the read a dropped `ask` left pending if there
    /// is one. The handle leaves `pending` only once it has completed.
    async fn next_line(&self) -> ReadResult {
        let mut pending = self.pending.lock().await;
        let handle = pending.get_or_insert_with(|| {
            let reader = Arc::clone(&self.reader);
            tokio::task::spawn_blocking(move || {
                let mut reader = lock(&reader);
                let mut line = String::new();
                match reader.read_line(&mut line)? {
                    0 => Ok(None),
                    _ => Ok(Some((Instant::now(), line))),
                }
            })
        });
        let result = handle.await;
        *pending = None;
        result.map_err(std::io::Error::other)?
    }
}

impl Interviewer for Console {
    fn ask<'a>(
        &'a self,
        question: &'a Question,
    ) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        Box::pin(self.converse(question))
    }
}

/// Each choice's accelerator, or its number when it has none: `A/R/3`.
fn shortcuts(question: &Question) -> String {
    question
        .choices
        .iter()
        .enumerate()
        .map(|(i, c)| c.key.clone().unwrap_or_else(|| (i + 1).to_string()))
        .collect::<Vec<_>>()
        .join("/")
}

/// The hint after an unmatched answer.
fn valid_answers(question: &Question) -> String {
    let count = question.choices.len();
    let numbers = if count == 1 {
        "1".to_string()
    } else {
        format!("a number from 1 to {count}")
    };
    if question.choices.iter().any(|c| c.key.is_some()) {
        format!(
            "Answer {}, {numbers}, or a label.",
            shortcuts(question).replace('/', ", ")
        )
    } else {
        format!("Answer {numbers}, or a label.")
    }
}

/// The words that make an option an approval for `--auto-approve` when its
/// text (the label without its accelerator) starts with one of them as a
/// whole word, in any case: `Approve`, `Yes - ship it`, `OK!`, `Ship it`,
/// `Continue to deploy`. `Go back` or `Shipment hold` do not count: `go` is
/// not listed and `shipment` is not the word `ship`.
pub(crate) const APPROVE_WORDS: [&str; 13] = [
    "approve", "approved", "accept", "yes", "ok", "okay", "lgtm", "ship", "continue", "proceed",
    "confirm", "allow", "y",
];

/// Whether an option's text starts with one of [`APPROVE_WORDS`].
#[must_use]
pub(crate) fn approves(text: &str) -> bool {
    let word: String = text
        .trim_start_matches(|c: char| !c.is_alphanumeric())
        .chars()
        .take_while(|c| c.is_alphanumeric())
        .collect::<String>()
        .to_lowercase();
    APPROVE_WORDS.contains(&word.as_str())
}

/// `--auto-approve`: answers every gate without asking.
///
/// It picks the first choice whose text starts with an approving word (see
/// [`APPROVE_WORDS`]); otherwise the first choice, as human-in-the-loop.mdx
/// says ("`Yes` for yes/no gates and the first option for multiple-choice
/// gates"). A gate with only a freeform edge gets `Freeform("approved")`. A
/// gate with no options at all is `Interrupted`: there is nothing to
/// approve.
#[derive(Debug, Clone, Copy, Default)]
pub struct AutoApprove;

impl AutoApprove {
    /// The answer auto-approve gives to `question`.
    #[must_use]
    pub fn answer(question: &Question) -> Answer {
        let approving = question.choices.iter().position(|c| approves(&c.text));
        match approving {
            Some(i) => Answer::Choice(i),
            None if !question.choices.is_empty() => Answer::Choice(0),
            None if question.freeform => Answer::Freeform("approved".to_string()),
            None => Answer::Interrupted(format!(
                "gate `{}` has no options to approve",
                question.node_id
            )),
        }
    }
}

impl Interviewer for AutoApprove {
    fn ask<'a>(
        &'a self,
        question: &'a Question,
    ) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        Box::pin(std::future::ready(AutoApprove::answer(question)))
    }
}

/// Scripted answers, for tests: each question consumes the next string.
///
/// A string is read with [`match_answer`], except for three specials:
/// `!interrupt` gives `Interrupted`, `!skip` gives `Skipped` and `!wait`
/// never resolves (for timeout tests). A string that matches no option gives
/// `Interrupted("scripted answer `X` matches no option")`; an empty queue
/// gives `Interrupted("no scripted answer left")`, so a test that asks more
/// than it scripted fails closed like a closed stdin.
#[derive(Debug, Default)]
pub struct Scripted {
    answers: Mutex<VecDeque<String>>,
    asked: Mutex<Vec<Question>>,
}

impl Scripted {
    /// A script answering questions in this order.
    pub fn new(answers: impl IntoIterator<Item = impl Into<String>>) -> Scripted {
        Scripted {
            answers: Mutex::new(answers.into_iter().map(Into::into).collect()),
            asked: Mutex::new(Vec::new()),
        }
    }

    /// The node ids of the gates asked so far, in order.
    #[must_use]
    pub fn asked(&self) -> Vec<String> {
        lock(&self.asked)
            .iter()
            .map(|q| q.node_id.clone())
            .collect()
    }

    /// The questions asked so far, in order, as they were asked.
    #[must_use]
    pub fn questions(&self) -> Vec<Question> {
        lock(&self.asked).clone()
    }

    /// How many scripted answers are still unused.
    #[must_use]
    pub fn remaining(&self) -> usize {
        lock(&self.answers).len()
    }
}

impl Interviewer for Scripted {
    fn ask<'a>(
        &'a self,
        question: &'a Question,
    ) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        lock(&self.asked).push(question.clone());
        let next = lock(&self.answers).pop_front();
        let answer = match next.as_deref() {
            None => Answer::Interrupted("no scripted answer left".to_string()),
            Some("!wait") => return Box::pin(std::future::pending()),
            Some("!interrupt") => Answer::Interrupted("scripted interrupt".to_string()),
            Some("!skip") => Answer::Skipped,
            Some(text) => match_answer(question, text).unwrap_or_else(|| {
                Answer::Interrupted(format!("scripted answer `{text}` matches no option"))
            }),
        };
        Box::pin(std::future::ready(answer))
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Cursor, Read};
    use std::time::Duration;

    use super::*;
    use crate::lang::parser::parse;

    const GATE: &str = r#"digraph G {
        start [shape=Mdiamond]
        exit  [shape=Msquare]
        plan  [shape=tab, prompt="Plan"]
        approve [shape=hexagon, label="Approve Plan"]
        start -> plan -> approve
        approve -> implement [label="[A] Approve"]
        approve -> plan      [label="R) Revise"]
        approve -> skip      [label="S - Skip"]
        approve -> exit
        approve -> custom    [freeform=true]
        approve -> manual    [condition="outcome=failed"]
        implement -> exit
        skip -> exit
        custom -> exit
        manual -> exit
    }"#;

    fn graph(src: &str) -> Graph {
        parse(src).expect("parses").graph
    }

    fn choice(key: Option<&str>, label: &str, text: &str, target: &str) -> Choice {
        Choice {
            key: key.map(str::to_string),
            label: label.to_string(),
            text: text.to_string(),
            target: target.to_string(),
        }
    }

    /// Approve Plan: [A] Approve, [R] Revise, [S] Skip; no freeform.
    fn approve_revise_skip() -> Question {
        Question {
            id: "q1".to_string(),
            node_id: "approve".to_string(),
            text: "Approve Plan".to_string(),
            context: None,
            choices: vec![
                choice(Some("A"), "[A] Approve", "Approve", "implement"),
                choice(Some("R"), "[R] Revise", "Revise", "plan"),
                choice(Some("S"), "[S] Skip", "Skip", "skip"),
            ],
            freeform: false,
            timeout_ms: None,
            default_choice: None,
        }
    }

    fn with_freeform(mut q: Question) -> Question {
        q.freeform = true;
        q
    }

    fn freeform_only() -> Question {
        Question {
            choices: Vec::new(),
            freeform: true,
            text: "What next?".to_string(),
            ..approve_revise_skip()
        }
    }

    fn accel(label: &str) -> (Option<String>, String) {
        parse_accelerator(label)
    }

    fn keyed(key: &str, text: &str) -> (Option<String>, String) {
        (Some(key.to_string()), text.to_string())
    }

    #[test]
    fn accelerators_are_read_in_all_three_formats() {
        assert_eq!(accel("[A] Approve"), keyed("A", "Approve"));
        assert_eq!(accel("A) Approve"), keyed("A", "Approve"));
        assert_eq!(accel("A - Approve"), keyed("A", "Approve"));
        assert_eq!(accel("  [r]  Revise plan "), keyed("r", "Revise plan"));
        assert_eq!(accel("[OK] Ship it"), keyed("OK", "Ship it"));
        assert_eq!(accel("10) Tenth"), keyed("10", "Tenth"));
        assert_eq!(accel("Y - Yes - deploy"), keyed("Y", "Yes - deploy"));
    }

    #[test]
    fn labels_without_an_accelerator_stay_whole() {
        for label in [
            "Approve",
            "Approve - with notes",
            "A-B test",
            "Ship it (now)",
            "[Approve] everything",
            "[A]",
            "A)",
            "[A B] spaced",
            "",
        ] {
            assert_eq!(
                accel(label),
                (None, label.trim().to_string()),
                "`{label}` has no accelerator"
            );
        }
        assert_eq!(accel("  Approve  "), (None, "Approve".to_string()));
    }

    #[test]
    fn choices_are_the_outgoing_edges_in_declaration_order() {
        let (choices, freeform) = super::choices(&graph(GATE), "approve");
        assert_eq!(
            choices,
            vec![
                choice(Some("A"), "[A] Approve", "Approve", "implement"),
                choice(Some("R"), "R) Revise", "Revise", "plan"),
                choice(Some("S"), "S - Skip", "Skip", "skip"),
                choice(None, "exit", "exit", "exit"),
            ],
            "the freeform edge and the unlabelled failure route are not options"
        );
        assert!(freeform, "a freeform=true edge makes the gate freeform");
    }

    #[test]
    fn a_gate_without_a_freeform_edge_is_not_freeform() {
        let g = graph(
            r#"digraph G { g [shape=hexagon]; g -> a [label="Yes"]; g -> b [label="No", freeform=false] }"#,
        );
        let (choices, freeform) = super::choices(&g, "g");
        assert_eq!(choices.len(), 2);
        assert!(!freeform);
        assert!(
            super::choices(&g, "a").0.is_empty(),
            "a has no outgoing edges"
        );
    }

    #[test]
    fn labelled_conditional_edges_are_still_choices() {
        let g = graph(
            r#"digraph G { g [shape=hexagon]; g -> a [label="[A] Approve", condition="outcome=succeeded"] }"#,
        );
        assert_eq!(super::choices(&g, "g").0.len(), 1);
    }

    #[test]
    fn question_for_gate_takes_the_node_label_and_choices() {
        let q = Question::for_gate("q7", &graph(GATE), "approve", Some("the plan".into()));
        assert_eq!(q.id, "q7");
        assert_eq!(q.node_id, "approve");
        assert_eq!(q.text, "Approve Plan");
        assert_eq!(q.context.as_deref(), Some("the plan"));
        assert_eq!(q.choices.len(), 4);
        assert!(q.freeform);
        let unlabelled = Question::for_gate("q8", &graph(GATE), "skip", None);
        assert_eq!(
            unlabelled.text, "skip",
            "the id stands in for a missing label"
        );
    }

    #[test]
    fn answers_match_by_number_key_label_text_and_target() {
        let q = approve_revise_skip();
        let cases = [
            ("1", 0),
            ("3", 2),
            (" 2 ", 1),
            ("a", 0),
            ("R", 1),
            ("[S] Skip", 2),
            ("[s] skip", 2),
            ("revise", 1),
            ("APPROVE", 0),
            ("implement", 0),
            ("plan", 1),
        ];
        for (input, index) in cases {
            assert_eq!(
                match_answer(&q, input),
                Some(Answer::Choice(index)),
                "`{input}` selects choice {index}"
            );
        }
    }

    #[test]
    fn numbers_out_of_range_and_unknown_text_match_nothing() {
        let q = approve_revise_skip();
        for input in ["0", "4", "-1", "+1", "", "   ", "maybe", "IMPLEMENT"] {
            assert_eq!(match_answer(&q, input), None, "`{input}` is not an option");
        }
    }

    #[test]
    fn numbers_beat_keys_and_keys_beat_labels() {
        let q = Question {
            choices: vec![
                choice(Some("2"), "[2] Second key", "Second key", "a"),
                choice(Some("X"), "[X] x", "x", "b"),
                choice(None, "x2", "x2", "c"),
            ],
            ..approve_revise_skip()
        };
        assert_eq!(match_answer(&q, "2"), Some(Answer::Choice(1)), "number 2");
        assert_eq!(match_answer(&q, "x"), Some(Answer::Choice(1)), "key X");
    }

    #[test]
    fn unmatched_text_goes_to_the_freeform_edge() {
        let q = with_freeform(approve_revise_skip());
        assert_eq!(
            match_answer(&q, "  add tests first  "),
            Some(Answer::Freeform("add tests first".to_string()))
        );
        assert_eq!(
            match_answer(&q, "a"),
            Some(Answer::Choice(0)),
            "choices still win"
        );
        assert_eq!(match_answer(&q, ""), None, "empty input is never an answer");
        assert_eq!(
            match_answer(&freeform_only(), "1"),
            Some(Answer::Freeform("1".to_string()))
        );
    }

    /// A writer the test can read back after the console owns it.
    #[derive(Clone, Default)]
    struct Screen(Arc<Mutex<Vec<u8>>>);

    impl Write for Screen {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("screen").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Screen {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().expect("screen").clone()).expect("utf-8")
        }
    }

    fn console(input: &str, tty: bool) -> (Console, Screen) {
        let screen = Screen::default();
        let console = Console::new(Cursor::new(input.to_string()), screen.clone(), tty);
        (console, screen)
    }

    #[tokio::test]
    async fn console_on_a_tty_shows_a_menu_of_accelerators() {
        let (console, screen) = console("r\n", true);
        let mut q = approve_revise_skip();
        q.context = Some("Step 1: write code\nStep 2: test\n".to_string());
        assert_eq!(console.ask(&q).await, Answer::Choice(1));
        assert_eq!(
            screen.text(),
            "Step 1: write code\nStep 2: test\n\nApprove Plan\n  [A] Approve\n  [R] Revise\n  [S] Skip\nChoose [A/R/S]: "
        );
    }

    #[tokio::test]
    async fn console_piped_shows_a_numbered_list() {
        let (console, screen) = console("3\n", false);
        let mut q = approve_revise_skip();
        q.choices.push(choice(None, "exit", "exit", "exit"));
        assert_eq!(console.ask(&q).await, Answer::Choice(2));
        assert_eq!(
            screen.text(),
            "Approve Plan\n  1) [A] Approve\n  2) [R] Revise\n  3) [S] Skip\n  4) exit\nAnswer (number, key or label): 3\n",
            "a piped answer is echoed after the prompt"
        );
    }

    #[tokio::test]
    async fn console_asks_again_after_an_unmatched_answer() {
        let (console, screen) = console("maybe\n\nA\n", true);
        assert_eq!(console.ask(&approve_revise_skip()).await, Answer::Choice(0));
        let text = screen.text();
        assert!(
            text.ends_with(
                "Choose [A/R/S]: `maybe` is not an option. Answer A, R, S, a number from 1 to 3, or a label.\nChoose [A/R/S]: Choose [A/R/S]: "
            ),
            "one hint for the bad answer, a bare re-prompt for the empty line:\n{text}"
        );
    }

    #[tokio::test]
    async fn console_eof_interrupts_instead_of_approving() {
        let (closed, _) = console("", true);
        assert_eq!(
            closed.ask(&approve_revise_skip()).await,
            Answer::Interrupted("stdin closed".to_string())
        );
        let (piped, _) = console("nope\n", false);
        assert_eq!(
            piped.ask(&approve_revise_skip()).await,
            Answer::Interrupted("stdin closed".to_string()),
            "input ending after a bad answer is still unanswered"
        );
    }

    /// A writer whose reader has gone away, as `weft run ... | head` leaves.
    struct ClosedPipe;

    impl Write for ClosedPipe {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
    }

    #[tokio::test]
    async fn console_with_a_closed_output_still_reads_the_answer() {
        let console = Console::new(Cursor::new("a\n".to_string()), ClosedPipe, false);
        assert_eq!(
            console.ask(&approve_revise_skip()).await,
            Answer::Choice(0),
            "a closed pipe is not a reason to fail the gate"
        );
    }

    #[tokio::test]
    async fn console_freeform_only_gate_goes_straight_to_a_text_prompt() {
        let (console, screen) = console("rename the module\n", true);
        assert_eq!(
            console.ask(&freeform_only()).await,
            Answer::Freeform("rename the module".to_string())
        );
        assert_eq!(screen.text(), "What next?\n> ");
    }

    #[tokio::test]
    async fn console_with_a_freeform_edge_offers_a_reply() {
        let (console, screen) = console("do it differently\n", false);
        let q = with_freeform(approve_revise_skip());
        assert_eq!(
            console.ask(&q).await,
            Answer::Freeform("do it differently".to_string())
        );
        assert!(
            screen
                .text()
                .ends_with("Answer (number, key, label or free text): do it differently\n")
        );
    }

    #[tokio::test]
    async fn console_shows_only_the_end_of_a_long_context() {
        let (console, screen) = console("a\n", true);
        let mut q = approve_revise_skip();
        q.context = Some((1..=25).map(|i| format!("line {i}\n")).collect());
        console.ask(&q).await;
        let text = screen.text();
        assert!(
            text.starts_with("… (5 earlier lines not shown)\nline 6\n"),
            "{text}"
        );
        assert!(text.contains("line 25\n\nApprove Plan\n"), "{text}");
        assert!(!text.contains("line 5\n"), "{text}");
    }

    #[tokio::test]
    async fn console_refuses_a_gate_with_no_options() {
        let (console, screen) = console("a\n", true);
        let q = Question {
            choices: Vec::new(),
            ..approve_revise_skip()
        };
        assert!(matches!(console.ask(&q).await, Answer::Interrupted(_)));
        assert_eq!(screen.text(), "", "nothing is asked");
    }

    /// Input whose first line arrives only after a delay, as a slow typist's.
    struct SlowInput {
        delay: Option<Duration>,
        inner: Cursor<Vec<u8>>,
    }

    impl Read for SlowInput {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if let Some(delay) = self.delay.take() {
                std::thread::sleep(delay);
            }
            self.inner.read(buf)
        }
    }

    fn slow_console(input: &str) -> Console {
        let reader = SlowInput {
            delay: Some(Duration::from_millis(150)),
            inner: Cursor::new(input.as_bytes().to_vec()),
        };
        Console::new(std::io::BufReader::new(reader), Screen::default(), true)
    }

    #[tokio::test]
    async fn console_ignores_a_line_typed_for_a_question_that_timed_out() {
        let console = slow_console("A\nR\n");
        let q = approve_revise_skip();
        let first = tokio::time::timeout(Duration::from_millis(10), console.ask(&q)).await;
        assert!(
            first.is_err(),
            "the first ask times out before the line arrives"
        );
        // The late `A` arrives while no question is shown; it must not
        // answer the next gate.
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(console.ask(&q).await, Answer::Choice(1));
    }

    #[tokio::test]
    async fn console_hands_a_pending_read_to_the_next_question() {
        let console = slow_console("A\n");
        let q = approve_revise_skip();
        let first = tokio::time::timeout(Duration::from_millis(10), console.ask(&q)).await;
        assert!(
            first.is_err(),
            "the first ask times out before the line arrives"
        );
        assert_eq!(
            console.ask(&q).await,
            Answer::Choice(0),
            "a line typed after the new question appeared answers it"
        );
    }

    #[tokio::test]
    async fn auto_approve_prefers_a_yes_or_approve_choice() {
        let q = Question {
            choices: vec![
                choice(Some("R"), "[R] Revise", "Revise", "plan"),
                choice(Some("A"), "[A] Approve", "Approve", "implement"),
            ],
            ..approve_revise_skip()
        };
        assert_eq!(AutoApprove.ask(&q).await, Answer::Choice(1));
        let yes_no = Question {
            choices: vec![
                choice(None, "No", "No", "stop"),
                choice(Some("Y"), "Y) yes", "yes", "go"),
            ],
            ..approve_revise_skip()
        };
        assert_eq!(AutoApprove.ask(&yes_no).await, Answer::Choice(1));
    }

    #[tokio::test]
    async fn auto_approve_takes_an_option_that_starts_with_an_approving_word() {
        for (approving, others) in [
            ("Approve - with notes", ["Reject", "Revise"]),
            ("Yes, ship it", ["No", "Later"]),
            ("Ship it", ["Hold", "Go back"]),
            ("OK!", ["Cancel", "Shipment hold"]),
            ("Continue to deploy", ["Stop", "Abort"]),
            ("LGTM", ["Needs work", "Unsure"]),
        ] {
            let q = Question {
                choices: vec![
                    choice(None, others[0], others[0], "a"),
                    choice(None, others[1], others[1], "b"),
                    choice(Some("X"), &format!("[X] {approving}"), approving, "c"),
                ],
                ..approve_revise_skip()
            };
            assert_eq!(
                AutoApprove.ask(&q).await,
                Answer::Choice(2),
                "`{approving}` approves, {others:?} do not"
            );
        }
    }

    #[tokio::test]
    async fn console_shows_the_timeout_and_the_default_choice() {
        let (on_tty, screen) = console("a\n", true);
        let q = Question {
            timeout_ms: Some(300_000),
            default_choice: Some("S".to_string()),
            ..approve_revise_skip()
        };
        on_tty.ask(&q).await;
        assert!(
            screen
                .text()
                .contains("  [S] Skip\n  (times out in 5m, then takes \"Skip\")\nChoose [A/R/S]: "),
            "{}",
            screen.text()
        );
        let (piped, screen) = console("a\n", false);
        let q = Question {
            timeout_ms: Some(30_000),
            ..approve_revise_skip()
        };
        piped.ask(&q).await;
        assert!(
            screen
                .text()
                .contains("(times out in 30s, then fails (no default choice))\n"),
            "{}",
            screen.text()
        );
    }

    #[tokio::test]
    async fn auto_approve_falls_back_to_the_first_choice() {
        let q = Question {
            choices: vec![
                choice(Some("F"), "[F] Fast", "Fast", "a"),
                choice(Some("T"), "[T] Thorough", "Thorough", "b"),
            ],
            ..approve_revise_skip()
        };
        assert_eq!(AutoApprove.ask(&q).await, Answer::Choice(0));
    }

    #[tokio::test]
    async fn auto_approve_answers_a_freeform_only_gate_with_approved() {
        assert_eq!(
            AutoApprove.ask(&freeform_only()).await,
            Answer::Freeform("approved".to_string())
        );
        let none = Question {
            choices: Vec::new(),
            ..approve_revise_skip()
        };
        assert!(matches!(
            AutoApprove.ask(&none).await,
            Answer::Interrupted(_)
        ));
    }

    #[tokio::test]
    async fn scripted_answers_in_order_and_records_the_questions() {
        let script = Scripted::new(["a", "Revise", "!skip", "!interrupt", "maybe"]);
        let q = approve_revise_skip();
        assert_eq!(script.ask(&q).await, Answer::Choice(0));
        assert_eq!(script.ask(&q).await, Answer::Choice(1));
        assert_eq!(script.ask(&q).await, Answer::Skipped);
        assert!(matches!(script.ask(&q).await, Answer::Interrupted(_)));
        assert_eq!(
            script.ask(&q).await,
            Answer::Interrupted("scripted answer `maybe` matches no option".to_string())
        );
        assert_eq!(
            script.ask(&q).await,
            Answer::Interrupted("no scripted answer left".to_string()),
            "an exhausted script fails closed"
        );
        assert_eq!(script.asked(), vec!["approve"; 6]);
        assert_eq!(script.questions().first(), Some(&q));
        assert_eq!(script.remaining(), 0);
    }

    #[tokio::test]
    async fn scripted_text_reaches_a_freeform_edge() {
        let script = Scripted::new(["ship it on friday"]);
        assert_eq!(
            script.ask(&with_freeform(approve_revise_skip())).await,
            Answer::Freeform("ship it on friday".to_string())
        );
    }

    #[tokio::test]
    async fn scripted_wait_never_answers() {
        let script = Scripted::new(["!wait", "s"]);
        let q = approve_revise_skip();
        let waited = tokio::time::timeout(Duration::from_millis(20), script.ask(&q)).await;
        assert!(waited.is_err(), "!wait leaves the caller's timeout to fire");
        assert_eq!(
            script.ask(&q).await,
            Answer::Choice(2),
            "!wait used one answer"
        );
    }

    #[test]
    fn interviewers_are_usable_as_trait_objects() {
        let all: Vec<Box<dyn Interviewer>> = vec![
            Box::new(AutoApprove),
            Box::new(Scripted::new(["a"])),
            Box::new(console("", false).0),
        ];
        assert_eq!(all.len(), 3);
    }
}
