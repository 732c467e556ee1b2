//! `tool_command_deprecated` (warning): `tool_command` is the old name of a
//! command node's `script` (Fabro's own `test/legacy_tool.fabro` still
//! uses it). The loader runs it as the `script` when the node has none;
//! beside a `script` it is ignored.

use rustc_hash::FxHashSet;

use super::Cx;
use crate::lang::diagnostic::Diagnostic;

const RULE: &str = "tool_command_deprecated";

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    // Node defaults put one written attribute on many nodes: report it once.
    let mut seen = FxHashSet::default();
    for (_, node) in cx.nodes_with("tool_command") {
        let Some(old) = node.attrs.get("tool_command") else {
            continue;
        };
        if !seen.insert(old.key_span.start) {
            continue;
        }
        // The loader copied it to `script` (same spans) unless the node
        // wrote a `script` of its own.
        let aliased = node
            .attrs
            .get("script")
            .is_some_and(|s| s.key_span == old.key_span);
        let d = if aliased {
            Diagnostic::warning(RULE, "`tool_command` is the old name of `script`")
                .with_hint("rename it to `script`; the value stays as it is")
        } else {
            Diagnostic::warning(
                RULE,
                format!("`tool_command` is ignored beside `script` on `{}`", node.id),
            )
            .with_hint("remove `tool_command`, the old name of `script`")
        };
        out.push(d.at(old.key_span).on_node(&node.id));
    }
}

#[cfg(test)]
mod tests {
    use crate::lang::rules::test_support::{diagnostics, of_rule, wrap};
    use crate::lang::workflow::{LoadOptions, Workflow};

    const RULE: &str = super::RULE;

    #[test]
    fn fabros_legacy_tool_workflow_runs_its_tool_command_as_the_script() {
        // Fabro's test/legacy_tool.fabro, in substance.
        let src = "digraph LegacyTool {\n  graph [goal=\"Run a legacy tool\"]\n  start [shape=Mdiamond]\n  exit [shape=Msquare]\n  echo [shape=parallelogram, tool_command=\"echo hello\"]\n  start -> echo -> exit\n}\n";
        let wf = Workflow::from_bytes(
            "legacy_tool.fabro",
            src.as_bytes(),
            std::path::Path::new("."),
            &LoadOptions::default(),
        );
        assert!(wf.is_valid(), "{:?}", wf.diagnostics);
        let node = wf
            .graph
            .as_ref()
            .and_then(|g| g.node("echo"))
            .expect("echo");
        assert_eq!(node.attrs.text("script").as_deref(), Some("echo hello"));
        let d: Vec<_> = wf.diagnostics.iter().filter(|d| d.rule == RULE).collect();
        assert_eq!(d.len(), 1, "{:?}", wf.diagnostics);
        assert_eq!(d[0].rule, RULE);
        assert!(!d[0].is_error());
        assert_eq!(d[0].span.map(|s| (s.line, s.column)), Some((5, 30)));
        assert_eq!(
            d[0].hint.as_deref(),
            Some("rename it to `script`; the value stays as it is")
        );
    }

    #[test]
    fn beside_a_script_tool_command_is_ignored_with_a_warning() {
        let src = wrap(
            "  run [shape=parallelogram, script=\"make\", tool_command=\"echo old\"]\n  start -> run -> exit",
        );
        let d = of_rule(&src, RULE);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].message.contains("ignored beside `script`"), "{d:?}");
        assert!(
            diagnostics(&src)
                .iter()
                .all(|d| d.rule != "unknown_attribute"),
            "tool_command is a known attribute"
        );
    }
}
