//! `script_on_llm_node` (warning): `script` is run only by a command node
//! (`parallelogram`, or `type="command"`). On an agent or prompt node it is
//! never run, and a model is called instead, told the node's prompt, label
//! or id. A node without a `shape` is a `box`, an agent, so a node written
//! as `check [script="make check"]` quietly becomes an agent: the reference
//! docs' own workflows/transitions.mdx has `required_check
//! [script="./required-check"]`. Almost always a command was meant.

use super::Cx;
use crate::lang::diagnostic::Diagnostic;
use crate::lang::graph::Handler;

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    for node in cx
        .graph
        .nodes
        .iter()
        .filter(|n| n.declared && n.handler.uses_llm())
    {
        if node.attrs.non_empty("script").is_none() {
            continue;
        }
        let kind = if node.handler == Handler::Agent {
            "an agent"
        } else {
            "a prompt node"
        };
        out.push(
            Diagnostic::warning(
                "script_on_llm_node",
                format!(
                    "`{}` has a `script` but runs as {kind} (shape `{}`): the script is never \
                     run, a model is called instead",
                    node.id,
                    node.handler.shape()
                ),
            )
            .at(cx.attr_span(node, "script"))
            .on_node(&node.id)
            .with_hint(
                "add `shape=parallelogram` to run the script as a command; or remove `script`",
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::lang::rules::test_support::{of_rule, wrap};

    #[test]
    fn a_script_on_a_node_without_a_shape_is_pointed_at_since_it_runs_as_an_agent() {
        // As workflows/transitions.mdx writes it.
        let src = wrap(
            "  required_check [script=\"./required-check\"]\n  start -> required_check -> exit",
        );
        let d = of_rule(&src, "script_on_llm_node");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(!d[0].is_error());
        assert_eq!(d[0].node_id.as_deref(), Some("required_check"));
        assert!(
            d[0].message.contains("runs as an agent (shape `box`)"),
            "{}",
            d[0].message
        );
        assert_eq!(
            d[0].span.map(|s| (s.line, s.column)),
            Some((4, 26)),
            "the script value"
        );
        assert!(
            d[0].hint
                .as_deref()
                .is_some_and(|h| h.contains("shape=parallelogram"))
        );
    }

    #[test]
    fn a_script_beside_a_label_on_a_prompt_node_is_pointed_at_too() {
        let src = wrap(
            "  check [shape=tab, label=\"Check\", script=\"make check\"]\n  start -> check -> exit",
        );
        let d = of_rule(&src, "script_on_llm_node");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(
            d[0].message.contains("a prompt node (shape `tab`)"),
            "{}",
            d[0].message
        );
    }

    #[test]
    fn command_nodes_and_llm_nodes_without_a_script_are_quiet() {
        let src = wrap(concat!(
            "  a [shape=parallelogram, script=\"true\"]\n",
            "  b [type=command, script=\"true\"]\n",
            "  c [prompt=\"Fix it\", script=\"\"]\n",
            "  start -> a -> b -> c -> exit",
        ));
        assert!(of_rule(&src, "script_on_llm_node").is_empty());
    }
}
