//! The workflow language: source text in, a validated [`Graph`] out.

pub(crate) mod attractor;
pub mod attrs;
pub mod budget;
pub mod condition;
pub mod diagnostic;
pub mod files;
pub mod graph;
pub mod handlers;
pub mod import;
pub(crate) mod lexer;
pub mod load;
pub mod parser;
pub mod printer;
pub mod rules;
pub mod span;
pub mod stylesheet;
pub mod template;
pub mod value;
pub mod workflow;

pub use diagnostic::{Diagnostic, Severity};
pub use graph::{Edge, Graph, Handler, Node};
pub use span::Span;
pub use value::Value;
pub use workflow::{LoadOptions, Workflow};
