//! What loading one workflow may cost, its imports included. Each cap is a
//! named constant quoted by the diagnostic that enforces it and listed in
//! docs/language.md ("Limits"). Real workflows stay far below all of them;
//! they exist so that a hostile file (or a careless generator) gets a clear
//! error instead of taking the daemon's memory or time.
//!
//! Caps on single files (the workflow, an import, an `@file`) are in
//! [`crate::limits`]; the nesting cap of `{ }` is the parser's
//! ([`super::parser::MAX_NESTING`]), and so is the cap on copied attributes
//! ([`super::parser::MAX_EXPANSION_BYTES`]), which this budget shares out
//! between the files of one load.

use crate::limits::MIB;

/// How deep imports may nest: `a.fabro` importing `b.fabro` importing ...
/// Each level is a recursive load, so this also bounds the stack.
pub(crate) const MAX_IMPORT_DEPTH: usize = 16;

/// How many imported files one load may read, counting a file each time it
/// is imported. Bounds the work of a file that imports the next twice, and
/// so on (2^n loads).
pub(crate) const MAX_IMPORTS: u32 = 256;

/// How many nodes imports may splice in, counting every copy (a node
/// spliced into a file that is itself imported twice counts three times).
pub(crate) const MAX_IMPORTED_NODES: usize = 100_000;

/// How many bytes of files one load may read besides the workflow itself:
/// imports and `@file` references together, each file each time it is
/// named. (One file is capped at [`crate::limits::MAX_WORKFLOW_BYTES`] or
/// [`crate::limits::MAX_REFERENCED_BYTES`].)
pub(crate) const MAX_READ_BYTES: u64 = 32 * MIB;

/// MiniJinja fuel for all the templates of one load, both passes and every
/// import: about one unit per instruction and one per 64 bytes of text a
/// template creates, so two million units bound a load's rendering to a
/// few hundred milliseconds and 128 MB. A prompt that renders `{{ goal }}`
/// costs a handful of units.
pub(crate) const TEMPLATE_FUEL: u64 = 2_000_000;

/// What is left of each cap while one workflow loads.
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    /// The size of the workflow text itself, before and after template
    /// pass 1: [`crate::limits::MAX_WORKFLOW_BYTES`], except for the
    /// benchmark's large files ([`super::Workflow::from_bytes_up_to`]).
    pub workflow_bytes: u64,
    pub imports: u32,
    pub imported_nodes: usize,
    pub read_bytes: u64,
    pub expansion_bytes: u64,
    pub fuel: u64,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            workflow_bytes: crate::limits::MAX_WORKFLOW_BYTES,
            imports: MAX_IMPORTS,
            imported_nodes: MAX_IMPORTED_NODES,
            read_bytes: MAX_READ_BYTES,
            expansion_bytes: super::parser::MAX_EXPANSION_BYTES,
            fuel: TEMPLATE_FUEL,
        }
    }
}
