//! `command_requires_script` (error): a command node runs its `script`, so
//! it must have a non-empty one.

use super::Cx;
use crate::lang::Handler;
use crate::lang::diagnostic::Diagnostic;

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    for node in cx
        .graph
        .nodes
        .iter()
        .filter(|n| n.handler == Handler::Command)
    {
        if node.attrs.non_empty("script").is_some() {
            continue;
        }
        out.push(
            Diagnostic::error(
                "command_requires_script",
                format!("command node `{}` has no script", node.id),
            )
            .at(cx.attr_span(node, "script"))
            .on_node(&node.id)
            .with_hint("add `script=\"...\"` with the shell command to run"),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::lang::rules::test_support::{of_rule, wrap};

    #[test]
    fn a_command_without_script_is_an_error() {
        let src = wrap("  run [shape=parallelogram]\n  start -> run -> exit");
        let d = of_rule(&src, "command_requires_script");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].is_error());
        assert_eq!(d[0].node_id.as_deref(), Some("run"));
        assert_eq!(d[0].span.map(|s| s.line), Some(4));
    }

    #[test]
    fn a_blank_script_counts_as_missing() {
        let src = wrap("  run [type=command, script=\"\"]\n  start -> run -> exit");
        assert_eq!(of_rule(&src, "command_requires_script").len(), 1);
    }

    #[test]
    fn a_command_with_a_script_is_quiet() {
        let src =
            wrap("  run [shape=parallelogram, script=\"cargo test\"]\n  start -> run -> exit");
        assert!(of_rule(&src, "command_requires_script").is_empty());
    }
}
