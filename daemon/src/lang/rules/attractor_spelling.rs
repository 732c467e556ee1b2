//! `attractor_spelling` (info; a warning when both spellings disagree): an
//! attribute or stylesheet property written the way StrongDM's Attractor
//! spec spells it — node `llm_model` and `llm_provider`, graph
//! `default_max_retry`, stylesheet `llm_model` and `llm_provider`. Weft
//! reads a workflow in that dialect unchanged (issue 21), so these are not
//! mistakes: the loader copies each to Weft's name ([`crate::lang::attractor`])
//! and the note names Weft's spelling, for readers and for a later move to
//! Fabro's. The loader reports `$goal` in a prompt under the same id.
//!
//! When a node or the graph sets both spellings, Weft's wins; if the two
//! values differ, the warning says the other is ignored, since the author
//! likely expected it to count.
//!
//! `tool_command` is not here: it is Fabro's own legacy spelling of
//! `script` as well as Attractor's, and it keeps its
//! `tool_command_deprecated` warning, since changing that would change a
//! Fabro workflow's diagnostics.

use rustc_hash::FxHashSet;

use super::Cx;
use crate::lang::attractor::{ATTRACTOR_SPELLING, spelling_note};
use crate::lang::attrs::{ATTRACTOR_SPELLINGS, Attr, Attrs, Scope};
use crate::lang::diagnostic::{Diagnostic, Severity};
use crate::lang::stylesheet;

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    // Node defaults put one written attribute on many nodes: report it once.
    let mut seen = FxHashSet::default();
    for d in spellings(&cx.graph.attrs, Scope::Graph, None, &mut seen) {
        out.push(d);
    }
    for &(scope, spec, _) in ATTRACTOR_SPELLINGS {
        if scope != Scope::Node {
            continue;
        }
        for (_, node) in cx.nodes_with(spec) {
            for d in spellings(&node.attrs, Scope::Node, Some(&node.id), &mut seen) {
                out.push(d);
            }
        }
    }
    stylesheet_spellings(cx, out);
}

/// The notes (or warnings) about the Attractor spellings among `attrs`.
fn spellings(
    attrs: &Attrs,
    scope: Scope,
    node: Option<&str>,
    seen: &mut FxHashSet<u32>,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for &(_, spec, weft) in ATTRACTOR_SPELLINGS.iter().filter(|(s, ..)| *s == scope) {
        let Some(written) = attrs.get(spec) else {
            continue;
        };
        // Spliced in by an import (same spans for key and value): the
        // imported file is where it is written, and `weft validate` on it
        // says so.
        if written.key_span == written.value_span || !seen.insert(written.key_span.start) {
            continue;
        }
        let d = match attrs.get(weft) {
            Some(own) if !copied(own, written) && own.value != written.value => {
                let on = node.map_or_else(|| "the graph".to_string(), |id| format!("`{id}`"));
                Diagnostic::warning(
                    ATTRACTOR_SPELLING,
                    format!("`{spec}` is ignored beside `{weft}` on {on}"),
                )
                .with_hint(format!(
                    "`{spec}` is the Attractor spec's name for `{weft}`, and `{weft}` wins; remove one of them"
                ))
            }
            _ => spelling_note(spec, weft),
        };
        let d = d.at(written.key_span);
        out.push(match node {
            Some(id) => d.on_node(id),
            None => d,
        });
    }
    out
}

/// True when `own` is the loader's copy of `written` (it keeps its spans).
fn copied(own: &Attr, written: &Attr) -> bool {
    own.key_span == written.key_span
}

/// A note at each stylesheet property written the Attractor way.
fn stylesheet_spellings(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    let Some(attr) = cx.graph.attrs.get("model_stylesheet") else {
        return;
    };
    let text = attr.value.as_text();
    if !text.contains("llm_") {
        return;
    }
    // A stylesheet that does not parse is `stylesheet_syntax`'s error.
    let Ok(sheet) = stylesheet::parse(&text) else {
        return;
    };
    for spelt in &sheet.attractor_spellings {
        out.push(
            Diagnostic::new(
                ATTRACTOR_SPELLING,
                Severity::Info,
                format!(
                    "`{}` in the model stylesheet is the Attractor spec's name for `{}`",
                    spelt.written, spelt.property
                ),
            )
            .at(cx.span_in(attr, spelt.offset, spelt.len))
            .with_hint(format!(
                "Weft reads it as `{}`, which is how Fabro stylesheets write it",
                spelt.property
            )),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::lang::diagnostic::Severity;
    use crate::lang::rules::test_support::{diagnostics, of_rule, wrap};
    use crate::lang::workflow::{LoadOptions, Workflow};

    const RULE: &str = super::ATTRACTOR_SPELLING;

    fn load(src: &str) -> Workflow {
        Workflow::from_bytes(
            "f.dot",
            src.as_bytes(),
            std::path::Path::new("."),
            &LoadOptions::default(),
        )
    }

    fn node_text(wf: &Workflow, id: &str, key: &str) -> Option<String> {
        wf.graph
            .as_ref()?
            .node(id)?
            .attrs
            .text(key)
            .map(|t| t.into_owned())
    }

    #[test]
    fn node_model_spellings_are_read_as_model_and_provider_with_a_note() {
        let src = wrap(
            "  plan [prompt=\"x\", llm_model=\"gpt-5.2\", llm_provider=openai]\n  start -> plan -> exit",
        );
        let wf = load(&src);
        assert_eq!(node_text(&wf, "plan", "model").as_deref(), Some("gpt-5.2"));
        assert_eq!(
            node_text(&wf, "plan", "provider").as_deref(),
            Some("openai")
        );
        let d = of_rule(&src, RULE);
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d.iter().all(|d| d.severity == Severity::Info), "{d:?}");
        assert_eq!(
            d[0].message,
            "`llm_model` is the Attractor spec's name for `model`"
        );
        assert_eq!(d[0].span.map(|s| (s.line, s.column)), Some((4, 21)));
        assert_eq!(d[0].node_id.as_deref(), Some("plan"));
        assert!(
            diagnostics(&src)
                .iter()
                .all(|d| d.rule != "unknown_attribute"),
            "known names"
        );
    }

    #[test]
    fn a_nodes_own_attractor_spelling_beats_the_stylesheet() {
        let src = wrap(
            "  graph [model_stylesheet=\"* { model: sheet-model; }\"]\n  plan [prompt=\"x\", llm_model=own-model]\n  start -> plan -> exit",
        );
        let wf = load(&src);
        assert_eq!(
            node_text(&wf, "plan", "model").as_deref(),
            Some("own-model")
        );
    }

    #[test]
    fn beside_weft_spelling_a_different_value_is_ignored_with_a_warning() {
        let src = wrap(
            "  plan [prompt=\"x\", model=mine, llm_model=theirs]\n  same [prompt=\"y\", model=m, llm_model=m]\n  start -> plan -> same -> exit",
        );
        let wf = load(&src);
        assert_eq!(node_text(&wf, "plan", "model").as_deref(), Some("mine"));
        let d = of_rule(&src, RULE);
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!(d[0].severity, Severity::Warning);
        assert_eq!(
            d[0].message,
            "`llm_model` is ignored beside `model` on `plan`"
        );
        assert_eq!(d[1].severity, Severity::Info, "same value: nothing is lost");
    }

    #[test]
    fn the_graph_default_max_retry_is_read_as_default_max_retries() {
        let src = wrap("  graph [default_max_retry=3]\n  start -> exit");
        let wf = load(&src);
        let graph = wf.graph.as_ref().expect("graph");
        assert_eq!(
            graph
                .attrs
                .value("default_max_retries")
                .and_then(|v| v.as_int()),
            Some(3)
        );
        let d = of_rule(&src, RULE);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].severity, Severity::Info);
        assert!(d[0].message.contains("`default_max_retries`"), "{d:?}");
        let negative = wrap("  graph [default_max_retry=-1]\n  start -> exit");
        let values = of_rule(&negative, "attribute_value");
        assert_eq!(
            values.len(),
            1,
            "reported once, by the written name: {values:?}"
        );
        assert!(
            values[0].message.contains("`default_max_retry`"),
            "{values:?}"
        );
    }

    #[test]
    fn stylesheet_properties_are_noted_at_their_position() {
        let src = wrap(
            "  graph [model_stylesheet=\"\n    * { llm_model: m; }\n    .c { reasoning_effort: high; llm_provider: p; }\n  \"]\n  plan [prompt=\"x\", class=c]\n  start -> plan -> exit",
        );
        let wf = load(&src);
        assert!(wf.is_valid(), "{:?}", wf.diagnostics);
        assert_eq!(node_text(&wf, "plan", "model").as_deref(), Some("m"));
        assert_eq!(node_text(&wf, "plan", "provider").as_deref(), Some("p"));
        let d = of_rule(&src, RULE);
        let at: Vec<_> = d
            .iter()
            .map(|d| d.span.map(|s| (s.line, s.column)))
            .collect();
        assert_eq!(at, vec![Some((5, 9)), Some((6, 34))], "{d:?}");
    }

    #[test]
    fn import_placeholders_take_the_attractor_model_spellings() {
        let src = wrap("  part [import=\"p.fabro\", llm_model=m]\n  start -> part -> exit");
        assert!(
            diagnostics(&src)
                .iter()
                .all(|d| d.rule != "import_attribute"),
            "{:?}",
            diagnostics(&src)
        );
    }
}
