//! The parser for Fabro's DOT subset (reference/dot-language.mdx).
//!
//! It builds the [`Graph`] directly, applying scoped node and edge defaults
//! and subgraph classes as it goes. A syntax error stops the parse (the first
//! error is reported precisely rather than a cascade of guesses); attribute
//! type errors are collected and parsing continues.
//!
//! Nothing here recurses: nested `{ }` scopes live on an explicit stack
//! (`Parser::frames`), capped at [`MAX_NESTING`], so no input can exhaust
//! the call stack of the thread that parses it, however small.

// The error path carries a whole `Diagnostic` and ends the parse: it is cold,
// so boxing every intermediate `Result` would cost more than it saves.
#![allow(clippy::result_large_err)]

use std::borrow::Cow;

use super::attrs::{Attr, Attrs, Key, Scope};
use super::diagnostic::Diagnostic;
use super::graph::{Edge, Graph, NodeId};
use super::lexer::{self, Kind, LexError, Lexeme, Lexer};
use super::span::Span;
use super::value::{Duration, Text, Value, ValueType};

/// The rule id of syntax errors.
pub(crate) const SYNTAX: &str = "syntax";
/// The rule id of attribute values of the wrong type.
pub(crate) const ATTRIBUTE_TYPE: &str = "attribute_type";
/// The rule id of subgraphs nested deeper than [`MAX_NESTING`].
pub(crate) const NESTING_TOO_DEEP: &str = "nesting_too_deep";

/// How deep `{ }` subgraphs may nest. No real workflow comes near it; the
/// cap bounds the scope stack (each level copies its parent's node and edge
/// defaults), and the error names it.
pub const MAX_NESTING: usize = 256;

/// The rule id of a file whose defaults and subgraph labels would be copied
/// onto its nodes and edges beyond [`MAX_EXPANSION_BYTES`].
pub(crate) const EXPANSION_TOO_LARGE: &str = "expansion_too_large";

/// How many bytes of attributes the parser may copy: node and edge
/// defaults onto each node and edge they apply to, a chained edge's
/// attributes onto each of its pairs, subgraph labels onto their nodes as
/// classes. Without it, 4 MB of `node [...]` defaults followed by a
/// thousand node names would ask for gigabytes. Written attributes are not
/// counted (the file's size bounds them); a workflow that uses defaults
/// the ordinary way copies a few megabytes at most.
pub(crate) const MAX_EXPANSION_BYTES: u64 = 64 * crate::limits::MIB;

/// A parsed graph and the non-fatal problems found while building it.
#[derive(Debug)]
pub struct Parsed {
    pub graph: Graph,
    pub diagnostics: Vec<Diagnostic>,
    /// Bytes of attributes copied (see [`MAX_EXPANSION_BYTES`]).
    pub expanded: u64,
}

/// Parses a workflow. `Err` holds the first syntax error.
pub fn parse(src: &str) -> Result<Parsed, Box<Diagnostic>> {
    parse_within(src, MAX_EXPANSION_BYTES)
}

/// [`parse`] with at most `budget` bytes of copied attributes (what is left
/// of [`MAX_EXPANSION_BYTES`] when imported files share it).
pub(crate) fn parse_within(src: &str, budget: u64) -> Result<Parsed, Box<Diagnostic>> {
    let mut parser = Parser::new(src, budget).map_err(Box::new)?;
    // Pre-size for large files (about one node and two edges per 300 bytes
    // of typical workflow text), so growth does not copy the arrays.
    let estimate = src.len() / 300;
    parser.graph.reserve(estimate, estimate * 2);
    // And about two short values per node that no other attribute writes
    // (a label, a command): the table of shared values would otherwise be
    // rebuilt at every doubling.
    parser.texts.reserve(estimate * 2);
    parser.file().map_err(Box::new)?;
    parser.graph.finish();
    Ok(Parsed {
        graph: parser.graph,
        diagnostics: parser.diagnostics,
        expanded: budget - parser.expansion_left,
    })
}

/// Defaults and membership of one `{ }` scope.
#[derive(Default)]
struct Frame {
    node_defaults: Attrs,
    edge_defaults: Attrs,
    /// The subgraph's `label`, which becomes a class of its nodes.
    label: Option<String>,
    /// Where this scope's members start in `Parser::members`: the nodes
    /// declared or referenced inside it (nested scopes included) are the
    /// entries from there on, so closing a scope copies nothing.
    members_from: usize,
}

struct Parser<'src> {
    lexer: Lexer<'src>,
    tok: Lexeme,
    graph: Graph,
    frames: Vec<Frame>,
    diagnostics: Vec<Diagnostic>,
    /// Reused by every attribute list (see `attr_list`).
    scratch: Attrs,
    /// Node positions touched inside subgraphs, innermost scope last.
    members: Vec<usize>,
    /// Per node position, where in `members` it was last recorded, so a
    /// node named again in the same scope is recorded once.
    member_at: Vec<usize>,
    /// What is left of the copying budget (see [`MAX_EXPANSION_BYTES`]).
    expansion_left: u64,
    /// The short values read so far, each held once (see [`SHARED_UP_TO`]).
    texts: hashbrown::HashSet<Text>,
    /// The ids of an edge chain (`a -> b -> c`) and then their shared
    /// handles, reused by every edge statement so that one costs no
    /// allocation of its own.
    chain: Vec<(&'src str, Span)>,
    chain_ids: Vec<NodeId>,
}

/// Values up to this many bytes are shared between the attributes that
/// write the same text (`shape=parallelogram`, `label="pass"`, the same
/// condition on many edges): one allocation for them all, and no
/// allocation for the later ones. Longer values (scripts, prompts) are
/// rarely written twice, and each keeps its own.
const SHARED_UP_TO: usize = 64;

type PResult<T> = Result<T, Diagnostic>;

fn lex_diag(e: LexError) -> Diagnostic {
    let d = Diagnostic::error(SYNTAX, e.message).at(e.span);
    match e.hint {
        Some(h) => d.with_hint(h),
        None => d,
    }
}

fn is_identifier(word: &str) -> bool {
    let mut bytes = word.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Attribute keys: identifiers, optionally qualified with dots
/// (`human.default_choice`, `stack.child_workflow`).
fn is_key(word: &str) -> bool {
    is_identifier(word) || (!word.ends_with('.') && word.split('.').all(is_identifier))
}

/// Dotted node ids (`review.check`): the ids of nodes an `import` spliced
/// in. Accepted bare or quoted so that a printed graph reads back (the
/// printer quotes them, as Graphviz needs).
fn is_dotted_id(word: &str) -> bool {
    word.contains('.') && is_key(word)
}

fn keyword(word: &str) -> Option<&'static str> {
    ["digraph", "graph", "node", "edge", "subgraph", "strict"]
        .into_iter()
        .find(|k| word.eq_ignore_ascii_case(k))
}

/// The class a subgraph label becomes: lowercased, spaces to `-`.
#[must_use]
pub(crate) fn label_class(label: &str) -> String {
    label
        .trim()
        .to_lowercase()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join("-")
}

impl<'src> Parser<'src> {
    fn new(src: &'src str, budget: u64) -> PResult<Self> {
        let mut lexer = Lexer::new(src);
        let tok = lexer.lex().map_err(lex_diag)?;
        Ok(Parser {
            lexer,
            tok,
            graph: Graph::default(),
            frames: vec![Frame::default()],
            diagnostics: Vec::new(),
            scratch: Attrs::new(),
            members: Vec::new(),
            member_at: Vec::new(),
            expansion_left: budget,
            texts: hashbrown::HashSet::new(),
            chain: Vec::new(),
            chain_ids: Vec::new(),
        })
    }

    /// Takes `bytes` of copies from the budget; past it, the parse stops
    /// at the current token.
    fn charge(&mut self, bytes: u64) -> PResult<()> {
        match self.expansion_left.checked_sub(bytes) {
            Some(left) => {
                self.expansion_left = left;
                Ok(())
            }
            None => Err(Diagnostic::error(
                EXPANSION_TOO_LARGE,
                format!(
                    "node and edge defaults and subgraph labels copy more than {} of attributes onto the nodes and edges",
                    crate::limits::human_bytes(MAX_EXPANSION_BYTES)
                ),
            )
            .at(self.tok.span)
            .with_hint("each node or edge gets its own copy of the defaults in force where it is written: set fewer or shorter defaults, or write the attributes on the nodes that need them")),
        }
    }

    fn advance(&mut self) -> PResult<Lexeme> {
        let next = self.lexer.lex().map_err(lex_diag)?;
        Ok(std::mem::replace(&mut self.tok, next))
    }

    /// The current token's text, when it is a word.
    fn word(&self) -> Option<&'src str> {
        (self.tok.kind == Kind::Word).then(|| self.lexer.word(self.tok))
    }

    /// The current token's text, when it is a quoted string without
    /// escapes (the only kind that can spell a dotted node id).
    fn plain_string(&self) -> Option<&'src str> {
        match self.tok.kind {
            Kind::Str => match self.lexer.string(self.tok) {
                Cow::Borrowed(text) => Some(text),
                Cow::Owned(_) => None,
            },
            _ => None,
        }
    }

    /// How the current token reads in an error message.
    fn describe(&self) -> String {
        lexer::describe(self.tok.kind, self.lexer.word(self.tok))
    }

    fn unexpected(&self, expected: &str) -> Diagnostic {
        Diagnostic::error(
            SYNTAX,
            format!("expected {expected}, found {}", self.describe()),
        )
        .at(self.tok.span)
    }

    fn expect(&mut self, kind: Kind, expected: &str) -> PResult<Lexeme> {
        if self.tok.kind == kind {
            self.advance()
        } else {
            Err(self.unexpected(expected))
        }
    }

    fn file(&mut self) -> PResult<()> {
        let (kw, span) = (self.word().and_then(keyword), self.tok.span);
        match kw {
            Some("digraph") => {}
            Some("strict") => {
                return Err(
                    Diagnostic::error(SYNTAX, "`strict` graphs are not supported")
                        .at(span)
                        .with_hint("remove `strict`: start the file with `digraph Name {`"),
                );
            }
            Some("graph") => {
                return Err(
                    Diagnostic::error(SYNTAX, "undirected `graph` is not supported")
                        .at(span)
                        .with_hint("workflows are directed: write `digraph Name { ... }`"),
                );
            }
            _ => return Err(self.unexpected("`digraph`")),
        }
        self.advance()?;
        let name = match self.tok.kind {
            Kind::Word
                if is_identifier(self.lexer.word(self.tok))
                    && keyword(self.lexer.word(self.tok)).is_none() =>
            {
                self.lexer.word(self.tok).to_string()
            }
            Kind::LBrace => {
                return Err(Diagnostic::error(SYNTAX, "the graph needs a name")
                    .at(self.tok.span)
                    .with_hint("write `digraph MyWorkflow {`"));
            }
            Kind::Str | Kind::EscapedStr => {
                return Err(Diagnostic::error(
                    SYNTAX,
                    "the graph name must be an identifier, not a quoted string",
                )
                .at(self.tok.span)
                .with_hint("use letters, digits and underscores, e.g. `digraph MyWorkflow {`"));
            }
            _ => return Err(self.unexpected("a graph name")),
        };
        let name_tok = self.advance()?;
        self.graph.name = name;
        self.graph.span = name_tok.span;
        self.expect(Kind::LBrace, "`{` after the graph name")?;
        self.statements()?;
        self.expect(Kind::RBrace, "`}` to close the graph")?;
        match self.tok.kind {
            Kind::Eof => Ok(()),
            Kind::Word
                if matches!(
                    keyword(self.lexer.word(self.tok)),
                    Some("digraph" | "graph" | "strict")
                ) =>
            {
                Err(
                    Diagnostic::error(SYNTAX, "only one graph per file is supported")
                        .at(self.tok.span)
                        .with_hint("put each workflow in its own file"),
                )
            }
            _ => Err(Diagnostic::error(
                SYNTAX,
                format!("unexpected {} after the end of the graph", self.describe()),
            )
            .at(self.tok.span)
            .with_hint("everything must be inside `digraph Name { ... }`")),
        }
    }

    /// The graph's statements up to its closing `}` (not consumed),
    /// subgraphs included: `{` pushes a scope and `}` pops it, in this one
    /// loop, so nesting costs heap (bounded by [`MAX_NESTING`]), not stack.
    fn statements(&mut self) -> PResult<()> {
        loop {
            match self.tok.kind {
                Kind::RBrace if self.in_subgraph() => {
                    self.advance()?;
                    self.close_subgraph()?;
                }
                Kind::RBrace => return Ok(()),
                Kind::Eof => {
                    return Err(Diagnostic::error(
                        SYNTAX,
                        "unexpected end of file: a `{` is never closed",
                    )
                    .at(self.tok.span)
                    .with_hint("add the missing `}`"));
                }
                Kind::Semicolon => {
                    self.advance()?;
                }
                _ => self.statement()?,
            }
        }
    }

    fn in_subgraph(&self) -> bool {
        self.frames.len() > 1
    }

    fn frame(&mut self) -> &mut Frame {
        // The root frame is pushed in `new` and never popped.
        let last = self.frames.len() - 1;
        &mut self.frames[last]
    }

    fn statement(&mut self) -> PResult<()> {
        let word = match self.tok.kind {
            Kind::Word => self.lexer.word(self.tok),
            Kind::LBrace => return self.subgraph(),
            Kind::Str if self.plain_string().is_some_and(is_dotted_id) => {
                return self.node_or_edge_or_decl();
            }
            Kind::Str | Kind::EscapedStr => {
                return Err(Diagnostic::error(SYNTAX, "quoted node ids are not supported")
                    .at(self.tok.span)
                    .with_hint("name nodes with identifiers (letters, digits, underscores) and put display text in `label`"));
            }
            _ => return Err(self.unexpected("a statement")),
        };
        match keyword(word) {
            Some("graph") => {
                self.advance()?;
                let list = self.attr_list(Scope::Graph)?;
                self.graph_attrs(list);
                Ok(())
            }
            Some("node") => {
                self.advance()?;
                let list = self.attr_list(Scope::Node)?;
                self.frame().node_defaults.merge(list);
                Ok(())
            }
            Some("edge") => {
                self.advance()?;
                let list = self.attr_list(Scope::Edge)?;
                self.frame().edge_defaults.merge(list);
                Ok(())
            }
            Some("subgraph") => {
                self.advance()?;
                // The subgraph's name only matters to Graphviz (`cluster_*`).
                if self.word().is_some_and(|w| keyword(w).is_none()) {
                    self.advance()?;
                }
                if self.tok.kind != Kind::LBrace {
                    return Err(self.unexpected("`{` to open the subgraph"));
                }
                self.subgraph()
            }
            // `strict` means something only before `digraph`; inside the body
            // it is an ordinary id (the reserved_keyword_node_id rule warns).
            Some("strict") => self.node_or_edge_or_decl(),
            Some("digraph") => Err(Diagnostic::error(
                SYNTAX,
                "a graph cannot contain another graph",
            )
            .at(self.tok.span)
            .with_hint("use `subgraph name { ... }` to group nodes")),
            _ => self.node_or_edge_or_decl(),
        }
    }

    /// Applies `graph [..]` or `key=value` at the current scope: the root
    /// graph's attributes, or (inside a subgraph) the subgraph's own, of
    /// which only `label` means anything.
    fn graph_attrs(&mut self, list: Attrs) {
        if self.in_subgraph() {
            if let Some(label) = list.text("label") {
                let label = label.into_owned();
                self.frame().label = Some(label);
            }
        } else {
            self.graph.attrs.merge(list);
        }
    }

    /// Opens a subgraph at its `{`: a new scope inheriting the defaults of
    /// the one around it. [`Parser::statements`] closes it at its `}`.
    fn subgraph(&mut self) -> PResult<()> {
        // The root frame is the graph's own scope, not a subgraph.
        let depth = self.frames.len();
        if depth > MAX_NESTING {
            return Err(Diagnostic::error(
                NESTING_TOO_DEEP,
                format!("subgraphs nest more than {MAX_NESTING} levels deep"),
            )
            .at(self.tok.span)
            .with_hint(format!(
                "this `{{` opens level {depth}; flatten the subgraphs (their only use is grouping nodes and scoping defaults)"
            )));
        }
        let inherited = self
            .frames
            .last()
            .map_or(0, |f| f.node_defaults.weight() + f.edge_defaults.weight());
        self.charge(inherited)?;
        self.expect(Kind::LBrace, "`{`")?;
        let parent = self.frames.last();
        let frame = Frame {
            node_defaults: parent.map(|f| f.node_defaults.clone()).unwrap_or_default(),
            edge_defaults: parent.map(|f| f.edge_defaults.clone()).unwrap_or_default(),
            label: None,
            members_from: self.members.len(),
        };
        self.frames.push(frame);
        Ok(())
    }

    /// Closes the innermost subgraph after its `}`: its label becomes a
    /// class of its members, who stay members of the scope around it.
    fn close_subgraph(&mut self) -> PResult<()> {
        if !self.in_subgraph() {
            return Ok(());
        }
        let Some(done) = self.frames.pop() else {
            return Ok(());
        };
        let class = done.label.as_deref().map(label_class).unwrap_or_default();
        if !class.is_empty() {
            let weight = (std::mem::size_of::<String>() + class.len()) as u64;
            for k in done.members_from..self.members.len() {
                let node = &mut self.graph.nodes[self.members[k]];
                // Visiting a member is work even when it adds nothing (the
                // same nodes in 256 labelled scopes): it is charged as the
                // bytes it compares.
                let compared = (node.subgraph_classes.len() * std::mem::size_of::<String>()) as u64;
                let added = !node.subgraph_classes.contains(&class);
                if added {
                    node.subgraph_classes.push(class.clone());
                }
                self.charge(compared + if added { weight } else { 0 })?;
            }
        }
        if !self.in_subgraph() {
            // Back at the graph's own scope, which keeps no members.
            self.members.truncate(done.members_from);
        }
        Ok(())
    }

    /// A node id token: an identifier that is not a keyword.
    fn node_id(&mut self) -> PResult<(&'src str, Span)> {
        let text = self.lexer.word(self.tok);
        match self.tok.kind {
            Kind::Word if matches!(keyword(text), Some(k) if k != "strict") => {
                let w = text;
                Err(Diagnostic::error(
                    SYNTAX,
                    format!("`{w}` is a keyword and cannot be a node id"),
                )
                .at(self.tok.span)
                .with_hint(format!("rename the node, e.g. `{}_step`", w.to_lowercase())))
            }
            Kind::Word if is_identifier(text) || is_dotted_id(text) => {
                let tok = self.advance()?;
                Ok((text, tok.span))
            }
            Kind::Str if self.plain_string().is_some_and(is_dotted_id) => {
                let id = self.plain_string().unwrap_or_default();
                let tok = self.advance()?;
                Ok((id, tok.span))
            }
            Kind::Word => {
                let w = text;
                let fixed: String = w
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                    .collect();
                let fixed = if fixed.starts_with(|c: char| c.is_ascii_digit()) {
                    format!("n{fixed}")
                } else {
                    fixed
                };
                Err(Diagnostic::error(SYNTAX, format!("`{w}` is not a valid node id"))
                    .at(self.tok.span)
                    .with_hint(format!("node ids use letters, digits and underscores and start with a letter or `_`, e.g. `{fixed}`")))
            }
            Kind::Str | Kind::EscapedStr => Err(Diagnostic::error(
                SYNTAX,
                "quoted node ids are not supported",
            )
            .at(self.tok.span)
            .with_hint("name nodes with identifiers and put display text in `label`")),
            Kind::LBrace => Err(Diagnostic::error(
                SYNTAX,
                "subgraphs as edge endpoints are not supported",
            )
            .at(self.tok.span)
            .with_hint("write one edge per target: `a -> b; a -> c`")),
            _ => Err(self.unexpected("a node id")),
        }
    }

    fn node_or_edge_or_decl(&mut self) -> PResult<()> {
        let (id, span) = self.node_id()?;
        match self.tok.kind {
            Kind::Equals => return self.declaration(id, span),
            Kind::Arrow => return self.edges(id, span),
            _ => {}
        }
        let list = if self.tok.kind == Kind::LBracket {
            self.attr_list(Scope::Node)?
        } else {
            Attrs::new()
        };
        let (i, _) = self.touch_node(id, span)?;
        let node = &mut self.graph.nodes[i];
        if !node.declared {
            node.declared = true;
            node.span = span;
        }
        node.attrs.merge(list);
        Ok(())
    }

    /// `key = value` at statement level: a graph (or subgraph) attribute.
    fn declaration(&mut self, key: &str, key_span: Span) -> PResult<()> {
        self.expect(Kind::Equals, "`=`")?;
        let attr = self.value_for(Key::new(key), key_span, Scope::Graph)?;
        let mut list = Attrs::new();
        list.set(attr);
        self.graph_attrs(list);
        Ok(())
    }

    /// The node called `id` (created if new), with its shared id.
    fn touch_node(&mut self, id: &str, span: Span) -> PResult<(usize, NodeId)> {
        let (i, shared, created) = self.graph.node_entry(id, span);
        if created {
            let weight = self.frame().node_defaults.weight();
            self.charge(weight)?;
            let defaults = self.frame().node_defaults.clone();
            self.graph.nodes[i].attrs = defaults;
        }
        if self.in_subgraph() {
            if self.member_at.len() <= i {
                self.member_at.resize(i + 1, usize::MAX);
            }
            let from = self.frames.last().map_or(0, |f| f.members_from);
            let at = self.member_at[i];
            let recorded = at >= from && self.members.get(at) == Some(&i);
            if !recorded {
                self.member_at[i] = self.members.len();
                self.members.push(i);
            }
        }
        Ok((i, shared))
    }

    /// `a -> b -> c [attrs]`: pairwise edges sharing the attributes.
    fn edges(&mut self, first: &'src str, first_span: Span) -> PResult<()> {
        let mut ids = std::mem::take(&mut self.chain);
        let mut shared = std::mem::take(&mut self.chain_ids);
        ids.clear();
        shared.clear();
        let done = self.edge_chain(first, first_span, &mut ids, &mut shared);
        self.chain = ids;
        self.chain_ids = shared;
        done
    }

    /// [`Parser::edges`] with its buffers: `ids` and `shared` come empty.
    fn edge_chain(
        &mut self,
        first: &'src str,
        first_span: Span,
        ids: &mut Vec<(&'src str, Span)>,
        shared: &mut Vec<NodeId>,
    ) -> PResult<()> {
        ids.push((first, first_span));
        while self.tok.kind == Kind::Arrow {
            self.advance()?;
            ids.push(self.node_id()?);
        }
        let list = if self.tok.kind == Kind::LBracket {
            self.attr_list(Scope::Edge)?
        } else {
            Attrs::new()
        };
        // Edges share the nodes' id strings rather than copying them.
        for &(id, span) in ids.iter() {
            shared.push(self.touch_node(id, span)?.1);
        }
        let mut attrs = self.frame().edge_defaults.clone();
        attrs.merge(list);
        // Every pair but the last gets a copy; the defaults were one more.
        let pairs = ids.len().saturating_sub(1) as u64;
        let copies = self.frame().edge_defaults.weight() + attrs.weight() * pairs.saturating_sub(1);
        self.charge(copies)?;
        // Pairwise edges; the last pair takes the attributes by move, so a
        // plain `a -> b` copies nothing.
        let last = ids.len().saturating_sub(1);
        for (k, pair) in ids.windows(2).enumerate() {
            let [(_, from_span), (_, to_span)] = *pair else {
                continue;
            };
            let edge_attrs = if k + 1 == last {
                std::mem::take(&mut attrs)
            } else {
                attrs.clone()
            };
            self.graph.edges.push(Edge {
                from: shared[k].clone(),
                to: shared[k + 1].clone(),
                span: from_span.to(to_span),
                from_span,
                to_span,
                attrs: edge_attrs,
            });
        }
        Ok(())
    }

    /// One or more `[ ... ]` blocks. Attributes may be separated by `,` or
    /// `;`, or by nothing but white space, as in Graphviz
    /// (`[label="x" shape=box]`).
    fn attr_list(&mut self, scope: Scope) -> PResult<Attrs> {
        // Built in a reused buffer, then copied out at its exact size: large
        // workflows hold hundreds of thousands of lists, and this costs one
        // allocation each.
        let mut attrs = std::mem::take(&mut self.scratch);
        let list = self.attr_list_into(scope, &mut attrs);
        let exact = attrs.take_exact();
        self.scratch = attrs;
        list.map(|()| exact)
    }

    fn attr_list_into(&mut self, scope: Scope, attrs: &mut Attrs) -> PResult<()> {
        if self.tok.kind != Kind::LBracket {
            return Err(self.unexpected("`[`"));
        }
        while self.tok.kind == Kind::LBracket {
            self.advance()?;
            loop {
                match self.tok.kind {
                    Kind::RBracket => {
                        self.advance()?;
                        break;
                    }
                    Kind::Comma | Kind::Semicolon => {
                        self.advance()?;
                    }
                    Kind::Word => {
                        let key = self.lexer.word(self.tok);
                        let key_tok = self.advance()?;
                        // Known names are valid ones: only the others are
                        // checked character by character.
                        let interned = Key::new(key);
                        if interned.static_name().is_none() && !is_key(key) {
                            return Err(Diagnostic::error(
                                SYNTAX,
                                format!("`{key}` is not a valid attribute name"),
                            )
                            .at(key_tok.span)
                            .with_hint("attribute names use letters, digits, `_` and `.`"));
                        }
                        if self.tok.kind != Kind::Equals {
                            return Err(Diagnostic::error(
                                SYNTAX,
                                format!(
                                    "expected `=` after attribute `{key}`, found {}",
                                    self.describe()
                                ),
                            )
                            .at(self.tok.span)
                            .with_hint(format!("write `{key}=value`")));
                        }
                        self.advance()?;
                        let attr = self.value_for(interned, key_tok.span, scope)?;
                        attrs.set(attr);
                    }
                    Kind::Str | Kind::EscapedStr => {
                        return Err(
                            Diagnostic::error(SYNTAX, "attribute names cannot be quoted")
                                .at(self.tok.span)
                                .with_hint("write `key=\"value\"`"),
                        );
                    }
                    Kind::Eof => {
                        return Err(Diagnostic::error(
                            SYNTAX,
                            "unexpected end of file inside `[ ... ]`",
                        )
                        .at(self.tok.span)
                        .with_hint("close the attribute list with `]`"));
                    }
                    _ => return Err(self.unexpected("an attribute or `]`")),
                }
            }
        }
        Ok(())
    }

    /// Reads the value after `key=`, typing and coercing it.
    fn value_for(&mut self, key: Key, key_span: Span, scope: Scope) -> PResult<Attr> {
        if !matches!(self.tok.kind, Kind::Word | Kind::Str | Kind::EscapedStr) {
            {
                return Err(Diagnostic::error(
                    SYNTAX,
                    format!("expected a value for `{key}`, found {}", self.describe()),
                )
                .at(self.tok.span)
                .with_hint(format!("write `{key}=value` or `{key}=\"text\"`")));
            }
        }
        let tok = self.advance()?;
        let value_span = tok.span;
        let value = match tok.kind {
            Kind::Word => {
                let w = self.lexer.word(tok);
                Value::typed_word(w).unwrap_or_else(|| Value::Word(self.text(w)))
            }
            _ => {
                let s = self.lexer.string(tok);
                Value::Str(self.text(&s))
            }
        };
        let value = match key.declared_type(scope) {
            None => value,
            Some(ty) => match value.coerce(ty) {
                Ok(v) => v,
                Err(original) => self.coercion_failed(&key, ty, original, value_span),
            },
        };
        Ok(Attr {
            key,
            value,
            key_span,
            value_span,
        })
    }
}

impl Parser<'_> {
    /// `text` as a value's text: shared with earlier values of the same
    /// text when short (see [`SHARED_UP_TO`]).
    fn text(&mut self, text: &str) -> Text {
        if text.len() > SHARED_UP_TO {
            return Text::from(text);
        }
        // One hash and one probe whether the text is new or known.
        self.texts
            .get_or_insert_with(text, |t| Text::from(t))
            .clone()
    }

    /// A value that does not fit its attribute's type. A whole number where
    /// a duration belongs is read as seconds, with a warning (the reference
    /// itself writes `stall_timeout="300"` for five minutes); anything else
    /// is an error and the value is kept as written.
    fn coercion_failed(&mut self, key: &str, ty: ValueType, original: Value, span: Span) -> Value {
        let text = original.as_text().into_owned();
        if ty == ValueType::Duration
            && let Ok(seconds) = text.trim().parse::<u64>()
            && let Some(d) = Duration::parse(&format!("{seconds}s"))
        {
            self.diagnostics.push(
                Diagnostic::warning(
                    ATTRIBUTE_TYPE,
                    format!("`{key}={text}` has no unit; read as {d}"),
                )
                .at(span)
                .with_hint(format!("write the unit: `{key}=\"{d}\"`")),
            );
            return Value::Duration(d);
        }
        let hint = match ty {
            ValueType::Duration => format!("write a duration with a unit, e.g. `{key}=\"30s\"`"),
            _ => format!("write {} for `{key}`", ty.describe()),
        };
        self.diagnostics.push(
            Diagnostic::error(
                ATTRIBUTE_TYPE,
                format!("`{key}` expects {}, found `{text}`", ty.describe()),
            )
            .at(span)
            .with_hint(hint),
        );
        original
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::lang::graph::Handler;

    fn ok(src: &str) -> Graph {
        match parse(src) {
            Ok(p) => {
                assert!(p.diagnostics.is_empty(), "{:?}", p.diagnostics);
                p.graph
            }
            Err(e) => panic!("{src}\n{e:?}"),
        }
    }

    fn err(src: &str) -> Diagnostic {
        match parse(src) {
            Ok(p) => panic!("parsed: {:?}", p.graph),
            Err(e) => *e,
        }
    }

    fn at(d: &Diagnostic) -> (u32, u32) {
        let s = d.span.expect("has a span");
        (s.line, s.column)
    }

    fn text<'g>(g: &'g Graph, node: &str, key: &str) -> Option<std::borrow::Cow<'g, str>> {
        g.node(node)?.attrs.text(key)
    }

    #[test]
    fn parses_the_reference_file_structure() {
        let g = ok(r#"digraph MyWorkflow {
            graph [goal="Describe the project"]
            rankdir=LR
            start [shape=Mdiamond, label="Start"]
            exit  [shape=Msquare, label="Exit"]
            scan    [label="Scan Files", shape=parallelogram, script="find . -type f | head -30"]
            analyze [label="Analyze", shape=tab, prompt="Summarize the project structure."]
            start -> scan -> analyze -> exit
        }"#);
        assert_eq!(g.name, "MyWorkflow");
        assert_eq!(
            g.attrs.text("goal").as_deref(),
            Some("Describe the project")
        );
        assert_eq!(g.attrs.text("rankdir").as_deref(), Some("LR"));
        assert_eq!(g.nodes.len(), 4);
        assert_eq!(g.edges.len(), 3);
        assert_eq!(g.node("scan").map(|n| n.handler), Some(Handler::Command));
        assert_eq!(g.node("analyze").map(|n| n.handler), Some(Handler::Prompt));
    }

    #[test]
    fn chained_edges_expand_pairwise_and_share_attributes() {
        let g = ok("digraph G { a -> b -> c [weight=3, label=\"x\"] }");
        let pairs: Vec<_> = g
            .edges
            .iter()
            .map(|e| (e.from.as_ref(), e.to.as_ref(), e.weight()))
            .collect();
        assert_eq!(pairs, vec![("a", "b", 3), ("b", "c", 3)]);
    }

    #[test]
    fn edges_create_undeclared_nodes() {
        let g = ok("digraph G { a [label=A]; a -> b }");
        assert!(g.node("a").is_some_and(|n| n.declared));
        assert!(g.node("b").is_some_and(|n| !n.declared));
    }

    #[test]
    fn redeclared_nodes_merge_and_later_wins() {
        let g = ok("digraph G { a [label=\"one\", prompt=\"p\"]\n a [label=\"two\"] }");
        assert_eq!(text(&g, "a", "label").as_deref(), Some("two"));
        assert_eq!(text(&g, "a", "prompt").as_deref(), Some("p"));
    }

    #[test]
    fn node_defaults_apply_only_after_and_are_scoped_to_the_subgraph() {
        let g = ok(r#"digraph G {
            before
            node [timeout="900s"]
            after
            subgraph cluster_x {
                node [thread_id="impl"]
                inner
            }
            outside
        }"#);
        assert!(text(&g, "before", "timeout").is_none());
        assert_eq!(text(&g, "after", "timeout").as_deref(), Some("900s"));
        assert_eq!(text(&g, "inner", "timeout").as_deref(), Some("900s"));
        assert_eq!(text(&g, "inner", "thread_id").as_deref(), Some("impl"));
        assert!(text(&g, "outside", "thread_id").is_none());
    }

    #[test]
    fn explicit_attributes_override_node_defaults() {
        let g = ok("digraph G { node [shape=tab] a [shape=box] b }");
        assert_eq!(g.node("a").map(|n| n.handler), Some(Handler::Agent));
        assert_eq!(g.node("b").map(|n| n.handler), Some(Handler::Prompt));
    }

    #[test]
    fn edge_defaults_apply_to_later_edges_in_scope() {
        let g = ok(
            "digraph G { a -> b; edge [weight=5]; b -> c; subgraph { edge [weight=7]; c -> d }; d -> e }",
        );
        let weights: Vec<_> = g.edges.iter().map(|e| e.weight()).collect();
        assert_eq!(weights, vec![0, 5, 7, 5]);
    }

    #[test]
    fn subgraph_label_becomes_a_class_on_nodes_inside() {
        let g = ok(r#"digraph G {
            a
            subgraph cluster_impl {
                label = "Loop A"
                plan
                a
                subgraph inner { graph [label="Deep Work"]; deep }
            }
            plan -> outside
        }"#);
        assert_eq!(
            g.node("plan").map(|n| n.classes()),
            Some(vec!["loop-a".to_string()])
        );
        assert_eq!(
            g.node("a").map(|n| n.classes()),
            Some(vec!["loop-a".to_string()])
        );
        assert_eq!(
            g.node("deep").map(|n| n.classes()),
            Some(vec!["deep-work".to_string(), "loop-a".to_string()])
        );
        assert_eq!(g.node("outside").map(|n| n.classes()), Some(vec![]));
        assert!(
            g.attrs.get("label").is_none(),
            "a subgraph label is not the graph's"
        );
    }

    #[test]
    fn class_lists_accept_commas_and_spaces() {
        let g = ok("digraph G { a [class=\"coding, critical review\"] }");
        assert_eq!(
            g.node("a").map(|n| n.classes()),
            Some(vec!["coding".into(), "critical".into(), "review".into()])
        );
    }

    #[test]
    fn typed_values_and_qualified_keys() {
        let g = ok(r#"digraph G {
            a [max_retries=3, goal_gate=true, timeout=15m, model=gpt-5.2-codex,
               human.default_choice="approve", temperature=0.5]
        }"#);
        let a = g.node("a").expect("a");
        assert_eq!(a.attrs.value("max_retries"), Some(&Value::Int(3)));
        assert_eq!(a.attrs.value("goal_gate"), Some(&Value::Bool(true)));
        assert_eq!(a.attrs.text("timeout").as_deref(), Some("15m"));
        assert_eq!(a.attrs.text("model").as_deref(), Some("gpt-5.2-codex"));
        assert_eq!(
            a.attrs.text("human.default_choice").as_deref(),
            Some("approve")
        );
        assert_eq!(a.attrs.value("temperature"), Some(&Value::Float(0.5)));
    }

    #[test]
    fn dotted_node_ids_read_bare_or_quoted() {
        // The ids of spliced imports; the printer quotes them for Graphviz.
        let g = ok(
            "digraph G {\n review.check [label=x]\n \"review.fix\" -> review.check\n stack.child_workflow = \"c.fabro\"\n}",
        );
        assert!(g.node("review.check").is_some_and(|n| n.declared));
        assert_eq!(
            g.edges
                .iter()
                .map(|e| (&*e.from, &*e.to))
                .collect::<Vec<_>>(),
            vec![("review.fix", "review.check")]
        );
        assert_eq!(
            g.attrs.text("stack.child_workflow").as_deref(),
            Some("c.fabro"),
            "a dotted word before `=` is still a graph attribute"
        );
        assert!(
            err("digraph G { \"my.node x\" }")
                .message
                .contains("quoted node ids")
        );
    }

    #[test]
    fn quoted_numbers_and_booleans_are_coerced_on_typed_attributes() {
        let g = ok(
            r#"digraph G { graph [max_node_visits="20"]; a [max_retries="3", goal_gate="true"] }"#,
        );
        assert_eq!(g.attrs.value("max_node_visits"), Some(&Value::Int(20)));
        let a = g.node("a").expect("a");
        assert_eq!(a.attrs.value("max_retries"), Some(&Value::Int(3)));
        assert_eq!(a.attrs.value("goal_gate"), Some(&Value::Bool(true)));
    }

    #[test]
    fn a_badly_typed_value_is_reported_where_it_stands() {
        let p = parse("digraph G {\n  a [max_retries=\"lots\"]\n}").expect("parses");
        let d = &p.diagnostics[0];
        assert_eq!(d.rule, ATTRIBUTE_TYPE);
        assert_eq!(at(d), (2, 18));
        assert!(d.message.contains("an integer"));
    }

    #[test]
    fn a_duration_without_unit_is_read_as_seconds_with_a_warning() {
        let p =
            parse("digraph G { graph [stall_timeout=\"300\"]; a [timeout=90] }").expect("parses");
        assert_eq!(p.graph.attrs.text("stall_timeout").as_deref(), Some("300s"));
        assert_eq!(
            p.graph
                .node("a")
                .and_then(|n| n.attrs.text("timeout"))
                .as_deref(),
            Some("90s")
        );
        assert_eq!(p.diagnostics.len(), 2);
        assert!(
            p.diagnostics
                .iter()
                .all(|d| d.rule == ATTRIBUTE_TYPE && !d.is_error())
        );
        let bad = parse("digraph G { a [timeout=soon] }").expect("parses");
        assert!(bad.diagnostics[0].is_error());
    }

    #[test]
    fn semicolons_are_optional() {
        let g = ok("digraph G { a; b [label=x]; a -> b; rankdir=LR; }");
        assert_eq!(g.edges.len(), 1);
    }

    #[test]
    fn undirected_and_strict_graphs_are_rejected() {
        let e = err("graph G { a -- b }");
        assert!(e.message.contains("undirected"));
        assert_eq!(at(&e), (1, 1));
        assert!(err("strict digraph G {}").message.contains("strict"));
    }

    #[test]
    fn several_graphs_are_rejected_at_the_second() {
        let e = err("digraph A {}\ndigraph B {}");
        assert!(e.message.contains("one graph"));
        assert_eq!(at(&e), (2, 1));
    }

    #[test]
    fn undirected_edge_is_rejected_at_the_operator() {
        let e = err("digraph G {\n  a -- b\n}");
        assert_eq!(at(&e), (2, 5));
    }

    #[test]
    fn ports_html_labels_and_quoted_ids_are_rejected() {
        assert!(err("digraph G { a:n -> b }").message.contains("ports"));
        assert!(err("digraph G { a [label=<b>] }").message.contains("HTML"));
        let e = err("digraph G {\n \"my node\" [label=x]\n}");
        assert!(e.message.contains("quoted node ids"));
        assert_eq!(at(&e), (2, 2));
        assert!(
            err("digraph G { a -> \"b\" }")
                .message
                .contains("quoted node ids")
        );
    }

    #[test]
    fn attributes_need_no_separator_as_in_graphviz() {
        let g = ok("digraph G { a [label=\"x\" shape=box]; b [label=y; shape=tab class=\"c\",] }");
        assert_eq!(text(&g, "a", "label").as_deref(), Some("x"));
        assert_eq!(g.node("a").map(|n| n.handler), Some(Handler::Agent));
        assert_eq!(g.node("b").map(|n| n.handler), Some(Handler::Prompt));
        assert_eq!(
            g.node("b").map(|n| n.classes()),
            Some(vec!["c".to_string()])
        );
        let e = err("digraph G { a [label=\"x\" shape] }");
        assert!(
            e.message.contains("expected `=` after attribute `shape`"),
            "{e:?}"
        );
    }

    /// Runs `f` on a thread with a small stack (512 KiB, a quarter of a
    /// tokio worker's): a loader that recursed once per `{` or per import
    /// would overflow it on the inputs below and abort the whole process.
    pub(crate) fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::Builder::new()
            .stack_size(512 * 1024)
            .spawn(f)
            .expect("spawn")
            .join()
            .expect("no stack overflow")
    }

    fn nested(levels: usize) -> String {
        format!(
            "digraph G {{ start -> exit\n{}\n{} }}",
            "{ ".repeat(levels),
            "} ".repeat(levels)
        )
    }

    #[test]
    fn subgraphs_nest_to_the_cap_and_no_deeper() {
        assert!(parse(&nested(MAX_NESTING)).is_ok());
        let e = err(&nested(MAX_NESTING + 1));
        assert_eq!(e.rule, NESTING_TOO_DEEP);
        assert!(e.message.contains("more than 256 levels"), "{e:?}");
        assert!(
            e.hint
                .as_deref()
                .is_some_and(|h| h.contains("opens level 257")),
            "{e:?}"
        );
        assert_eq!(at(&e), (2, 513), "at the `{{` that goes too deep");
    }

    #[test]
    fn a_hundred_thousand_nested_subgraphs_are_refused_on_a_small_stack() {
        let e = on_small_stack(|| match parse(&nested(100_000)) {
            Ok(_) => None,
            Err(e) => Some(*e),
        })
        .expect("refused");
        assert_eq!(e.rule, NESTING_TOO_DEEP);
    }

    #[test]
    fn copying_defaults_beyond_the_budget_is_refused() {
        // 10 nodes each get a copy of the defaults: fine at 100 KB, not at 1 KB.
        let src = format!(
            "digraph G {{ node [prompt=\"{}\"] {} }}",
            "p".repeat(500),
            (0..10)
                .map(|i| format!("n{i}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let fine = parse_within(&src, 100_000).expect("within the budget");
        assert!(fine.expanded >= 10 * 500, "{}", fine.expanded);
        let e = parse_within(&src, 1_000).expect_err("over the budget");
        assert_eq!(e.rule, EXPANSION_TOO_LARGE);
        assert!(e.message.contains("64 MiB"), "{e:?}");
    }

    #[test]
    fn subgraph_labels_on_many_nodes_count_against_the_budget() {
        let src = format!(
            "digraph G {{ {} {} {} }}",
            "{ label=\"Deep Loop\" ".repeat(50),
            (0..200)
                .map(|i| format!("n{i} n{i}"))
                .collect::<Vec<_>>()
                .join(" "),
            "} ".repeat(50)
        );
        let g = parse(&src).expect("parses").graph;
        assert_eq!(
            g.node("n7").map(|n| n.classes()),
            Some(vec!["deep-loop".to_string()]),
            "one class, however many scopes give it"
        );
        let e = parse_within(&src, 50_000).expect_err("50 scopes x 200 nodes is work");
        assert_eq!(e.rule, EXPANSION_TOO_LARGE);
    }

    #[test]
    fn unterminated_strings_and_comments_are_rejected() {
        assert!(
            err("digraph G { a [label=\"x] }")
                .message
                .contains("unterminated string")
        );
        assert!(
            err("digraph G { /* a }")
                .message
                .contains("unterminated block comment")
        );
    }

    #[test]
    fn trailing_content_is_rejected() {
        let e = err("digraph G { a }\nextra");
        assert!(e.message.contains("after the end of the graph"));
        assert_eq!(at(&e), (2, 1));
    }

    #[test]
    fn an_unclosed_graph_is_reported_at_the_end() {
        let e = err("digraph G {\n a -> b\n");
        assert!(e.message.contains("never closed"));
    }

    #[test]
    fn invalid_node_ids_suggest_a_fix() {
        let e = err("digraph G { run-tests -> b }");
        assert!(e.hint.as_deref().is_some_and(|h| h.contains("run_tests")));
    }

    #[test]
    fn a_missing_graph_name_is_reported() {
        assert!(err("digraph { a }").message.contains("needs a name"));
    }

    #[test]
    fn spans_point_at_nodes_edges_and_attributes() {
        let g = ok("digraph G {\n  a [label=\"A\"]\n  a -> b [weight=2]\n}");
        let a = g.node("a").expect("a");
        assert_eq!((a.span.line, a.span.column), (2, 3));
        let label = a.attrs.get("label").expect("label");
        assert_eq!((label.key_span.line, label.key_span.column), (2, 6));
        assert_eq!((label.value_span.line, label.value_span.column), (2, 12));
        let e = &g.edges[0];
        assert_eq!((e.span.line, e.span.column, e.to_span.column), (3, 3, 8));
        let w = e.attrs.get("weight").expect("weight");
        assert_eq!((w.key_span.line, w.key_span.column), (3, 11));
    }

    #[test]
    fn start_and_exit_are_found_by_id_without_shapes() {
        let g = ok("digraph G { start -> work -> End }");
        assert_eq!(g.start().map(|n| n.id.as_ref()), Some("start"));
        assert_eq!(g.exit().map(|n| n.id.as_ref()), Some("End"));
    }

    #[test]
    fn type_overrides_shape_including_legacy_aliases() {
        let g = ok(
            "digraph G { a [shape=box, type=\"tool\"]; b [type=one_shot]; c [type=agent_loop] }",
        );
        assert_eq!(g.node("a").map(|n| n.handler), Some(Handler::Command));
        assert_eq!(g.node("b").map(|n| n.handler), Some(Handler::Prompt));
        assert_eq!(g.node("c").map(|n| n.handler), Some(Handler::Agent));
    }

    #[test]
    fn keywords_are_case_insensitive() {
        let g = ok("DiGraph G { NODE [shape=tab]; a; Subgraph s { b } }");
        assert_eq!(g.node("a").map(|n| n.handler), Some(Handler::Prompt));
        assert!(g.node("b").is_some());
    }

    #[test]
    fn multiple_attribute_blocks_merge() {
        let g = ok("digraph G { a [label=x][shape=tab] }");
        assert_eq!(g.node("a").map(|n| n.handler), Some(Handler::Prompt));
    }
}
