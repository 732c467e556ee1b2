//! Weft: a local engine for AI coding-agent workflows written in Fabro's
//! workflow language (Graphviz DOT with agent extensions).
//!
//! Layers, each depending only on the ones below it:
//! - [`lang`]: the workflow language (lexer, parser, graph model, stylesheet,
//!   conditions, templates, validation rules).

pub mod cli;
pub mod lang;
