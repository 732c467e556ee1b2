//! `terminal_node`: a workflow has an exit node (`shape=Msquare`, or a node
//! with id `exit`/`Exit`/`end`/`End`); none is an error.
//!
//! Decision, several exits: Fabro requires exactly one, but StrongDM's
//! Attractor spec contradicts itself (one in its shape table, at least one
//! in its own `terminal_node` rule) and its workflows write a success exit
//! and a failure exit. Weft accepts them: a run ends at whichever exit it
//! reaches, as it ends at the one exit, goal gates checked. More than one
//! is an `info` note, so a Fabro user learns that Fabro would refuse it.

use super::Cx;
use crate::lang::diagnostic::{Diagnostic, Severity};

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    match cx.graph.exit_nodes().as_slice() {
        [] => out.push(
            Diagnostic::error("terminal_node", "the workflow has no exit node")
                .at(cx.graph.span)
                .with_hint("add `exit [shape=Msquare]` and an edge from the last stage to it"),
        ),
        [_] => {}
        exits @ [_, second, ..] => {
            let names: Vec<String> = exits.iter().map(|n| format!("`{}`", n.id)).collect();
            out.push(
                Diagnostic::new(
                    "terminal_node",
                    Severity::Info,
                    format!(
                        "the workflow has {} exit nodes ({}): the run ends at whichever exit it reaches; Fabro requires exactly one",
                        exits.len(),
                        names.join(", ")
                    ),
                )
                .at(second.span)
                .on_node(&second.id),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::lang::rules::test_support::{of_rule, wrap};

    #[test]
    fn a_missing_exit_node_is_an_error_on_the_graph() {
        let d = of_rule(
            "digraph G {\n start -> a\n a [prompt=\"x\"]\n}",
            "terminal_node",
        );
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].is_error());
        assert_eq!(d[0].span.map(|s| s.line), Some(1));
        assert!(
            d[0].hint
                .as_deref()
                .is_some_and(|h| h.contains("exit [shape=Msquare]"))
        );
    }

    #[test]
    fn several_exit_nodes_are_one_info_note_at_the_second() {
        let src = wrap("  done [shape=Msquare]\n  also [shape=Msquare]\n  start -> exit");
        let d = of_rule(&src, "terminal_node");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].severity, crate::lang::Severity::Info);
        assert_eq!(d[0].node_id.as_deref(), Some("done"));
        assert_eq!(d[0].span.map(|s| s.line), Some(4));
        assert!(
            d[0].message
                .contains("3 exit nodes (`exit`, `done`, `also`)")
                && d[0].message.contains("Fabro requires exactly one"),
            "{}",
            d[0].message
        );
    }

    #[test]
    fn a_node_named_end_is_the_exit() {
        assert!(of_rule("digraph G { start -> end }", "terminal_node").is_empty());
        assert!(of_rule(&wrap("  start -> exit"), "terminal_node").is_empty());
    }
}
