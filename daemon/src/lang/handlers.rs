//! What each handler is, in one table: its shape, the `type=` names that
//! select it (Fabro's, their legacy aliases, and the Attractor spec's), and
//! the node attributes it reads, for `weft handlers`. The parser keeps its
//! own `match`es on shapes and types (they run once per node of every
//! load); the tests hold the two in step.

use serde::Serialize;

use super::graph::Handler;

/// One handler's description.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct HandlerInfo {
    #[serde(skip)]
    pub handler: Handler,
    /// The canonical `type=` name.
    pub name: &'static str,
    /// The Graphviz shape that selects it.
    pub shape: &'static str,
    /// Every `type=` name that selects it, the canonical one first.
    pub types: &'static [&'static str],
    /// What it does, in a line.
    pub summary: &'static str,
    /// The node attributes it reads beyond [`STAGE_ATTRIBUTES`].
    pub attributes: &'static [&'static str],
}

/// Attributes every stage reads (not the start and the exit): its name,
/// classes, visits, retries, failure routing and goal gate.
pub const STAGE_ATTRIBUTES: &[&str] = &[
    "label",
    "class",
    "max_visits",
    "max_retries",
    "retry_policy",
    "retry_target",
    "fallback_retry_target",
    "goal_gate",
    "auto_status",
    "allow_partial",
    "on_failure",
    "selection",
];

/// The attributes of a stage that calls a language model.
macro_rules! model_attributes {
    ($($more:literal),* $(,)?) => {
        &[
            "prompt",
            "model",
            "provider",
            "reasoning_effort",
            "speed",
            "max_tokens",
            "temperature",
            "fidelity",
            "thread_id",
            "output_schema",
            "output_retries",
            $($more),*
        ]
    };
}

/// Every handler, in the order the docs list them.
pub const HANDLERS: &[HandlerInfo] = &[
    HandlerInfo {
        handler: Handler::Start,
        name: "start",
        shape: "Mdiamond",
        types: &["start"],
        summary: "where the run begins; does nothing itself",
        attributes: &[],
    },
    HandlerInfo {
        handler: Handler::Exit,
        name: "exit",
        shape: "Msquare",
        types: &["exit"],
        summary: "where the run ends, once its goal gates are satisfied",
        attributes: &[],
    },
    HandlerInfo {
        handler: Handler::Agent,
        name: "agent",
        shape: "box",
        types: &["agent", "agent_loop", "codergen", "codergen_mode"],
        summary: "a language model with tools, turn after turn, in the work dir (the default)",
        attributes: model_attributes![
            "timeout",
            "max_turns",
            "max_tool_rounds",
            "max_stage_tokens",
            "permissions",
            "project_memory",
            "backend",
            "acp.command",
            "acp.agent",
            "acp.model",
            "acp.mode",
            "acp.permissions",
            "acp.stall_timeout",
            "acp.permission_timeout",
            "acp.permission_default",
            "cli.agent",
            "cli.command",
            "cli.stall_timeout",
        ],
    },
    HandlerInfo {
        handler: Handler::Prompt,
        name: "prompt",
        shape: "tab",
        types: &["prompt", "one_shot"],
        summary: "one language-model call, no tools",
        attributes: model_attributes![],
    },
    HandlerInfo {
        handler: Handler::Command,
        name: "command",
        shape: "parallelogram",
        types: &["command", "tool", "tool_command"],
        summary: "a shell (bash) or Python script in the work dir; its exit status is the outcome",
        attributes: &[
            "script",
            "tool_command",
            "language",
            "timeout",
            "output_schema",
        ],
    },
    HandlerInfo {
        handler: Handler::Human,
        name: "human",
        shape: "hexagon",
        types: &["human", "wait.human"],
        summary: "asks a person to choose among the labels of its outgoing edges",
        attributes: &["timeout", "human.default_choice"],
    },
    HandlerInfo {
        handler: Handler::Conditional,
        name: "conditional",
        shape: "diamond",
        types: &["conditional"],
        summary: "routing only: its edges' conditions read the previous stage's outcome",
        attributes: &[],
    },
    HandlerInfo {
        handler: Handler::Parallel,
        name: "parallel",
        shape: "component",
        types: &["parallel"],
        summary: "runs each outgoing edge's branch at once, up to the fan-in",
        attributes: &["join_policy", "max_parallel"],
    },
    HandlerInfo {
        handler: Handler::FanIn,
        name: "parallel.fan_in",
        shape: "tripleoctagon",
        types: &["parallel.fan_in", "fan_in"],
        summary: "where parallel branches meet; picks the best branch result",
        attributes: &[],
    },
    HandlerInfo {
        handler: Handler::Wait,
        name: "wait",
        shape: "insulator",
        types: &["wait"],
        summary: "pauses the run for a while",
        attributes: &["duration"],
    },
    HandlerInfo {
        handler: Handler::SubWorkflow,
        name: "stack.manager_loop",
        shape: "house",
        types: &["stack.manager_loop", "sub_workflow"],
        summary: "runs another workflow as a child and watches it",
        attributes: &[
            "stack.child_workflow",
            "stack.child_dotfile",
            "stack.child_dot_source",
            "manager.poll_interval",
            "manager.max_cycles",
            "manager.stop_condition",
        ],
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lang::attrs::{Scope, is_known, names};

    #[test]
    fn every_handler_is_described_once_with_its_canonical_name_first() {
        for handler in Handler::ALL {
            let found: Vec<_> = HANDLERS.iter().filter(|h| h.handler == handler).collect();
            assert_eq!(found.len(), 1, "{handler:?}");
            assert_eq!(found[0].name, handler.name());
            assert_eq!(found[0].shape, handler.shape());
            assert_eq!(found[0].types.first(), Some(&handler.name()));
            assert_eq!(Handler::from_shape(found[0].shape), Some(handler));
            for ty in found[0].types {
                assert_eq!(Handler::from_type(ty), Some(handler), "{ty}");
            }
        }
        assert_eq!(HANDLERS.len(), Handler::ALL.len());
    }

    #[test]
    fn the_attractor_spec_s_type_names_select_their_handlers() {
        for (ty, handler) in [
            ("codergen", Handler::Agent),
            ("wait.human", Handler::Human),
            ("tool", Handler::Command),
            ("parallel", Handler::Parallel),
            ("parallel.fan_in", Handler::FanIn),
            ("stack.manager_loop", Handler::SubWorkflow),
            ("conditional", Handler::Conditional),
            ("start", Handler::Start),
            ("exit", Handler::Exit),
        ] {
            assert_eq!(Handler::from_type(ty), Some(handler), "{ty}");
        }
        assert_eq!(Handler::from_type("my_custom_type"), None);
    }

    #[test]
    fn every_attribute_listed_is_a_known_node_attribute() {
        for name in STAGE_ATTRIBUTES
            .iter()
            .chain(HANDLERS.iter().flat_map(|h| h.attributes))
        {
            assert!(is_known(Scope::Node, name), "{name}");
        }
    }

    #[test]
    fn every_known_node_attribute_is_read_by_some_handler() {
        // `shape`, `type` and `import` choose what a node is rather than
        // configure a handler.
        for name in names(Scope::Node) {
            if matches!(name, "shape" | "type" | "import") {
                continue;
            }
            assert!(
                STAGE_ATTRIBUTES.contains(&name)
                    || HANDLERS.iter().any(|h| h.attributes.contains(&name)),
                "`{name}` is known but no handler lists it"
            );
        }
    }
}
