//! Reading workflows written in the dialect of StrongDM's Attractor spec
//! beside Fabro's (issue 21; docs/language.md, "Coming from Attractor").
//!
//! Two things happen while loading, both before the model stylesheets apply
//! and before validation:
//!
//! - the spec's spellings of attributes ([`ATTRACTOR_SPELLINGS`]: node
//!   `llm_model` and `llm_provider`, graph `default_max_retry`) are copied
//!   to Weft's names when those are unset, so that everything downstream
//!   (stylesheets, imports, the engine) reads one name, and "a node's own
//!   value beats the stylesheet" covers them; the
//!   `attractor_spelling` rule notes each;
//! - `$goal` in `prompt` values is replaced by the run's goal, the spec's
//!   only variable. After the templates, so `--goal` applies.
//!
//! Neither changes a Fabro workflow's errors or warnings: Fabro knows
//! neither spelling (they were `unknown_attribute` warnings, now notes), and
//! its docs call `$goal` legacy text that nothing expands.

use rustc_hash::{FxHashMap, FxHashSet};

use super::attrs::{ATTRACTOR_SPELLINGS, Attr, Attrs, Key, Scope};
use super::diagnostic::{Diagnostic, Severity};
use super::graph::Graph;
use super::parser::{EXPANSION_TOO_LARGE, MAX_EXPANSION_BYTES};
use super::span::span_after;
use super::value::{Text, Value};

/// The rule id of every note about an Attractor spelling; the rule that
/// reports attribute spellings lives in `rules/attractor_spelling.rs`, the
/// loader reports `$goal` under the same id.
pub(crate) const ATTRACTOR_SPELLING: &str = "attractor_spelling";

/// The spec's one variable.
const GOAL_VARIABLE: &str = "$goal";

/// Copies each Attractor spelling to Weft's name on the graph and on every
/// node that does not set Weft's name already. The copy keeps the written
/// attribute's spans, which is how the rule tells a copy from a value of
/// Weft's own spelling.
pub(crate) fn alias_spellings(graph: &mut Graph) {
    alias_in(&mut graph.attrs, Scope::Graph);
    for node in &mut graph.nodes {
        alias_in(&mut node.attrs, Scope::Node);
    }
}

fn alias_in(attrs: &mut Attrs, scope: Scope) {
    for &(_, spec, weft) in ATTRACTOR_SPELLINGS.iter().filter(|(s, ..)| *s == scope) {
        // The spec's spelling first: almost no node has one, so this is
        // one lookup per spelling on every node of a large workflow.
        let Some(written) = attrs.get(spec) else {
            continue;
        };
        if !attrs.contains(weft) {
            let copy = Attr {
                key: Key::new(weft),
                ..written.clone()
            };
            attrs.set(copy);
        }
    }
}

/// The note for an attribute written with the spec's name `spec`, read as
/// Weft's `weft`; the caller places it.
#[must_use]
pub(crate) fn spelling_note(spec: &str, weft: &str) -> Diagnostic {
    Diagnostic::new(
        ATTRACTOR_SPELLING,
        Severity::Info,
        format!("`{spec}` is the Attractor spec's name for `{weft}`"),
    )
    .with_hint(format!(
        "Weft reads it as `{weft}`, which is how Fabro workflows write it"
    ))
}

/// Where the first `$goal` starts in `text`: the exact token, not `$goals`
/// or `$goal_x` (a longer name is some other variable).
#[must_use]
pub(crate) fn goal_variable_at(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = text.get(from..).and_then(|rest| rest.find(GOAL_VARIABLE)) {
        let at = from + found;
        let end = at + GOAL_VARIABLE.len();
        let continues = text[end..]
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        if !continues {
            return Some(at);
        }
        from = end;
    }
    None
}

/// How long `text` is once every `$goal` token in it is replaced by `goal`
/// (saturating): what expanding costs, known before any of it is done.
#[must_use]
pub(crate) fn expanded_len(text: &str, goal: &str) -> usize {
    let mut tokens = 0usize;
    let mut from = 0;
    while let Some(at) = text.get(from..).and_then(goal_variable_at) {
        tokens += 1;
        from += at + GOAL_VARIABLE.len();
    }
    let per_token = goal.len().saturating_sub(GOAL_VARIABLE.len());
    text.len().saturating_add(tokens.saturating_mul(per_token))
}

/// `text` with every `$goal` token replaced by `goal`; `None` when it has
/// none. One pass: a goal that itself contains `$goal` is not expanded again.
/// The caller bounds the size first ([`expanded_len`]): a text of `$goal`s
/// times a long goal grows fast.
#[must_use]
pub(crate) fn expand_goal(text: &str, goal: &str) -> Option<String> {
    let mut at = goal_variable_at(text)?;
    let mut out = String::with_capacity(text.len() + goal.len());
    let mut copied = 0;
    loop {
        out.push_str(&text[copied..at]);
        out.push_str(goal);
        copied = at + GOAL_VARIABLE.len();
        match goal_variable_at(&text[copied..]) {
            Some(next) => at = copied + next,
            None => break,
        }
    }
    out.push_str(&text[copied..]);
    Some(out)
}

/// Replaces `$goal` in every node's `prompt` by the graph's goal (empty
/// when there is none, as `{{ goal }}` renders), and notes each written
/// place once: in the `prompt`, and in the `label` of an LLM node without
/// a prompt, whose label is its prompt (the engine expands that one when
/// the stage runs; the label itself stays as written, for display).
///
/// The text this creates is taken from `budget` (the load's expansion
/// budget, which node defaults and imports share): one value that many
/// nodes share through `node [...]` is expanded once and shared again, and
/// labels are charged what the stage will expand. Past the budget, one
/// `expansion_too_large` error and the rest is left as written.
pub(crate) fn expand_goal_variable(
    graph: &mut Graph,
    source: &str,
    budget: &mut u64,
    out: &mut Vec<Diagnostic>,
) {
    let goal = graph
        .attrs
        .text("goal")
        .map(std::borrow::Cow::into_owned)
        .unwrap_or_default();
    // `node [prompt=...]` puts one written value on many nodes: note it
    // once, expand it once. Keyed by the shared text's address; the map
    // keeps the original alive so that no address is reused meanwhile.
    let mut noted = FxHashSet::default();
    let mut done: FxHashMap<usize, (Text, Option<Value>)> = FxHashMap::default();
    let mut over = false;
    for node in &mut graph.nodes {
        let prompt_set = node
            .attrs
            .non_empty("prompt")
            .is_some_and(|p| !p.trim().is_empty());
        let uses_llm = node.handler.uses_llm();
        for attr in node.attrs.iter_mut() {
            let is_prompt = attr.key == "prompt";
            let label_as_prompt = attr.key == "label" && uses_llm && !prompt_set;
            if !is_prompt && !label_as_prompt {
                continue;
            }
            let Value::Str(text) = &attr.value else {
                continue;
            };
            // A shared value is looked at once, with or without a `$goal`:
            // scanning a long default prompt again for every node would
            // cost its length times the nodes.
            let key = text.as_ptr() as usize;
            if let Some((_, expanded)) = done.get(&key) {
                if let (true, Some(expanded)) = (is_prompt, expanded) {
                    attr.value = expanded.clone();
                }
                continue;
            }
            let original = text.clone();
            if over || goal_variable_at(text).is_none() {
                done.insert(key, (original, None));
                continue;
            }
            if noted.insert(attr.value_span.start) {
                out.push(note(source, attr, &node.id));
            }
            let cost = expanded_len(text, &goal) as u64;
            let Some(left) = budget.checked_sub(cost) else {
                over = true;
                out.push(too_large(attr, &node.id));
                done.insert(key, (original, None));
                continue;
            };
            *budget = left;
            // A label is charged now and expanded when the stage runs.
            let expanded = if is_prompt {
                expand_goal(text, &goal).map(|e| Value::Str(e.into()))
            } else {
                None
            };
            if let Some(expanded) = &expanded {
                attr.value = expanded.clone();
            }
            done.insert(key, (original, expanded));
        }
    }
}

/// The error when expanding `$goal` would pass the load's expansion budget.
fn too_large(attr: &Attr, node: &str) -> Diagnostic {
    Diagnostic::error(
        EXPANSION_TOO_LARGE,
        format!(
            "replacing `$goal` with the goal in `{}` of `{node}` makes the workflow's text larger than {} in all",
            attr.key,
            crate::limits::human_bytes(MAX_EXPANSION_BYTES)
        ),
    )
    .at(attr.value_span)
    .on_node(node)
    .with_hint("write `$goal` fewer times, or give a shorter goal")
}

/// The note for a `$goal` in `attr`: at the token where the file has it
/// literally, else at the value (text from an `@file` or a template).
fn note(source: &str, attr: &Attr, node: &str) -> Diagnostic {
    let value = attr.value_span;
    let written = source
        .get(value.start as usize..value.end as usize)
        .and_then(goal_variable_at);
    let span = match written {
        Some(at) => {
            let start = value.start as usize + at;
            span_after(source, value, start, start + GOAL_VARIABLE.len())
        }
        None => value,
    };
    let message = if attr.key == "prompt" {
        format!("`$goal` in the prompt of `{node}` is replaced by the run's goal")
    } else {
        format!(
            "`$goal` in the label of `{node}`, which is its prompt, is replaced by the run's goal when the stage runs"
        )
    };
    Diagnostic::new(ATTRACTOR_SPELLING, Severity::Info, message)
        .at(span)
        .on_node(node)
        .with_hint(
            "`$goal` is the Attractor spec's variable; Weft's own spelling is `{{ goal }}`, which also works in every other attribute",
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_token_is_the_goal_variable() {
        assert_eq!(goal_variable_at("for: $goal."), Some(5));
        assert_eq!(goal_variable_at("$goals and $goal_x"), None);
        assert_eq!(goal_variable_at("$goals then $goal"), Some(12));
        assert_eq!(goal_variable_at("$goalé"), None);
        assert_eq!(goal_variable_at("no variable"), None);
    }

    #[test]
    fn a_goal_repeated_past_the_expansion_budget_is_an_error_not_a_bomb() {
        let goal = "g".repeat(1 << 20);
        let prompt = "$goal ".repeat(100);
        let src = format!(
            "digraph G {{ graph [goal=\"{goal}\"]\n start [shape=Mdiamond]; exit [shape=Msquare]\n a [prompt=\"{prompt}\"]\n b [prompt=\"{prompt}\"]\n start -> a -> b -> exit }}"
        );
        let wf = crate::lang::Workflow::from_bytes(
            "big.dot",
            src.as_bytes(),
            std::path::Path::new("."),
            &crate::lang::LoadOptions::default(),
        );
        let errors: Vec<_> = wf.diagnostics.iter().filter(|d| d.is_error()).collect();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].rule, EXPANSION_TOO_LARGE);
        assert_eq!(
            errors[0].node_id.as_deref(),
            Some("a"),
            "100 MiB for `a` alone"
        );
        assert_eq!(expanded_len("$goal and $goal", "abcdefg"), 19);
    }

    #[test]
    fn a_shared_default_prompt_is_expanded_once_and_noted_once() {
        let mut src = String::from(
            "digraph G { graph [goal=\"ship\"]\n node [prompt=\"do $goal\"]\n start [shape=Mdiamond]; exit [shape=Msquare]\n",
        );
        for i in 0..50 {
            src.push_str(&format!(" n{i}\n start -> n{i} -> exit\n"));
        }
        src.push('}');
        let wf = crate::lang::Workflow::from_bytes(
            "many.dot",
            src.as_bytes(),
            std::path::Path::new("."),
            &crate::lang::LoadOptions::default(),
        );
        let graph = wf.graph.as_ref().expect("graph");
        let prompts: Vec<_> = (0..50)
            .map(|i| {
                graph
                    .node(&format!("n{i}"))
                    .and_then(|n| n.attrs.text("prompt"))
            })
            .collect();
        assert!(
            prompts.iter().all(|p| p.as_deref() == Some("do ship")),
            "{prompts:?}"
        );
        let shared = |id: &str| match graph.node(id).and_then(|n| n.attrs.value("prompt")) {
            Some(Value::Str(text)) => text.clone(),
            other => panic!("{other:?}"),
        };
        assert!(
            std::sync::Arc::ptr_eq(&shared("n0"), &shared("n49")),
            "one expansion, shared by every node the default reaches"
        );
        let notes = wf
            .diagnostics
            .iter()
            .filter(|d| d.rule == ATTRACTOR_SPELLING)
            .count();
        assert_eq!(notes, 1, "{:?}", wf.diagnostics);
    }

    #[test]
    fn every_token_is_replaced_once() {
        assert_eq!(
            expand_goal("$goal, $goals, ($goal)", "ship $goal").as_deref(),
            Some("ship $goal, $goals, (ship $goal)")
        );
        assert_eq!(expand_goal("nothing", "g"), None);
    }
}
