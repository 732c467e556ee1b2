//! `prompt_on_llm_nodes` (warning): an agent or prompt node needs something
//! to tell the model what to do: a non-empty `prompt`, or at least a `label`,
//! which stands in for the prompt as in Fabro.

use super::Cx;
use crate::lang::diagnostic::Diagnostic;

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    // Undeclared nodes are already errors (`undeclared_node`).
    for node in cx
        .graph
        .nodes
        .iter()
        // A node still holding `import` is a placeholder whose import
        // failed, an error already; it was never meant to have a prompt.
        .filter(|n| n.declared && n.handler.uses_llm() && !n.attrs.contains("import"))
    {
        if node.attrs.non_empty("prompt").is_some() || node.attrs.non_empty("label").is_some() {
            continue;
        }
        out.push(
            Diagnostic::warning(
                "prompt_on_llm_nodes",
                format!("`{}` calls a model but has no prompt", node.id),
            )
            .at(cx.attr_span(node, "prompt"))
            .on_node(&node.id)
            .with_hint(format!(
                "add `prompt=\"...\"` (or `prompt=\"@prompts/{}.md\"`) saying what the model should do",
                node.id
            )),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::lang::rules::test_support::{of_rule, wrap};

    #[test]
    fn an_agent_without_prompt_or_label_is_warned_about() {
        let src = wrap("  plan [shape=tab]\n  start -> plan -> exit");
        let d = of_rule(&src, "prompt_on_llm_nodes");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(!d[0].is_error());
        assert_eq!(d[0].node_id.as_deref(), Some("plan"));
        assert_eq!(d[0].span.map(|s| s.line), Some(4));
    }

    #[test]
    fn an_empty_prompt_is_pointed_at() {
        let src = wrap("  plan [prompt=\"  \"]\n  start -> plan -> exit");
        let d = of_rule(&src, "prompt_on_llm_nodes");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].span.map(|s| (s.line, s.column)), Some((4, 16)));
    }

    #[test]
    fn a_label_stands_in_for_the_prompt() {
        let src = wrap("  plan [label=\"Plan the work\"]\n  start -> plan -> exit");
        assert!(of_rule(&src, "prompt_on_llm_nodes").is_empty());
    }

    #[test]
    fn non_llm_nodes_need_no_prompt() {
        let src = wrap(concat!(
            "  gate [shape=hexagon]\n",
            "  run [shape=parallelogram, script=\"true\"]\n",
            "  start -> gate -> run -> exit",
        ));
        assert!(of_rule(&src, "prompt_on_llm_nodes").is_empty());
    }
}
