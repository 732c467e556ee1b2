//! The integration tests of the `weft` crate, in one test binary so that
//! `weft` is linked once rather than once per file: one module per area.
//!
//! Run one area with a filter on the module path, e.g.
//! `cargo nextest run -p weft --test it engine::` or
//! `cargo test -p weft --test it wire_types`.

mod acp_wire;
mod agent;
mod apis;
mod attractor;
mod checkpoints;
mod cli_streams;
mod engine;
mod git;
mod git_apply;
mod git_scan;
mod harness;
mod imports;
mod llm_providers;
mod prompt;
mod properties;
mod server;
mod wire_types;
