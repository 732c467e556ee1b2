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

use rustc_hash::FxHashSet;

use super::attrs::{ATTRACTOR_SPELLINGS, Attr, Attrs, Key, Scope};
use super::diagnostic::{Diagnostic, Severity};
use super::graph::Graph;
use super::span::span_after;
use super::value::Value;

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
        if attrs.contains(weft) {
            continue;
        }
        if let Some(written) = attrs.get(spec) {
            let copy = Attr {
                key: Key::new(weft),
                ..written.clone()
            };
            attrs.set(copy);
        }
    }
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

/// `text` with every `$goal` token replaced by `goal`; `None` when it has
/// none. One pass: a goal that itself contains `$goal` is not expanded again.
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
pub(crate) fn expand_goal_variable(graph: &mut Graph, source: &str, out: &mut Vec<Diagnostic>) {
    let goal = graph
        .attrs
        .text("goal")
        .map(std::borrow::Cow::into_owned)
        .unwrap_or_default();
    // `node [prompt=...]` puts one written value on many nodes: note it once.
    let mut noted = FxHashSet::default();
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
            let Some(text) = attr.value.as_str() else {
                continue;
            };
            if goal_variable_at(text).is_none() {
                continue;
            }
            let expanded = if is_prompt {
                expand_goal(text, &goal)
            } else {
                None
            };
            if noted.insert(attr.value_span.start) {
                out.push(note(source, attr, &node.id));
            }
            if let Some(expanded) = expanded {
                attr.value = Value::Str(expanded.into());
            }
        }
    }
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
    fn every_token_is_replaced_once() {
        assert_eq!(
            expand_goal("$goal, $goals, ($goal)", "ship $goal").as_deref(),
            Some("ship $goal, $goals, (ship $goal)")
        );
        assert_eq!(expand_goal("nothing", "g"), None);
    }
}
