//! The end-to-end tests over the real `weft` and `weftd` binaries, in one
//! test binary so that `weft` is linked once rather than once per file: one
//! module per area, sharing the harness in `weft_tests` (`tests/src/lib.rs`).
//!
//! The binaries must be built first (`cargo build -p weft --bins`). Run one
//! area with a filter on the module path, e.g.
//! `cargo nextest run -p weft-tests --test it daemon_gates::`.

mod acp_claude_adapter;
mod acp_stages;
mod agent_stages;
mod attractor;
mod attractor_outcomes;
mod budgets;
mod checkpoints;
mod cli_apply;
mod cli_artifacts;
mod cli_config;
mod cli_cost;
mod cli_daemon;
mod cli_gates;
mod cli_hostile_workflows;
mod cli_ids;
mod cli_inspect;
mod cli_language;
mod cli_manual;
mod cli_model;
mod cli_open;
mod cli_output;
mod cli_prompt;
mod cli_run;
mod cli_stages;
mod cli_validate;
mod crash;
mod daemon;
mod daemon_gates;
mod daemon_lifecycle;
mod daemon_protocol;
mod examples;
mod fabro_diagnostics;
mod notifications;
mod reference_agents;
mod reference_blocks;
mod reference_docs;
mod retros;
mod run_list;
mod run_outcomes;
mod sandbox_docker;
mod sandbox_runs;
mod sandbox_ssh;
mod secrets;
mod ui_fixtures;
