//! Workflow imports: a node with `import="path.fabro"` (the placeholder) is
//! replaced by the nodes and edges of that workflow, their ids prefixed with
//! the placeholder's (`review.check`).
//!
//! The reference only names the feature (workflows/variables.mdx: inputs
//! render in imported files too); issue 4 §3 and docs/language.md,
//! "Imports", define it:
//!
//! - The imported file goes through the same loading steps, with the same
//!   inputs and the importer's goal, its own imports included, and is
//!   validated on its own. Its errors are reported at the placeholder and
//!   stop the splice; its warnings are left to `weft validate` on it.
//! - Its nodes, except its start and exit, join the importer. Edges are
//!   rewired by contracting the start and the exit: every path
//!   `A -> placeholder`, `start -> F` becomes `A -> placeholder.F`, every
//!   `Y -> exit`, `placeholder -> B` becomes `placeholder.Y -> B`. Along such
//!   a path the first edge's attributes win and conditions are joined with
//!   `&&`.
//! - The placeholder may carry only model attributes (passed down to the
//!   spliced LLM nodes that set none), `label`, `class` (passed down) and
//!   `import`.

use std::path::{Path, PathBuf};

use rustc_hash::{FxHashMap, FxHashSet};

use super::attrs::{self, Attr, Attrs, Key, Scope};
use super::budget::{Budget, MAX_IMPORT_DEPTH, MAX_IMPORTED_NODES, MAX_IMPORTS, MAX_READ_BYTES};
use super::diagnostic::Diagnostic;
use super::files::{FILE_OUTSIDE_TREE, RefError, Tree};
use super::graph::{Edge, Graph, Node, NodeId};
use super::rules;
use super::span::Span;
use super::value::Value;
use super::workflow::{self, FileRef, LoadOptions, ScopedSheet, Workflow, resolve_path};
use crate::limits::MAX_WORKFLOW_BYTES;

/// The imported file cannot be read (or the placeholder names none).
pub(crate) const IMPORT_NOT_FOUND: &str = "import_not_found";
/// A file imports itself, directly or through other imports.
pub(crate) const IMPORT_CYCLE: &str = "import_cycle";
/// The placeholder carries an attribute other than the allowed ones.
pub(crate) const IMPORT_ATTRIBUTE: &str = "import_attribute";
/// A spliced id is already a node of the importing workflow.
pub(crate) const IMPORT_CLASH: &str = "import_clash";
/// A graph attribute of the imported file that does not carry over.
pub(crate) const IMPORT_GRAPH_ATTRIBUTE: &str = "import_graph_attribute";
/// Imports nest deeper than [`MAX_IMPORT_DEPTH`].
pub(crate) const IMPORT_TOO_DEEP: &str = "import_too_deep";
/// Imports read more than [`MAX_IMPORTS`] files or splice in more than
/// [`MAX_IMPORTED_NODES`] nodes.
pub(crate) const IMPORT_TOO_LARGE: &str = "import_too_large";

/// The attributes a placeholder passes down to the LLM nodes it splices in
/// that do not set them: the properties a model stylesheet can set.
pub(crate) const MODEL_KEYS: &[&str] = &[
    "model",
    "provider",
    "reasoning_effort",
    "speed",
    "backend",
    "acp.permissions",
];

/// The other attributes a placeholder may carry: besides these, the
/// Attractor spec's names of model attributes (`llm_model`), which the
/// loader has copied to Weft's (`model`) by now, so they are passed down
/// under that name.
const PLACEHOLDER_KEYS: &[&str] = &["import", "label", "class", "llm_model", "llm_provider"];

/// Graph attributes of an imported file that are fine to drop: the goal
/// (a run has one, the importer's), presentation, and the stylesheet (which
/// still styles the file's own nodes). Any other known graph attribute
/// changes how the file runs and draws `import_graph_attribute`.
const GRAPH_KEYS_DROPPED_QUIETLY: &[&str] = &["goal", "label", "rankdir", "model_stylesheet"];

/// The node attributes that name another node of the same file.
const NODE_REFS: &[&str] = &["retry_target", "fallback_retry_target"];

/// One load of a workflow: the files being loaded, outermost first (a file
/// that imports one of them closes a cycle), where they may read from, and
/// what is left of the load's budget.
#[derive(Debug)]
pub(super) struct Chain {
    /// The outermost file's directory, which paths in messages are shown
    /// relative to.
    root_dir: Option<PathBuf>,
    /// Canonical paths. The outermost file is missing when it was not loaded
    /// from disk; a self-import is then caught one level down.
    files: Vec<PathBuf>,
    /// The imports being loaded, as the chain of messages names them:
    /// `(file shown, placeholder id)`, outermost first.
    links: Vec<(String, String)>,
    /// Where every file of this load may be read from: the outermost
    /// file's tree (an imported file reads from it too).
    pub(super) tree: Tree,
    pub(super) budget: Budget,
    /// How an imported file is loaded: [`super::load::assemble`], handed
    /// in so that this file and the loader do not import each other.
    assemble: Assemble,
}

/// Loads one file up to its graph, imports spliced in (see
/// [`super::load::assemble`]).
pub(super) type Assemble =
    fn(&str, Vec<u8>, &Path, &LoadOptions, &mut Chain) -> (Workflow, Vec<ScopedSheet>);

impl Chain {
    /// The chain for loading `file` from `base_dir`.
    pub(super) fn new(file: &str, base_dir: &Path, assemble: Assemble) -> Chain {
        // `weft validate flow.fabro` loads from the directory "".
        let base_dir = if base_dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            base_dir
        };
        let root = Path::new(file)
            .file_name()
            .map(|name| base_dir.join(name))
            .filter(|path| path.is_file())
            .and_then(|path| std::fs::canonicalize(path).ok());
        Chain {
            root_dir: std::fs::canonicalize(base_dir).ok(),
            files: root.into_iter().collect(),
            links: vec![(
                Path::new(file)
                    .file_name()
                    .map_or_else(|| file.to_string(), |n| n.to_string_lossy().into_owned()),
                String::new(),
            )],
            tree: Tree::of(base_dir),
            budget: Budget::default(),
            assemble,
        }
    }

    /// Reads a referenced text file from the tree, at most `cap` bytes and
    /// within what is left of the load's reading budget.
    pub(super) fn read_text(&mut self, path: &Path, cap: u64) -> Result<String, RefError> {
        let text = self.tree.read_text(path, cap)?;
        self.spend_read(text.len())?;
        Ok(text)
    }

    fn read(&mut self, path: &Path, cap: u64) -> Result<Vec<u8>, RefError> {
        let bytes = self.tree.read(path, cap)?;
        self.spend_read(bytes.len())?;
        Ok(bytes)
    }

    fn spend_read(&mut self, len: usize) -> Result<(), RefError> {
        match self.budget.read_bytes.checked_sub(len as u64) {
            Some(left) => {
                self.budget.read_bytes = left;
                Ok(())
            }
            None => Err(RefError::OverBudget {
                cap: MAX_READ_BYTES,
            }),
        }
    }

    /// The chain of imports down to `placeholder`'s import of `next`, as
    /// messages show it: `main.fabro → review (review.fabro) → ...`.
    fn describe(&self, placeholder: &str, next: &str) -> String {
        let mut parts: Vec<String> = Vec::with_capacity(self.links.len() + 1);
        for (k, (file, _)) in self.links.iter().enumerate() {
            let via = self
                .links
                .get(k + 1)
                .map_or(placeholder, |(_, id)| id.as_str());
            parts.push(format!("{file} (`{via}`)"));
        }
        parts.push(next.to_string());
        parts.join(" → ")
    }

    /// A canonical path as messages show it: relative to the outermost
    /// file's directory when inside it.
    fn display(&self, path: &Path) -> String {
        self.root_dir
            .as_deref()
            .and_then(|dir| path.strip_prefix(dir).ok())
            .unwrap_or(path)
            .display()
            .to_string()
    }
}

/// Replaces every placeholder of `graph` by the workflow it imports.
/// Problems go to `wf.diagnostics` (a placeholder whose import fails stays
/// in the graph); the imported files' references join `wf.file_refs` and
/// their stylesheets join `sheets`.
pub(super) fn splice_all(
    graph: &mut Graph,
    wf: &mut Workflow,
    options: &LoadOptions,
    chain: &mut Chain,
    sheets: &mut Vec<ScopedSheet>,
) {
    // One fast scan rules out almost every file.
    if !wf.source.contains("import") {
        return;
    }
    let placeholders: Vec<usize> = (0..graph.nodes.len())
        .filter(|&i| graph.nodes[i].attrs.contains("import"))
        .collect();
    if placeholders.is_empty() {
        return;
    }
    // A run has one goal: `{{ goal }}` in an imported file is the importer's.
    let inner_options = LoadOptions {
        inputs: options.inputs.clone(),
        goal: graph
            .attrs
            .text("goal")
            .map(std::borrow::Cow::into_owned)
            .or_else(|| options.goal.clone()),
    };
    let mut splices: Vec<Splice> = Vec::new();
    let mut taken: FxHashSet<NodeId> = FxHashSet::default();
    for i in placeholders {
        let placeholder = &graph.nodes[i];
        check_placeholder_attrs(placeholder, &mut wf.diagnostics);
        let Some(imported) = load(placeholder, wf, &inner_options, chain) else {
            continue;
        };
        match Splice::new(placeholder, &imported, graph, &taken) {
            Ok(splice) if splice.nodes.len() > chain.budget.imported_nodes => {
                wf.diagnostics.push(
                    Diagnostic::error(
                        IMPORT_TOO_LARGE,
                        format!(
                            "imports splice more than {MAX_IMPORTED_NODES} nodes into the workflow: {}",
                            chain.describe(&placeholder.id, &imported.written)
                        ),
                    )
                    .at(placeholder.attrs.get("import").map_or(placeholder.span, |a| a.value_span))
                    .on_node(&placeholder.id)
                    .with_hint("each import copies the nodes of its file, and of the files it imports: import each part once"),
                );
                chain.budget.imported_nodes = 0;
            }
            Ok(splice) => {
                chain.budget.imported_nodes -= splice.nodes.len();
                taken.extend(splice.nodes.iter().map(|n| n.id.clone()));
                wf.file_refs.extend(rescope_file_refs(
                    imported.file_refs,
                    placeholder,
                    &imported.written,
                ));
                sheets.extend(rescope_sheets(imported.sheets, placeholder, &splice));
                splices.push(splice);
            }
            Err(d) => wf.diagnostics.push(*d),
        }
    }
    if !splices.is_empty() {
        let spans: FxHashMap<NodeId, Span> = splices
            .iter()
            .filter_map(|s| {
                let node = graph.node(&s.placeholder)?;
                let at = node.attrs.get("import").map_or(node.span, |a| a.value_span);
                Some((s.placeholder.clone(), at))
            })
            .collect();
        if let Some(placeholder) = rebuild(graph, splices, &mut chain.budget.expansion_bytes) {
            let at = spans.get(&placeholder).copied().unwrap_or_default();
            wf.diagnostics.push(
                Diagnostic::error(
                    IMPORT_TOO_LARGE,
                    format!(
                        "joining the edges around the import `{placeholder}` makes more than {} of edges (every edge into it times every edge out of the imported start, and likewise at the exit)",
                        crate::limits::human_bytes(super::parser::MAX_EXPANSION_BYTES)
                    ),
                )
                .at(at)
                .on_node(&placeholder)
                .with_hint("lead into the import through one node, and out of it through one node"),
            );
        }
    }
}

/// Reports every attribute written on the placeholder that it may not
/// carry. Attributes it inherits from `node [...]` defaults are not its own
/// (they are written before it) and are ignored.
fn check_placeholder_attrs(placeholder: &Node, out: &mut Vec<Diagnostic>) {
    for attr in placeholder.attrs.iter() {
        let key = attr.key.as_str();
        // The placeholder is gone once spliced, so its Attractor spellings
        // are noted here rather than by the `attractor_spelling` rule.
        if let Some((.., weft)) = attrs::ATTRACTOR_SPELLINGS
            .iter()
            .find(|(scope, spec, _)| *scope == Scope::Node && *spec == key)
            && attr.key_span.start >= placeholder.span.start
        {
            out.push(
                super::attractor::spelling_note(key, weft)
                    .at(attr.key_span)
                    .on_node(&placeholder.id),
            );
        }
        if MODEL_KEYS.contains(&key)
            || PLACEHOLDER_KEYS.contains(&key)
            || attr.key_span.start < placeholder.span.start
        {
            continue;
        }
        out.push(
            Diagnostic::error(
                IMPORT_ATTRIBUTE,
                format!(
                    "`{key}` cannot be set on `{}`, which imports a workflow",
                    placeholder.id
                ),
            )
            .at(attr.key_span)
            .on_node(&placeholder.id)
            .with_hint(format!(
                "an import placeholder takes only {}, `label` and `class`; set `{key}` on the nodes of the imported file",
                MODEL_KEYS
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        );
    }
}

/// An imported workflow that loaded without errors.
struct Imported {
    graph: Graph,
    /// The import path as written, whose directory the file's own relative
    /// paths are rebased onto.
    written: String,
    file_refs: Vec<FileRef>,
    sheets: Vec<ScopedSheet>,
}

/// Reads, loads and validates the file a placeholder imports. `None` when it
/// cannot be spliced; the reason is in `wf.diagnostics`.
fn load(
    placeholder: &Node,
    wf: &mut Workflow,
    options: &LoadOptions,
    chain: &mut Chain,
) -> Option<Imported> {
    let attr = placeholder.attrs.get("import")?;
    let at = attr.value_span;
    let id = &*placeholder.id;
    let text = attr.value.as_text();
    let written = text.trim();
    let written = written
        .strip_prefix('@')
        .unwrap_or(written)
        .trim()
        .to_string();
    if written.is_empty() {
        wf.diagnostics.push(
            Diagnostic::error(
                IMPORT_NOT_FOUND,
                format!("`import` on `{id}` names no file"),
            )
            .at(at)
            .on_node(id)
            .with_hint(
                "write the workflow file's path, relative to this file: `import=\"review.fabro\"`",
            ),
        );
        return None;
    }
    // `links` holds the outermost file and one entry per import being
    // loaded: its length is the depth this import would open.
    if chain.links.len() > MAX_IMPORT_DEPTH {
        wf.diagnostics.push(
            Diagnostic::error(
                IMPORT_TOO_DEEP,
                format!(
                    "imports nest more than {MAX_IMPORT_DEPTH} levels deep: {}",
                    chain.describe(id, &written)
                ),
            )
            .at(at)
            .on_node(id)
            .with_hint(format!(
                "a workflow may import one that imports another, down to {MAX_IMPORT_DEPTH} levels; flatten the chain"
            )),
        );
        return None;
    }
    if chain.budget.imports == 0 {
        wf.diagnostics.push(
            Diagnostic::error(
                IMPORT_TOO_LARGE,
                format!(
                    "the workflow imports more than {MAX_IMPORTS} files (each import of a file counts): {}",
                    chain.describe(id, &written)
                ),
            )
            .at(at)
            .on_node(id)
            .with_hint("a file that imports another twice, which does the same, doubles the work at each level: import each part once"),
        );
        return None;
    }
    chain.budget.imports -= 1;
    let path = resolve_path(&wf.base_dir, &written);
    let mut file_ref = FileRef {
        node: Some(id.to_string()),
        key: "import".to_string(),
        written: written.clone(),
        path: path.clone(),
        span: at,
        error: None,
        hint: None,
        refused: false,
    };
    let bytes = match chain.read(&path, MAX_WORKFLOW_BYTES) {
        Ok(bytes) => bytes,
        Err(e) => {
            let rule = if e.is_confinement() {
                FILE_OUTSIDE_TREE
            } else {
                IMPORT_NOT_FOUND
            };
            wf.diagnostics.push(
                Diagnostic::error(
                    rule,
                    format!("`{written}` (import of `{id}`) cannot be read: {e}"),
                )
                .at(at)
                .on_node(id)
                .with_hint(e.hint(&path)),
            );
            file_ref.failed(&e);
            wf.file_refs.push(file_ref);
            return None;
        }
    };
    wf.file_refs.push(file_ref);
    let canonical = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
    if let Some(first) = chain.files.iter().position(|f| *f == canonical) {
        let cycle: Vec<String> = chain.files[first..]
            .iter()
            .chain(std::iter::once(&canonical))
            .map(|f| chain.display(f))
            .collect();
        wf.diagnostics.push(
            Diagnostic::error(
                IMPORT_CYCLE,
                format!("circular import: {}", cycle.join(" → ")),
            )
            .at(at)
            .on_node(id)
            .with_hint("a workflow cannot import itself, directly or through other files; remove one of these imports"),
        );
        return None;
    }
    let shown = chain.display(&canonical);
    let base_dir = path
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    chain.files.push(canonical);
    chain.links.push((shown.clone(), id.to_string()));
    let (mut inner, sheets) = (chain.assemble)(&shown, bytes, &base_dir, options, chain);
    chain.links.pop();
    chain.files.pop();
    // Checked as if loaded alone, before any stylesheet: those wait for the
    // outermost file, and no rule reads what they set.
    if let Some(graph) = &inner.graph {
        rules::check(
            graph,
            &inner.source,
            &inner.file_refs,
            &mut inner.diagnostics,
        );
    }
    let errors: Vec<Diagnostic> = inner
        .diagnostics
        .into_iter()
        .filter(Diagnostic::is_error)
        .map(|d| relay(d, &shown, id, at))
        .collect();
    let graph = match inner.graph {
        Some(graph) if errors.is_empty() => graph,
        _ => {
            wf.diagnostics.extend(errors);
            return None;
        }
    };
    for attr in graph.attrs.iter() {
        let key = attr.key.as_str();
        if attrs::declared_type(Scope::Graph, key).is_some()
            && !GRAPH_KEYS_DROPPED_QUIETLY.contains(&key)
        {
            wf.diagnostics.push(
                Diagnostic::warning(
                    IMPORT_GRAPH_ATTRIBUTE,
                    format!("graph attribute `{key}` of `{shown}` has no effect when it is imported"),
                )
                .at(at)
                .on_node(id)
                .with_hint(format!(
                    "an imported workflow's graph attributes do not carry over: set `{key}` on the importing graph, or on the nodes of `{shown}`"
                )),
            );
        }
    }
    Some(Imported {
        graph,
        written,
        file_refs: inner.file_refs,
        sheets,
    })
}

/// An imported file's diagnostic as the importer reports it: at the
/// placeholder's `import`, with the position in the imported file in front
/// of the message. The rule id is kept, so tools still know what is wrong.
fn relay(d: Diagnostic, shown: &str, placeholder: &str, at: Span) -> Diagnostic {
    let place = match d.span {
        Some(s) => format!("{shown}:{}:{}", s.line, s.column),
        None => shown.to_string(),
    };
    Diagnostic {
        message: format!("in imported file {place}: {}", d.message),
        span: Some(at),
        node_id: Some(placeholder.to_string()),
        edge: None,
        ..d
    }
}

/// One placeholder's replacement, ready to go into the graph.
struct Splice {
    /// The placeholder's id.
    placeholder: NodeId,
    /// The imported nodes, renamed; start and exit left out.
    nodes: Vec<Node>,
    /// The imported edges, renamed, those at the start and exit ending at
    /// `start` and `exit`.
    edges: Vec<Edge>,
    /// Stand-ins for the imported start and exit while edges are rewired.
    /// They contain a space, which no node id can.
    start: NodeId,
    exit: NodeId,
    /// The one node the imported start leads to, when there is one: a
    /// retry target naming the placeholder means it.
    entry: Option<NodeId>,
}

impl Splice {
    /// Renames the imported graph's nodes and edges under the placeholder.
    /// Fails when a new id is taken already: by a node of the importer, or
    /// by another placeholder's splice (`taken`).
    fn new(
        placeholder: &Node,
        imported: &Imported,
        graph: &Graph,
        taken: &FxHashSet<NodeId>,
    ) -> Result<Splice, Box<Diagnostic>> {
        let inner = &imported.graph;
        let at = placeholder
            .attrs
            .get("import")
            .map_or(placeholder.span, |a| a.value_span);
        // Decision: a workflow with several exits (valid on its own, see
        // terminal_node) cannot be imported. Spliced in, every exit would
        // lead to the placeholder's edges alike, and which exit the part
        // reached (a success exit, a failure exit) would be lost.
        let exits = inner.exit_nodes();
        if exits.len() > 1 {
            let names: Vec<String> = exits.iter().map(|n| format!("`{}`", n.id)).collect();
            return Err(Box::new(
                Diagnostic::error(
                    IMPORT_NOT_FOUND,
                    format!(
                        "`{}` has {} exit nodes ({}); an imported workflow needs exactly one",
                        imported.written,
                        exits.len(),
                        names.join(", ")
                    ),
                )
                .at(at)
                .on_node(&placeholder.id)
                .with_hint(
                    "give the imported workflow one exit, and route on its outcome with conditions on the placeholder's edges",
                ),
            ));
        }
        // A valid workflow has both; validation ran before this.
        let (Some(inner_start), Some(inner_exit)) = (inner.start(), inner.exit()) else {
            return Err(Box::new(
                Diagnostic::error(
                    IMPORT_NOT_FOUND,
                    "the imported workflow needs one start and one exit node",
                )
                .at(at)
                .on_node(&placeholder.id),
            ));
        };
        let prefix = format!("{}.", placeholder.id);
        let span = placeholder.span;
        let rebase_dir = Path::new(&imported.written)
            .parent()
            .unwrap_or_else(|| Path::new(""));
        let rename = |id: &str| NodeId::from(format!("{prefix}{id}"));
        let start = NodeId::from(format!("{} start", placeholder.id));
        let exit = NodeId::from(format!("{} exit", placeholder.id));
        let end = |id: &NodeId| {
            if *id == inner_start.id {
                start.clone()
            } else if *id == inner_exit.id {
                exit.clone()
            } else {
                rename(id)
            }
        };
        let passed_down: Vec<&Attr> = MODEL_KEYS
            .iter()
            .filter_map(|k| placeholder.attrs.get(k))
            .collect();
        let classes = placeholder.classes();
        let mut nodes = Vec::with_capacity(inner.nodes.len().saturating_sub(2));
        for node in &inner.nodes {
            if node.id == inner_start.id || node.id == inner_exit.id {
                continue;
            }
            let id = rename(&node.id);
            if graph.node(&id).is_some() || taken.contains(&id) {
                return Err(Box::new(
                    Diagnostic::error(
                        IMPORT_CLASH,
                        format!(
                            "importing `{}` into `{}` makes a node `{id}`, which exists already",
                            imported.written, placeholder.id
                        ),
                    )
                    .at(at)
                    .on_node(&placeholder.id)
                    .with_hint(format!("rename `{}`, or the node `{id}`", placeholder.id)),
                ));
            }
            let mut attrs = Attrs::new();
            for attr in node.attrs.iter() {
                let value =
                    rewrite(attr, &prefix, rebase_dir).unwrap_or_else(|| attr.value.clone());
                attrs.set(Attr {
                    key: attr.key.clone(),
                    value,
                    key_span: span,
                    value_span: span,
                });
            }
            if node.handler.uses_llm() {
                for attr in &passed_down {
                    if !attrs.contains(&attr.key) {
                        attrs.set((*attr).clone());
                    }
                }
            }
            let mut subgraph_classes = node.subgraph_classes.clone();
            for class in &classes {
                if !subgraph_classes.contains(class) {
                    subgraph_classes.push(class.clone());
                }
            }
            nodes.push(Node {
                id,
                span,
                declared: node.declared,
                attrs,
                subgraph_classes,
                handler: node.handler,
            });
        }
        let edges: Vec<Edge> = inner
            .edges
            .iter()
            .map(|edge| Edge {
                from: end(&edge.from),
                to: end(&edge.to),
                span,
                from_span: span,
                to_span: span,
                attrs: respan(&edge.attrs, span),
            })
            .collect();
        let mut entries = edges
            .iter()
            .filter(|e| e.from == start && e.to != exit)
            .map(|e| e.to.clone());
        let entry = match (entries.next(), entries.next()) {
            (Some(only), None) => Some(only),
            _ => None,
        };
        Ok(Splice {
            placeholder: placeholder.id.clone(),
            nodes,
            edges,
            start,
            exit,
            entry,
        })
    }
}

/// The new value of an imported node's attribute, when it must change:
/// node references get the prefix, and relative file paths are rebased from
/// the imported file's directory onto the importer's.
fn rewrite(attr: &Attr, prefix: &str, rebase_dir: &Path) -> Option<Value> {
    let key = attr.key.as_str();
    let text = attr.value.as_str()?;
    if NODE_REFS.contains(&key) && !text.trim().is_empty() {
        return Some(Value::Str(format!("{prefix}{}", text.trim()).into()));
    }
    if !workflow::PATHS.contains(&key) {
        return None;
    }
    let trimmed = text.trim();
    let (at, path) = match trimmed.strip_prefix('@') {
        Some(rest) => ("@", rest.trim()),
        // `output_schema="routing"` names the built-in schema.
        None if key == "output_schema" => return None,
        None => ("", trimmed),
    };
    if path.is_empty()
        || path.starts_with("~/")
        || Path::new(path).is_absolute()
        || rebase_dir.as_os_str().is_empty()
    {
        return None;
    }
    Some(Value::Str(
        format!("{at}{}", rebase_dir.join(path).display()).into(),
    ))
}

/// A copy of `attrs` placed at `span`.
fn respan(attrs: &Attrs, span: Span) -> Attrs {
    let mut out = Attrs::new();
    for attr in attrs.iter() {
        out.set(Attr {
            key_span: span,
            value_span: span,
            ..attr.clone()
        });
    }
    out
}

/// The imported file's references, as the importer's: under the renamed
/// nodes, at the placeholder, written relative to the importer (the
/// resolved `path` stays as it was).
fn rescope_file_refs(
    refs: Vec<FileRef>,
    placeholder: &Node,
    written: &str,
) -> impl Iterator<Item = FileRef> {
    let prefix = format!("{}.", placeholder.id);
    let span = placeholder.span;
    let dir = Path::new(written)
        .parent()
        .unwrap_or_else(|| Path::new(""))
        .to_path_buf();
    refs.into_iter().map(move |r| FileRef {
        node: r.node.map(|n| format!("{prefix}{n}")),
        span,
        written: if r.written.starts_with("~/") || Path::new(&r.written).is_absolute() {
            r.written
        } else {
            dir.join(&r.written).display().to_string()
        },
        ..r
    })
}

/// The imported file's stylesheets, as the importer applies them: to the
/// renamed nodes, matching `#id` without the prefix, positioned at the
/// placeholder. A sheet for the whole imported graph becomes one for the
/// nodes spliced from it.
fn rescope_sheets(
    sheets: Vec<ScopedSheet>,
    placeholder: &Node,
    splice: &Splice,
) -> impl Iterator<Item = ScopedSheet> {
    let prefix = format!("{}.", placeholder.id);
    let span = placeholder.span;
    let all: Vec<NodeId> = splice.nodes.iter().map(|n| n.id.clone()).collect();
    sheets.into_iter().map(move |sheet| ScopedSheet {
        attr: Attr {
            key_span: span,
            value_span: span,
            ..sheet.attr
        },
        prefix: format!("{prefix}{}", sheet.prefix),
        nodes: Some(match sheet.nodes {
            Some(ids) => ids
                .iter()
                .map(|id| NodeId::from(format!("{prefix}{id}")))
                .collect(),
            None => all.clone(),
        }),
    })
}

/// An edge while placeholders are contracted, and whether it was written
/// in the importing file (its positions are then the ones to keep).
#[derive(Clone)]
struct Link {
    edge: Edge,
    here: bool,
}

/// Puts the splices into the graph: each placeholder's nodes in its place,
/// the imported edges after the placeholder's first edge, then every path
/// through a stand-in start or exit joined into one edge.
///
/// Joined edges are charged to `budget` (bytes, as the parser charges
/// copies); past it, no more are made, and the placeholder whose stand-in
/// was being contracted is returned so that the caller can report it.
fn rebuild(graph: &mut Graph, splices: Vec<Splice>, budget: &mut u64) -> Option<NodeId> {
    let old = std::mem::take(graph);
    let mut new = Graph::new(old.name, old.span);
    new.attrs = old.attrs;
    let by_id: FxHashMap<NodeId, usize> = splices
        .iter()
        .enumerate()
        .map(|(k, s)| (s.placeholder.clone(), k))
        .collect();
    let mut parts: Vec<(Vec<Node>, Vec<Edge>)> = Vec::with_capacity(splices.len());
    let mut stand_ins: Vec<(NodeId, NodeId)> = Vec::with_capacity(splices.len());
    let mut entries: FxHashMap<NodeId, NodeId> = FxHashMap::default();
    for s in splices {
        if let Some(entry) = s.entry {
            entries.insert(s.placeholder.clone(), entry);
        }
        stand_ins.push((s.start, s.exit));
        parts.push((s.nodes, s.edges));
    }
    for node in old.nodes {
        match by_id.get(&node.id) {
            Some(&k) => {
                for spliced in std::mem::take(&mut parts[k].0) {
                    new.add_node(spliced);
                }
            }
            None => {
                new.add_node(node);
            }
        }
    }
    let mut links: Vec<Link> = Vec::with_capacity(old.edges.len());
    let mut placed = vec![false; parts.len()];
    for mut edge in old.edges {
        let from = by_id.get(&edge.from).copied();
        let to = by_id.get(&edge.to).copied();
        if let Some(k) = from {
            edge.from = stand_ins[k].1.clone();
        }
        if let Some(k) = to {
            edge.to = stand_ins[k].0.clone();
        }
        links.push(Link { edge, here: true });
        for k in [from, to].into_iter().flatten() {
            if !std::mem::replace(&mut placed[k], true) {
                links.extend(
                    std::mem::take(&mut parts[k].1)
                        .into_iter()
                        .map(|edge| Link { edge, here: false }),
                );
            }
        }
    }
    for (k, part) in parts.iter_mut().enumerate() {
        if !placed[k] {
            links.extend(
                std::mem::take(&mut part.1)
                    .into_iter()
                    .map(|edge| Link { edge, here: false }),
            );
        }
    }
    // Only the links at a stand-in change. They are contracted apart from
    // the others (which may be hundreds of thousands), each keeping the
    // position of the written link it descends from, then put back in
    // place: the same order as contracting the whole list, at a cost that
    // does not grow with the graph.
    let stand_in_ids: FxHashSet<&NodeId> = stand_ins.iter().flat_map(|(s, e)| [s, e]).collect();
    let (mut around, mut rest): (Vec<Placed>, Vec<Placed>) = links
        .into_iter()
        .enumerate()
        .map(|(i, link)| (vec![u32::try_from(i).unwrap_or(u32::MAX)], link))
        .partition(|(_, l)| {
            stand_in_ids.contains(&l.edge.from) || stand_in_ids.contains(&l.edge.to)
        });
    let mut over = None;
    for (start, exit) in &stand_ins {
        for node in [start, exit] {
            if !contract(&mut around, &mut rest, node, &stand_in_ids, budget) && over.is_none() {
                over = Some(NodeId::from(
                    node.rsplit_once(' ').map_or(node.as_ref(), |(id, _)| id),
                ));
            }
        }
    }
    rest.append(&mut around);
    rest.sort_by(|a, b| a.0.cmp(&b.0));
    new.edges = rest
        .into_iter()
        .map(|(_, link)| {
            let mut edge = link.edge;
            // Share the nodes' ids, as the parser does.
            if let Some(i) = new.node_index(&edge.from) {
                edge.from = new.nodes[i].id.clone();
            }
            if let Some(i) = new.node_index(&edge.to) {
                edge.to = new.nodes[i].id.clone();
            }
            edge
        })
        .collect();
    retarget_retries(&mut new, &entries);
    *graph = new;
    over
}

/// A link and its place in the list: a written link's position, and for a
/// join its in-link's place followed by the out-link's rank. Sorting by
/// place gives the order that contracting the whole list in place would.
type Placed = (Vec<u32>, Link);

/// Removes the stand-in `node`, joining each edge into it with each edge
/// out of it; the joins take the place of the edge into it, and go to
/// `done` when they touch no stand-in. A loop on it goes nowhere and is
/// dropped. Each join is charged to `budget`; `false` when it ran out (the
/// joins past it are not made).
fn contract(
    links: &mut Vec<Placed>,
    done: &mut Vec<Placed>,
    node: &NodeId,
    stand_ins: &FxHashSet<&NodeId>,
    budget: &mut u64,
) -> bool {
    let outs: Vec<Link> = links
        .iter()
        .filter(|(_, l)| l.edge.from == *node && l.edge.to != *node)
        .map(|(_, l)| l.clone())
        .collect();
    let mut within = true;
    for (at, link) in std::mem::take(links) {
        if link.edge.from == *node {
            continue;
        }
        if link.edge.to != *node {
            links.push((at, link));
            continue;
        }
        for (rank, out) in outs.iter().enumerate() {
            let joined = join(&link, out);
            let mut place = at.clone();
            place.push(u32::try_from(rank).unwrap_or(u32::MAX));
            let cost = (std::mem::size_of::<Edge>() as u64) + joined.edge.attrs.weight();
            match budget.checked_sub(cost) {
                Some(left) if within => {
                    *budget = left;
                    let settled = !stand_ins.contains(&joined.edge.from)
                        && !stand_ins.contains(&joined.edge.to);
                    if settled { &mut *done } else { &mut *links }.push((place, joined));
                }
                _ => within = false,
            }
        }
    }
    within
}

/// The edge for the path `first` then `then`: the first edge's attributes,
/// the second's filling gaps, both conditions joined with `&&`.
fn join(first: &Link, then: &Link) -> Link {
    let mut attrs = first.edge.attrs.clone();
    let written = if first.here || !then.here {
        &first.edge
    } else {
        &then.edge
    };
    for attr in then.edge.attrs.iter() {
        if attr.key != "condition" {
            if !attrs.contains(&attr.key) {
                attrs.set(attr.clone());
            }
            continue;
        }
        match (first.edge.condition(), then.edge.condition()) {
            (Some(a), Some(b)) => {
                let (key_span, value_span) = written
                    .attrs
                    .get("condition")
                    .map_or((written.span, written.span), |c| (c.key_span, c.value_span));
                attrs.set(Attr {
                    key: Key::new("condition"),
                    value: Value::Str(format!("({}) && ({})", a.trim(), b.trim()).into()),
                    key_span,
                    value_span,
                });
            }
            (None, Some(_)) => attrs.set(attr.clone()),
            (_, None) => {}
        }
    }
    Link {
        edge: Edge {
            from: first.edge.from.clone(),
            to: then.edge.to.clone(),
            span: written.span,
            from_span: first.edge.from_span,
            to_span: then.edge.to_span,
            attrs,
        },
        here: first.here || then.here,
    }
}

/// A retry target naming a placeholder now names the node its workflow
/// starts with (when it starts with one node).
fn retarget_retries(graph: &mut Graph, entries: &FxHashMap<NodeId, NodeId>) {
    if entries.is_empty() {
        return;
    }
    let retarget = |attrs: &mut Attrs| {
        for attr in attrs.iter_mut() {
            if !NODE_REFS.contains(&attr.key.as_str()) {
                continue;
            }
            let Some(entry) = attr.value.as_str().and_then(|t| entries.get(t.trim())) else {
                continue;
            };
            attr.value = Value::Str(entry.clone());
        }
    };
    retarget(&mut graph.attrs);
    for node in &mut graph.nodes {
        retarget(&mut node.attrs);
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use crate::lang::diagnostic::Diagnostic;
    use crate::lang::graph::Graph;
    use crate::lang::workflow::{LoadOptions, Workflow};
    use crate::lang::{parser, printer};

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/imports")
            .join(name)
    }

    fn load_with(name: &str, options: &LoadOptions) -> Workflow {
        Workflow::load(&fixture(name), options).expect("the fixture can be read")
    }

    fn load(name: &str) -> Workflow {
        load_with(name, &LoadOptions::default())
    }

    fn graph(wf: &Workflow) -> &Graph {
        wf.graph.as_ref().expect("the fixture parses")
    }

    fn errors(wf: &Workflow) -> Vec<&Diagnostic> {
        wf.diagnostics.iter().filter(|d| d.is_error()).collect()
    }

    fn of_rule<'a>(wf: &'a Workflow, rule: &str) -> Vec<&'a Diagnostic> {
        wf.diagnostics.iter().filter(|d| d.rule == rule).collect()
    }

    fn node_ids(graph: &Graph) -> Vec<&str> {
        graph.nodes.iter().map(|n| &*n.id).collect()
    }

    fn edge_list(graph: &Graph) -> Vec<(&str, &str)> {
        graph.edges.iter().map(|e| (&*e.from, &*e.to)).collect()
    }

    /// The text of `key` on the edge `from -> to`.
    fn edge_text(graph: &Graph, from: &str, to: &str, key: &str) -> Option<String> {
        graph
            .edges
            .iter()
            .find(|e| &*e.from == from && &*e.to == to)
            .and_then(|e| e.attrs.text(key))
            .map(std::borrow::Cow::into_owned)
    }

    fn node_text(graph: &Graph, id: &str, key: &str) -> Option<String> {
        graph
            .node(id)
            .and_then(|n| n.attrs.text(key))
            .map(std::borrow::Cow::into_owned)
    }

    fn at(d: &Diagnostic) -> Option<(u32, u32)> {
        d.span.map(|s| (s.line, s.column))
    }

    #[test]
    fn every_import_rule_is_documented_in_the_language_guide() {
        let guide =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/language.md"))
                .expect("docs/language.md exists");
        for id in [
            super::IMPORT_NOT_FOUND,
            super::IMPORT_CYCLE,
            super::IMPORT_ATTRIBUTE,
            super::IMPORT_CLASH,
            super::IMPORT_GRAPH_ATTRIBUTE,
            super::IMPORT_TOO_DEEP,
            super::IMPORT_TOO_LARGE,
            crate::lang::files::FILE_OUTSIDE_TREE,
            crate::lang::parser::NESTING_TOO_DEEP,
            crate::lang::parser::EXPANSION_TOO_LARGE,
        ] {
            assert!(
                guide.contains(&format!("| `{id}` |")),
                "docs/language.md has no row for rule `{id}`"
            );
        }
    }

    #[test]
    fn an_import_splices_its_nodes_under_the_placeholder_and_rewires_its_edges() {
        let wf = load("main.fabro");
        assert!(wf.is_valid(), "{:?}", wf.diagnostics);
        let g = graph(&wf);
        assert_eq!(
            node_ids(g),
            ["start", "exit", "plan", "review.check", "review.fix"],
            "the imported start and exit and the placeholder are gone; the spliced nodes take its place"
        );
        assert_eq!(
            edge_list(g),
            [
                ("start", "plan"),
                ("plan", "review.check"),
                ("review.check", "exit"),
                ("review.check", "review.fix"),
                ("review.fix", "review.check"),
            ]
        );
        assert_eq!(
            edge_text(g, "review.check", "exit", "condition").as_deref(),
            Some("outcome=success"),
            "the imported edge's attributes come first on the way out"
        );
        assert_eq!(
            edge_text(g, "review.check", "exit", "weight").as_deref(),
            Some("2"),
            "the importer's edge fills the gaps"
        );
        assert_eq!(
            node_text(g, "review.fix", "retry_target").as_deref(),
            Some("review.check"),
            "references between imported nodes follow the rename"
        );
        assert_eq!(
            node_text(g, "review.check", "prompt").as_deref(),
            Some("Review the change for: Ship the feature"),
            "`{{ goal }}` in the imported file is the importer's goal"
        );
        let placeholder_line = 8;
        assert!(
            g.nodes
                .iter()
                .filter(|n| n.id.starts_with("review."))
                .all(|n| n.span.line == placeholder_line),
            "spliced nodes point at the placeholder, not into another file"
        );
    }

    #[test]
    fn a_spliced_graph_prints_dotted_ids_quoted_and_reads_back() {
        let wf = load("main.fabro");
        let printed = printer::to_dot(graph(&wf));
        assert!(
            printed.contains("\"review.check\" -> exit"),
            "Graphviz needs dotted ids quoted:\n{printed}"
        );
        let again = parser::parse(&printed)
            .expect("printed output parses")
            .graph;
        assert_eq!(printer::to_dot(&again), printed);
    }

    #[test]
    fn conditions_on_both_sides_of_the_placeholder_are_joined() {
        let wf = load("conditions.fabro");
        assert!(wf.is_valid(), "{:?}", wf.diagnostics);
        let g = graph(&wf);
        assert_eq!(
            edge_text(g, "review.check", "exit", "condition").as_deref(),
            Some("(outcome=success) && (context.ship=true)")
        );
        assert_eq!(
            edge_text(g, "review.check", "plan", "condition").as_deref(),
            Some("outcome=success"),
            "an unconditional edge out of the placeholder keeps the imported condition"
        );
        assert_eq!(
            edge_text(g, "review.check", "plan", "label").as_deref(),
            Some("approved"),
            "on the way out the imported edge's label wins"
        );
        assert_eq!(
            g.attrs.text("retry_target").as_deref(),
            Some("review.check"),
            "a retry target naming the placeholder means the node its workflow starts with"
        );
    }

    #[test]
    fn an_imported_start_to_exit_edge_joins_the_edges_around_the_placeholder() {
        let wf = load("skip.fabro");
        assert!(errors(&wf).is_empty(), "{:?}", wf.diagnostics);
        let g = graph(&wf);
        assert_eq!(
            edge_list(g),
            [
                ("start", "plan"),
                ("plan", "done"),
                ("plan", "step.work"),
                ("step.work", "done"),
                ("done", "exit"),
            ]
        );
        assert_eq!(
            edge_text(g, "plan", "done", "condition").as_deref(),
            Some("context.skip=true")
        );
        let dropped = of_rule(&wf, super::IMPORT_GRAPH_ATTRIBUTE);
        assert_eq!(dropped.len(), 1, "{:?}", wf.diagnostics);
        assert!(!dropped[0].is_error());
        assert!(
            dropped[0].message.contains("default_max_retries"),
            "{dropped:?}"
        );
    }

    #[test]
    fn imports_nest_and_keep_paths_relative_to_the_file_that_wrote_them() {
        let wf = load("nested/outer.fabro");
        assert!(wf.is_valid(), "{:?}", wf.diagnostics);
        let g = graph(&wf);
        assert_eq!(
            node_ids(g),
            ["start", "exit", "mid.prepare", "mid.leaf.build"]
        );
        assert_eq!(
            edge_list(g),
            [
                ("start", "mid.prepare"),
                ("mid.prepare", "mid.leaf.build"),
                ("mid.leaf.build", "exit"),
            ]
        );
        assert_eq!(
            node_text(g, "mid.leaf.build", "output_schema").as_deref(),
            Some("@parts/leaf.schema.json"),
            "rebased onto the outer file's directory, where the engine resolves it"
        );
    }

    #[test]
    fn a_placeholders_attractor_model_spellings_reach_imported_llm_nodes() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(
            dir.path().join("part.dot"),
            "digraph P { start [shape=Mdiamond]; exit [shape=Msquare]\n plain [prompt=\"p\"]\n own [prompt=\"o\", llm_model=own]\n start -> plain -> own -> exit }",
        )
        .expect("write part");
        let main = dir.path().join("main.dot");
        std::fs::write(
            &main,
            "digraph M { start [shape=Mdiamond]; exit [shape=Msquare]\n work [import=\"part.dot\", llm_model=m, llm_provider=p]\n start -> work -> exit }",
        )
        .expect("write main");
        let wf = Workflow::load(&main, &LoadOptions::default()).expect("load");
        assert!(wf.is_valid(), "{:?}", wf.diagnostics);
        let g = graph(&wf);
        assert_eq!(node_text(g, "work.plain", "model").as_deref(), Some("m"));
        assert_eq!(node_text(g, "work.plain", "provider").as_deref(), Some("p"));
        assert_eq!(node_text(g, "work.own", "model").as_deref(), Some("own"));
        let notes: Vec<_> = wf
            .diagnostics
            .iter()
            .map(|d| (d.rule, d.span.map(|s| (s.line, s.column))))
            .collect();
        assert_eq!(
            notes,
            [
                ("attractor_spelling", Some((2, 27))),
                ("attractor_spelling", Some((2, 40)))
            ],
            "the placeholder's own spellings; the imported file's are its own"
        );
    }

    #[test]
    fn the_placeholders_model_reaches_imported_llm_nodes_that_set_none() {
        let wf = load("models.fabro");
        assert!(wf.is_valid(), "{:?}", wf.diagnostics);
        let g = graph(&wf);
        let text = |id: &str, key: &str| node_text(g, id, key);
        assert_eq!(
            text("work.plain", "model").as_deref(),
            Some("placeholder-model"),
            "the placeholder beats both stylesheets"
        );
        assert_eq!(
            text("work.plain", "reasoning_effort").as_deref(),
            Some("high")
        );
        assert_eq!(
            text("work.plain", "speed").as_deref(),
            Some("fast"),
            "the imported file's stylesheet still styles its nodes"
        );
        assert_eq!(
            text("work.plain", "provider").as_deref(),
            Some("anthropic"),
            "the importer's stylesheet fills what is left"
        );
        assert_eq!(
            text("work.own", "model").as_deref(),
            Some("own-model"),
            "a node's own attribute wins"
        );
        assert_eq!(
            text("work.own", "reasoning_effort").as_deref(),
            Some("high")
        );
        assert_eq!(
            text("work.styled", "backend").as_deref(),
            Some("cli"),
            "`#id` in the imported stylesheet matches the id in that file"
        );
        assert_eq!(
            text("work.shell", "model"),
            None,
            "a command node calls no model"
        );
        assert_eq!(text("work.shell", "reasoning_effort"), None);
    }

    #[test]
    fn other_attributes_on_the_placeholder_are_errors() {
        let wf = load("forbidden_attribute.fabro");
        let d = of_rule(&wf, super::IMPORT_ATTRIBUTE);
        assert_eq!(
            d.len(),
            1,
            "`model` is allowed and `max_retries` comes from `node [...]`: {:?}",
            wf.diagnostics
        );
        assert!(d[0].is_error());
        assert!(d[0].message.contains("`timeout`"), "{d:?}");
        assert_eq!(at(d[0]), Some((6, 47)));
        assert_eq!(d[0].node_id.as_deref(), Some("review"));
        assert!(
            d[0].hint.as_deref().is_some_and(|h| h.contains("`model`")),
            "{d:?}"
        );
        assert!(
            graph(&wf).node("review.check").is_some(),
            "the import still splices"
        );
    }

    #[test]
    fn a_missing_import_is_an_error_at_the_path() {
        let wf = load("missing.fabro");
        assert_eq!(errors(&wf).len(), 1, "{:?}", wf.diagnostics);
        let d = of_rule(&wf, super::IMPORT_NOT_FOUND);
        assert_eq!(d.len(), 1, "{:?}", wf.diagnostics);
        assert_eq!(
            d[0].message,
            "`no_such_file.fabro` (import of `review`) cannot be read: no such file"
        );
        assert_eq!(at(d[0]), Some((5, 20)));
        assert!(
            d[0].hint
                .as_deref()
                .is_some_and(|h| h.contains("no_such_file.fabro")),
            "{d:?}"
        );
        assert!(
            wf.diagnostics
                .iter()
                .all(|d| d.rule != "prompt_on_llm_nodes"),
            "the placeholder left behind draws no warning of its own: {:?}",
            wf.diagnostics
        );
    }

    #[test]
    fn a_workflow_with_several_exits_is_refused_as_an_import_at_the_path() {
        let wf = load("two_exits.fabro");
        let e = errors(&wf);
        assert_eq!(e.len(), 1, "{:?}", wf.diagnostics);
        assert_eq!(e[0].rule, super::IMPORT_NOT_FOUND);
        assert_eq!(
            e[0].message,
            "`two_exits_part.fabro` has 2 exit nodes (`done`, `failed`); an imported workflow needs exactly one"
        );
        assert_eq!(at(e[0]), Some((5, 19)));
        assert_eq!(e[0].node_id.as_deref(), Some("check"));
        assert!(graph(&wf).node("check.test").is_none(), "not spliced");
    }

    #[test]
    fn a_circular_import_names_the_cycle() {
        let wf = load("cycle_a.fabro");
        let d = of_rule(&wf, super::IMPORT_CYCLE);
        assert_eq!(d.len(), 1, "{:?}", wf.diagnostics);
        assert_eq!(
            d[0].message,
            "in imported file cycle_b.fabro:4:15: circular import: cycle_a.fabro → cycle_b.fabro → cycle_a.fabro"
        );
        assert_eq!(at(d[0]), Some((4, 15)), "at the import in this file");
    }

    #[test]
    fn a_file_importing_itself_is_a_cycle() {
        let wf = load("self_import.fabro");
        let d = of_rule(&wf, super::IMPORT_CYCLE);
        assert_eq!(d.len(), 1, "{:?}", wf.diagnostics);
        assert_eq!(
            d[0].message,
            "circular import: self_import.fabro → self_import.fabro"
        );
    }

    #[test]
    fn an_error_in_the_imported_file_is_reported_at_the_placeholder() {
        let wf = load("broken.fabro");
        let e = errors(&wf);
        assert_eq!(e.len(), 1, "{:?}", wf.diagnostics);
        assert_eq!(e[0].rule, "command_requires_script", "the rule id is kept");
        assert!(
            e[0].message
                .starts_with("in imported file broken_part.fabro:4:5: "),
            "{e:?}"
        );
        assert_eq!(at(e[0]), Some((4, 18)));
        assert_eq!(e[0].node_id.as_deref(), Some("part"));
        assert!(
            graph(&wf).node("part.build").is_none(),
            "a broken import is not spliced"
        );
    }

    #[test]
    fn inputs_render_inside_the_imported_file() {
        let options = LoadOptions {
            inputs: [
                ("test_command".to_string(), "cargo test".to_string()),
                ("lint".to_string(), "yes".to_string()),
            ]
            .into(),
            goal: None,
        };
        let wf = load_with("inputs.fabro", &options);
        assert!(wf.is_valid(), "{:?}", wf.diagnostics);
        let g = graph(&wf);
        assert_eq!(
            node_text(g, "check.test", "script").as_deref(),
            Some("cargo test")
        );
        assert!(
            g.node("check.lint").is_some(),
            "inputs shape the imported file's structure too"
        );
        let missing = load("inputs.fabro");
        let d = of_rule(&missing, "template");
        assert_eq!(d.len(), 1, "{:?}", missing.diagnostics);
        assert!(
            d[0].message
                .starts_with("in imported file inputs_part.fabro:"),
            "{d:?}"
        );
    }

    /// Writes `files` (name, text) into a new temp dir.
    fn tree(files: &[(String, String)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).expect("write");
        }
        dir
    }

    /// A workflow whose nodes `ids` each import `target`, in a row.
    fn importing(ids: &[String], target: &str) -> String {
        let mut text =
            String::from("digraph C {\n start [shape=Mdiamond]\n exit [shape=Msquare]\n");
        for id in ids {
            text.push_str(&format!(" {id} [import=\"{target}\"]\n"));
        }
        text.push_str(&format!(" start -> {} -> exit\n}}\n", ids.join(" -> ")));
        text
    }

    const LEAF: &str = "digraph L {\n start [shape=Mdiamond]\n exit [shape=Msquare]\n work [shape=parallelogram, script=\"true\", on_failure=\"exit\"]\n start -> work -> exit\n}\n";

    #[test]
    fn a_700_file_import_chain_stops_at_the_depth_cap_on_a_small_stack() {
        let files: Vec<(String, String)> = (0..700)
            .map(|i| {
                let text = if i < 699 {
                    importing(&["a".to_string()], &format!("c{}.fabro", i + 1))
                } else {
                    LEAF.to_string()
                };
                (format!("c{i}.fabro"), text)
            })
            .collect();
        let dir = tree(&files);
        let path = dir.path().join("c0.fabro");
        let wf = crate::lang::parser::tests::on_small_stack(move || {
            Workflow::load(&path, &LoadOptions::default()).expect("loads")
        });
        let d = of_rule(&wf, super::IMPORT_TOO_DEEP);
        assert_eq!(d.len(), 1, "{:?}", wf.diagnostics);
        assert!(
            d[0].message.contains(
                "imports nest more than 16 levels deep: c0.fabro (`a`) → c1.fabro (`a`) → "
            ),
            "the chain is named: {}",
            d[0].message
        );
        assert!(
            d[0].message.ends_with("c16.fabro (`a`) → c17.fabro"),
            "{}",
            d[0].message
        );
        assert_eq!(at(d[0]), Some((4, 12)), "at the first import");
    }

    #[test]
    fn sixteen_levels_of_imports_load() {
        let files: Vec<(String, String)> = (0..=16)
            .map(|i| {
                let text = if i < 16 {
                    importing(&["a".to_string()], &format!("c{}.fabro", i + 1))
                } else {
                    LEAF.to_string()
                };
                (format!("c{i}.fabro"), text)
            })
            .collect();
        let dir = tree(&files);
        let wf =
            Workflow::load(&dir.path().join("c0.fabro"), &LoadOptions::default()).expect("loads");
        assert!(wf.is_valid(), "{:?}", wf.diagnostics);
        assert!(
            graph(&wf)
                .node(&format!("{}work", "a.".repeat(16)))
                .is_some()
        );
    }

    #[test]
    fn a_file_importing_the_next_twice_stops_at_the_import_cap() {
        // 22 files of 150 bytes, each importing the next twice: 4 million
        // loads uncapped.
        let files: Vec<(String, String)> = (0..22)
            .map(|i| {
                let text = if i < 21 {
                    importing(
                        &["a".to_string(), "b".to_string()],
                        &format!("b{}.fabro", i + 1),
                    )
                } else {
                    LEAF.to_string()
                };
                (format!("b{i}.fabro"), text)
            })
            .collect();
        let dir = tree(&files);
        let wf =
            Workflow::load(&dir.path().join("b0.fabro"), &LoadOptions::default()).expect("loads");
        let d = of_rule(&wf, super::IMPORT_TOO_LARGE);
        assert!(!d.is_empty(), "{:?}", wf.diagnostics);
        assert!(
            d[0].message.contains("imports more than 256 files")
                && d[0].message.contains("b0.fabro (`a`) → b1.fabro"),
            "{}",
            d[0].message
        );
    }

    #[test]
    fn imports_splicing_more_than_the_node_cap_are_refused() {
        // Twelve imports of a 100-node file, with room for 1,000 nodes (the
        // real cap is 100,000; the arithmetic is the same).
        let mut leaf =
            String::from("digraph L {\n start [shape=Mdiamond]\n exit [shape=Msquare]\n");
        for i in 0..100 {
            leaf.push_str(&format!(" n{i} [shape=parallelogram, script=\"true\", on_failure=\"exit\"]\n start -> n{i} -> exit\n"));
        }
        leaf.push_str("}\n");
        let mut main =
            String::from("digraph M {\n start [shape=Mdiamond]\n exit [shape=Msquare]\n");
        for i in 0..12 {
            main.push_str(&format!(
                " p{i} [import=\"leaf.fabro\"]\n start -> p{i} -> exit\n"
            ));
        }
        main.push_str("}\n");
        let dir = tree(&[("leaf.fabro".into(), leaf)]);
        let budget = crate::lang::budget::Budget {
            imported_nodes: 1_000,
            ..Default::default()
        };
        let wf = Workflow::within(
            "main.fabro",
            main.as_bytes(),
            dir.path(),
            &LoadOptions::default(),
            budget,
        );
        let d = of_rule(&wf, super::IMPORT_TOO_LARGE);
        assert_eq!(d.len(), 2, "the 11th and 12th: {:?}", wf.diagnostics);
        assert!(
            d[0].message.contains("more than 100000 nodes"),
            "{}",
            d[0].message
        );
        assert!(
            d[0].message.ends_with("main.fabro (`p10`) → leaf.fabro"),
            "{}",
            d[0].message
        );
        assert_eq!(
            graph(&wf).nodes.len(),
            2 + 1_000 + 2,
            "ten splices, two placeholders left"
        );
    }

    #[test]
    fn joining_many_edges_around_an_import_is_bounded() {
        // 2,000 edges into the placeholder times 2,000 out of the imported
        // start: four million joined edges uncapped.
        let mut main = String::from(
            "digraph M {\n start [shape=Mdiamond]\n exit [shape=Msquare]\n p [import=\"fan.fabro\"]\n p -> exit\n",
        );
        let mut fan = String::from("digraph F {\n start [shape=Mdiamond]\n exit [shape=Msquare]\n");
        for i in 0..2000 {
            main.push_str(&format!(" m{i} [shape=parallelogram, script=\"true\", on_failure=\"exit\"]\n start -> m{i} -> p [label=\"{}\"]\n", "l".repeat(100)));
            fan.push_str(&format!(" f{i} [shape=parallelogram, script=\"true\", on_failure=\"exit\"]\n start -> f{i} -> exit\n"));
        }
        main.push_str("}\n");
        fan.push_str("}\n");
        let dir = tree(&[("main.fabro".into(), main), ("fan.fabro".into(), fan)]);
        let wf =
            Workflow::load(&dir.path().join("main.fabro"), &LoadOptions::default()).expect("loads");
        let d = of_rule(&wf, super::IMPORT_TOO_LARGE);
        assert_eq!(
            d.len(),
            1,
            "{:?}",
            &wf.diagnostics[..wf.diagnostics.len().min(5)]
        );
        assert!(
            d[0].message
                .contains("joining the edges around the import `p`"),
            "{}",
            d[0].message
        );
        assert!(graph(&wf).edges.len() < 4_000_000);
    }

    #[test]
    fn an_import_outside_the_workflows_tree_is_refused() {
        let outer = tempfile::tempdir().expect("temp dir");
        let flows = outer.path().join("flows");
        std::fs::create_dir(&flows).expect("mkdir");
        std::fs::write(outer.path().join("review.fabro"), LEAF).expect("write");
        std::fs::write(
            flows.join("main.fabro"),
            importing(&["r".to_string()], "../review.fabro"),
        )
        .expect("write");
        let wf = Workflow::load(&flows.join("main.fabro"), &LoadOptions::default()).expect("loads");
        let d = of_rule(&wf, crate::lang::files::FILE_OUTSIDE_TREE);
        assert_eq!(d.len(), 1, "{:?}", wf.diagnostics);
        assert_eq!(at(d[0]), Some((4, 12)));
        assert!(graph(&wf).node("r.work").is_none());
    }

    #[test]
    fn a_fifo_import_is_refused_without_blocking() {
        let dir = tree(&[(
            "main.fabro".into(),
            importing(&["r".to_string()], "pipe.fabro"),
        )]);
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            dir.path().join("pipe.fabro"),
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        )
        .expect("mkfifo");
        let wf =
            Workflow::load(&dir.path().join("main.fabro"), &LoadOptions::default()).expect("loads");
        let d = of_rule(&wf, super::IMPORT_NOT_FOUND);
        assert_eq!(d.len(), 1, "{:?}", wf.diagnostics);
        assert!(
            d[0].message.contains("not a regular file (it is a FIFO)"),
            "{}",
            d[0].message
        );
    }

    #[test]
    fn a_spliced_id_that_exists_already_is_an_error() {
        let wf = load("clash.fabro");
        let d = of_rule(&wf, super::IMPORT_CLASH);
        assert_eq!(d.len(), 1, "{:?}", wf.diagnostics);
        assert!(d[0].message.contains("`review.check`"), "{d:?}");
        assert_eq!(at(d[0]), Some((4, 20)));
    }
}
