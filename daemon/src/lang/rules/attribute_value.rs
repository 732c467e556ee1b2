//! `attribute_value` (error): enumerated attributes take one of their
//! documented values, and counts are not negative (`max_parallel` is at least
//! 1). Values the model stylesheet sets need no check here: a stylesheet
//! with a bad value does not parse, so it applies nothing.

use rustc_hash::FxHashSet;

use super::{Cx, closest};
use crate::lang::attrs::{Attrs, Scope};
use crate::lang::diagnostic::Diagnostic;

/// Attributes with a fixed set of values (reference/dot-language.mdx,
/// workflows/transitions.mdx).
const ENUMS: &[(&str, &[&str])] = &[
    ("on_failure", &["route", "exit", "succeed"]),
    (
        "retry_policy",
        &["none", "standard", "aggressive", "linear", "patient"],
    ),
    ("join_policy", &["wait_all", "first_success"]),
    ("language", &["shell", "python"]),
    ("reasoning_effort", &["low", "medium", "high"]),
    ("backend", &["api", "acp", "cli"]),
    ("acp.permissions", &["allow", "deny", "ask"]),
    ("acp.permission_default", &["allow", "reject"]),
    ("cli.agent", &["claude", "codex", "gemini"]),
    ("permissions", &["read-only", "read-write", "full"]),
];

/// Integer attributes and their least allowed value.
const MINIMUMS: &[(&str, i64)] = &[
    ("max_retries", 0),
    ("max_visits", 0),
    ("max_parallel", 1),
    ("default_max_retries", 0),
    // The Attractor spec's name for it: listed, so that a bad value is
    // reported under the name written (the loader's copy shares its spans).
    ("default_max_retry", 0),
    ("max_node_visits", 0),
    ("max_turns", 1),
    ("max_tool_rounds", 1),
    ("max_stage_tokens", 1),
    ("budget_max_tokens", 1),
];

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    // Node defaults put one written attribute on many nodes: report it once.
    let mut seen = FxHashSet::default();
    for d in problems(&cx.graph.attrs, Scope::Graph, &mut seen) {
        out.push(d);
    }
    for node in &cx.graph.nodes {
        for d in problems(&node.attrs, Scope::Node, &mut seen) {
            out.push(d.on_node(&node.id));
        }
    }
}

fn problems(attrs: &Attrs, scope: Scope, seen: &mut FxHashSet<u32>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for attr in attrs.iter() {
        let key = attr.key.as_str();
        if attr.key.declared_type(scope).is_none() {
            continue;
        }
        if let Some((_, allowed)) = ENUMS.iter().find(|(k, _)| *k == key) {
            let text = attr.value.as_text();
            if allowed.contains(&text.as_ref()) || !seen.insert(attr.value_span.start) {
                continue;
            }
            let near = allowed
                .iter()
                .copied()
                .find(|a| a.eq_ignore_ascii_case(&text))
                .or_else(|| closest(&text, allowed.iter().copied()));
            let list = allowed
                .iter()
                .map(|a| format!("`{a}`"))
                .collect::<Vec<_>>()
                .join(", ");
            let hint = match near {
                Some(a) => format!("did you mean `{a}`? `{key}` accepts {list}"),
                None => format!("`{key}` accepts {list}"),
            };
            out.push(
                Diagnostic::error(
                    "attribute_value",
                    format!("invalid value `{text}` for `{key}`"),
                )
                .at(attr.value_span)
                .with_hint(hint),
            );
        }
        if let Some((_, min)) = MINIMUMS.iter().find(|(k, _)| *k == key) {
            let Some(n) = attr.value.as_int().filter(|n| n < min) else {
                continue;
            };
            if seen.insert(attr.value_span.start) {
                out.push(
                    Diagnostic::error(
                        "attribute_value",
                        format!("`{key}` must be at least {min}, found {n}"),
                    )
                    .at(attr.value_span)
                    .with_hint(format!("`{key}` takes a whole number of {min} or more")),
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::lang::rules::test_support::{of_rule, wrap};

    #[test]
    fn an_unknown_failure_policy_is_an_error_with_the_allowed_list() {
        let src = wrap("  plan [prompt=\"x\", on_failure=\"rout\"]\n  start -> plan -> exit");
        let d = of_rule(&src, "attribute_value");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].is_error());
        assert_eq!(d[0].node_id.as_deref(), Some("plan"));
        assert_eq!(d[0].span.map(|s| s.line), Some(4));
        assert_eq!(
            d[0].hint.as_deref(),
            Some("did you mean `route`? `on_failure` accepts `route`, `exit`, `succeed`")
        );
    }

    #[test]
    fn graph_attributes_are_checked_too() {
        let src = wrap(
            "  graph [on_failure=stop, retry_policy=\"Linear\", max_node_visits=-1]\n  start -> exit",
        );
        let d = of_rule(&src, "attribute_value");
        assert_eq!(d.len(), 3, "{d:?}");
        assert!(d.iter().all(|d| d.node_id.is_none()));
        assert!(
            d[1].hint
                .as_deref()
                .unwrap()
                .starts_with("did you mean `linear`?"),
            "{d:?}"
        );
    }

    #[test]
    fn negative_counts_and_zero_parallelism_are_errors() {
        let src = wrap(concat!(
            "  plan [prompt=\"x\", max_retries=-1, max_visits=\"-2\"]\n",
            "  fan [shape=component, max_parallel=0]\n",
            "  start -> plan -> fan -> exit",
        ));
        let d = of_rule(&src, "attribute_value");
        assert_eq!(d.len(), 3, "{d:?}");
        assert_eq!(d[2].message, "`max_parallel` must be at least 1, found 0");
    }

    #[test]
    fn documented_values_are_quiet() {
        let src = wrap(concat!(
            "  graph [on_failure=exit, retry_policy=patient, default_max_retries=0, max_node_visits=0]\n",
            "  plan [prompt=\"x\", reasoning_effort=low, backend=cli, max_retries=2, on_failure=succeed]\n",
            "  run [shape=parallelogram, script=\"print(1)\", language=python]\n",
            "  fan [shape=component, join_policy=first_success, max_parallel=1]\n",
            "  start -> plan -> run -> fan -> exit",
        ));
        assert!(of_rule(&src, "attribute_value").is_empty());
    }

    #[test]
    fn agent_limits_must_be_positive_and_permissions_a_known_level() {
        let src = wrap(concat!(
            "  fix [shape=box, prompt=\"x\", max_turns=0, max_tool_rounds=\"-3\", max_stage_tokens=0, permissions=\"read_only\"]\n",
            "  ok [shape=box, prompt=\"x\", max_turns=5, max_tool_rounds=1, max_stage_tokens=100000, permissions=read-write]\n",
            "  start -> fix -> ok -> exit",
        ));
        let d = of_rule(&src, "attribute_value");
        assert_eq!(d.len(), 4, "{d:?}");
        assert!(
            d.iter().all(|d| d.node_id.as_deref() == Some("fix")),
            "{d:?}"
        );
        assert_eq!(d[0].message, "`max_turns` must be at least 1, found 0");
        assert!(
            d.iter()
                .any(|d| d.hint.as_deref().is_some_and(|h| h.contains("`read-only`"))),
            "{d:?}"
        );
    }
}
