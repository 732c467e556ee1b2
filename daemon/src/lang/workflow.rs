//! A loaded workflow and what loading it needs and leaves: the options
//! (inputs, goal), the graph with its diagnostics, the files it referenced,
//! and the model stylesheets waiting to be applied. The loading itself is
//! [`super::load`]'s.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::attrs::{Attr, Key};
use super::diagnostic::Diagnostic;
use super::files::RefError;
use super::graph::{Graph, NodeId};
use super::lexer::source_offset_in_string;
use super::span::{Span, span_after};
use super::stylesheet;
use super::value::Value;

/// What a load needs besides the text: the run's inputs and goal override.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// `{{ inputs.NAME }}` values.
    pub inputs: BTreeMap<String, String>,
    /// Replaces the graph's `goal` when set (e.g. `weft run --goal`).
    pub goal: Option<String>,
}

/// A file a workflow refers to (`@prompt.md`, `stack.child_workflow`,
/// `import`), and whether it could be read.
#[derive(Debug, Clone, PartialEq)]
pub struct FileRef {
    /// The node whose attribute names the file; `None` for the graph.
    pub node: Option<String>,
    pub key: String,
    /// As written, without the `@`.
    pub written: String,
    pub path: PathBuf,
    pub span: Span,
    /// `None` when the file was read; otherwise why not.
    pub error: Option<String>,
    /// What to do about `error`.
    pub hint: Option<String>,
    /// The file lies outside the workflow's tree, or is a kernel file: the
    /// `file_outside_tree` rule reports it, not `unresolved_file_ref`.
    pub refused: bool,
}

impl FileRef {
    /// Records why the file could not be used.
    pub(super) fn failed(&mut self, e: &RefError) {
        self.error = Some(e.to_string());
        self.hint = Some(e.hint(&self.path));
        self.refused = e.is_confinement();
    }
}

/// A loaded workflow: its graph (when it parsed) and every diagnostic.
#[derive(Debug, Clone)]
pub struct Workflow {
    /// The file name as the user gave it, for messages.
    pub file: String,
    /// Directory that relative references resolve against.
    pub base_dir: PathBuf,
    /// The text that was parsed (after template pass 1).
    pub source: String,
    /// `None` when the file did not parse.
    pub graph: Option<Graph>,
    /// Sorted by position; errors make the workflow invalid.
    pub diagnostics: Vec<Diagnostic>,
    pub file_refs: Vec<FileRef>,
}

impl Workflow {
    /// True when no diagnostic is an error.
    #[must_use]
    pub(crate) fn is_valid(&self) -> bool {
        !self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// The workflow's name: the graph name, or the file stem when it did
    /// not parse.
    #[must_use]
    pub fn name(&self) -> String {
        match &self.graph {
            Some(g) => g.name.clone(),
            None => Path::new(&self.file)
                .file_stem()
                .map_or_else(String::new, |s| s.to_string_lossy().into_owned()),
        }
    }
}

/// Places a problem found at `offset..offset+len` inside an attribute's
/// value at its true position in the file, seeing through string escapes.
#[must_use]
pub(crate) fn span_in_value(source: &str, attr: &Attr, offset: usize, len: usize) -> Span {
    // Positions are counted on from the value's own (known) position, not
    // from the start of the file: a file with thousands of such problems
    // must not be rescanned for each.
    let literal = attr.value_span.start as usize;
    if source.as_bytes().get(literal) == Some(&b'"') {
        let start = source_offset_in_string(source, literal, offset);
        let end = source_offset_in_string(source, literal, offset + len).max(start);
        span_after(source, attr.value_span, start, end)
    } else {
        let start = literal + offset;
        span_after(source, attr.value_span, start, start + len)
    }
}

/// Resolves `@path` in a reference to an absolute path: relative to the
/// workflow's directory, with `~` meaning the home directory.
#[must_use]
pub(crate) fn resolve_path(base_dir: &Path, written: &str) -> PathBuf {
    if let Some(rest) = written.strip_prefix("~/")
        && let Some(home) = std::env::var_os("HOME")
    {
        return PathBuf::from(home).join(rest);
    }
    base_dir.join(written)
}

/// Attributes that name a file by path (with or without `@`) that must exist.
/// (`import` is resolved by the import pass, which reads the file.)
pub(super) const PATHS: &[&str] = &[
    "output_schema",
    "stack.child_workflow",
    "stack.child_dotfile",
];

/// A model stylesheet and the nodes it styles. A file's own stylesheet
/// styles all of its nodes, those its imports spliced in included; an
/// imported file's stylesheet styles only the nodes that came from it, and
/// matches `#id` against their ids in that file (without `prefix`).
///
/// Properties a node sets itself always win (workflows/stylesheets.mdx), and
/// so do the model attributes an import placeholder passes down: sheets only
/// fill what is still unset, innermost import first. A stylesheet that does
/// not parse applies nothing; the `stylesheet_syntax` rule reports it.
#[derive(Debug, Clone)]
pub(super) struct ScopedSheet {
    /// The `model_stylesheet` attribute; set properties take its spans.
    pub attr: Attr,
    /// What the import placeholders put in front of the styled nodes' ids.
    pub prefix: String,
    /// The styled nodes; `None` for every node of the graph.
    pub nodes: Option<Vec<NodeId>>,
}

impl ScopedSheet {
    /// Sets the properties the sheet gives each LLM node it styles, where
    /// the node has none.
    pub(super) fn apply(&self, graph: &mut Graph) {
        let text = self.attr.value.as_text();
        let Ok(sheet) = stylesheet::parse(&text) else {
            return;
        };
        let positions: Vec<usize> = match &self.nodes {
            None => (0..graph.nodes.len()).collect(),
            Some(ids) => ids.iter().filter_map(|id| graph.node_index(id)).collect(),
        };
        for i in positions {
            let Some(node) = graph.nodes.get_mut(i) else {
                continue;
            };
            if !node.handler.uses_llm() {
                continue;
            }
            let classes = node.classes();
            let id = node.id.strip_prefix(&self.prefix).unwrap_or(&node.id);
            let resolved: Vec<(&'static str, String)> = sheet
                .resolve(id, node.shape(), &classes)
                .into_iter()
                .map(|(p, v)| (p.name(), v.to_string()))
                .collect();
            for (key, value) in resolved {
                if !node.attrs.contains(key) {
                    node.attrs.set(Attr {
                        key: Key::new(key),
                        value: Value::Str(value.into()),
                        key_span: self.attr.key_span,
                        value_span: self.attr.value_span,
                    });
                }
            }
        }
    }
}
