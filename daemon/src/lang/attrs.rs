//! The attributes the language knows, with their types, and the attribute
//! list carried by graphs, nodes and edges.
//!
//! The tables follow reference/dot-language.mdx plus the attributes other
//! reference pages add (`on_failure`, `output_schema`, human gate and
//! manager keys). Typed attributes coerce quoted spellings
//! (`max_retries="3"`); unknown ones get the `unknown_attribute` warning.

use std::sync::LazyLock;

use rustc_hash::FxHashMap;
use serde::Serialize;
use serde::ser::SerializeMap;

use super::span::Span;
use super::value::{Value, ValueType};

/// Where an attribute is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Graph,
    Node,
    Edge,
}

impl Scope {
    /// How the scope reads in a message.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            Scope::Graph => "graph",
            Scope::Node => "node",
            Scope::Edge => "edge",
        }
    }
}

use ValueType::{Bool, Duration, Float, Int, String as Text};

/// Attributes the workflow language reads, per scope, with their types.
const GRAPH_ATTRS: &[(&str, ValueType)] = &[
    ("goal", Text),
    ("label", Text),
    ("rankdir", Text),
    ("model_stylesheet", Text),
    ("default_max_retries", Int),
    ("retry_target", Text),
    ("fallback_retry_target", Text),
    ("default_fidelity", Text),
    ("default_thread", Text),
    ("max_node_visits", Int),
    ("stall_timeout", Duration),
    ("loop_restart_signature_limit", Int),
    ("on_failure", Text),
    ("selection", Text),
    ("retry_policy", Text),
    // Spending limits (docs/llm.md, "Budgets").
    ("budget_max_cost", Float),
    ("budget_max_tokens", Int),
    ("budget_warn_at", Float),
];

const NODE_ATTRS: &[(&str, ValueType)] = &[
    ("label", Text),
    ("shape", Text),
    ("type", Text),
    ("class", Text),
    ("timeout", Duration),
    ("max_visits", Int),
    ("max_retries", Int),
    ("retry_policy", Text),
    ("retry_target", Text),
    ("fallback_retry_target", Text),
    ("goal_gate", Bool),
    ("auto_status", Bool),
    ("allow_partial", Bool),
    ("on_failure", Text),
    ("selection", Text),
    ("prompt", Text),
    ("reasoning_effort", Text),
    ("max_tokens", Int),
    ("fidelity", Text),
    ("thread_id", Text),
    ("model", Text),
    ("provider", Text),
    ("speed", Text),
    ("project_memory", Bool),
    ("backend", Text),
    // External agents (`backend="acp"`, docs/agents.md).
    ("acp.command", Text),
    ("acp.agent", Text),
    ("acp.model", Text),
    ("acp.mode", Text),
    ("acp.permissions", Text),
    ("acp.stall_timeout", Duration),
    ("acp.permission_timeout", Duration),
    ("acp.permission_default", Text),
    // Headless CLI agents (`backend="cli"`, docs/agents.md).
    ("cli.agent", Text),
    ("cli.command", Text),
    ("cli.stall_timeout", Duration),
    ("output_schema", Text),
    ("output_retries", Int),
    // Agent stages (docs/agents.md): limits and the tools allowed.
    ("max_turns", Int),
    ("max_tool_rounds", Int),
    ("max_stage_tokens", Int),
    ("permissions", Text),
    ("script", Text),
    // The old name of `script` (the `tool_command_deprecated` rule).
    ("tool_command", Text),
    ("language", Text),
    ("join_policy", Text),
    ("max_parallel", Int),
    ("duration", Duration),
    ("import", Text),
    ("stack.child_workflow", Text),
    ("stack.child_dotfile", Text),
    ("stack.child_dot_source", Text),
    ("manager.poll_interval", Duration),
    ("manager.max_cycles", Int),
    ("manager.stop_condition", Text),
    ("human.default_choice", Text),
    ("temperature", Float),
];

const EDGE_ATTRS: &[(&str, ValueType)] = &[
    ("label", Text),
    ("condition", Text),
    ("weight", Int),
    ("fidelity", Text),
    ("thread_id", Text),
    ("loop_restart", Bool),
    ("freeform", Bool),
];

/// Attributes the Attractor spec spells differently, as `(scope, the spec's
/// name, Weft's name)` (issue 21; docs/language.md, "Coming from
/// Attractor"). The loader copies each to Weft's name when that is unset
/// ([`super::attractor`]) and the `attractor_spelling` rule notes it. They
/// are known names (no `unknown_attribute` warning) but never offered as
/// "did you mean" suggestions: a typo is pointed at Weft's own spelling.
pub(crate) const ATTRACTOR_SPELLINGS: &[(Scope, &str, &str)] = &[
    (Scope::Node, "llm_model", "model"),
    (Scope::Node, "llm_provider", "provider"),
    (Scope::Graph, "default_max_retry", "default_max_retries"),
];

/// Graphviz presentation attributes: accepted anywhere, read by nothing but
/// the renderer, never warned about.
const PRESENTATION: &[&str] = &[
    "arrowhead",
    "arrowsize",
    "arrowtail",
    "bgcolor",
    "center",
    "color",
    "colorscheme",
    "comment",
    "compound",
    "concentrate",
    "constraint",
    "dir",
    "fillcolor",
    "fixedsize",
    "fontcolor",
    "fontname",
    "fontsize",
    "group",
    "headlabel",
    "height",
    "id",
    "labelangle",
    "labeldistance",
    "labelfloat",
    "labelfontcolor",
    "labeljust",
    "labelloc",
    "layout",
    "margin",
    "minlen",
    "newrank",
    "nodesep",
    "ordering",
    "orientation",
    "pad",
    "pencolor",
    "penwidth",
    "peripheries",
    "rank",
    "ranksep",
    "ratio",
    "size",
    "sides",
    "splines",
    "style",
    "taillabel",
    "tooltip",
    "width",
    "xlabel",
];

/// What the language knows about one attribute name, across scopes.
struct KeyInfo {
    name: &'static str,
    /// The declared type in each scope (graph, node, edge), if read there.
    types: [Option<ValueType>; 3],
    presentation: bool,
}

/// Every known attribute name, built once. Looking a key up here is one
/// hash; the parser does it for every attribute, so it must be cheap.
static KNOWN: LazyLock<FxHashMap<&'static str, KeyInfo>> = LazyLock::new(|| {
    let mut map: FxHashMap<&'static str, KeyInfo> = FxHashMap::default();
    let blank = |name| KeyInfo {
        name,
        types: [None; 3],
        presentation: false,
    };
    for (scope, table) in [
        (Scope::Graph, GRAPH_ATTRS),
        (Scope::Node, NODE_ATTRS),
        (Scope::Edge, EDGE_ATTRS),
    ] {
        for &(name, ty) in table {
            map.entry(name).or_insert_with(|| blank(name)).types[scope as usize] = Some(ty);
        }
    }
    for &(scope, name, weft) in ATTRACTOR_SPELLINGS {
        let ty = table(scope)
            .iter()
            .find(|(k, _)| *k == weft)
            .map(|(_, ty)| *ty);
        map.entry(name).or_insert_with(|| blank(name)).types[scope as usize] = ty;
    }
    for &name in PRESENTATION {
        map.entry(name).or_insert_with(|| blank(name)).presentation = true;
    }
    map
});

/// How many slots [`SLOTS`] has: a power of two, several times the number
/// of known names, so that most lookups probe one slot.
const SLOT_COUNT: usize = 1024;

/// The known names again, by [`slot_of`] with linear probing: what
/// [`Key::new`] searches for every attribute the parser reads. Hashing
/// the length and three bytes costs a few instructions, where hashing the
/// whole name for [`KNOWN`] cost most of a lookup.
static SLOTS: LazyLock<Vec<Option<&'static KeyInfo>>> = LazyLock::new(|| {
    let mut slots: Vec<Option<&'static KeyInfo>> = vec![None; SLOT_COUNT];
    for info in KNOWN.values() {
        let mut at = slot_of(info.name.as_bytes());
        while slots[at].is_some() {
            at = (at + 1) % SLOT_COUNT;
        }
        slots[at] = Some(info);
    }
    slots
});

/// Where the search for `name` starts in [`SLOTS`].
fn slot_of(name: &[u8]) -> usize {
    let len = name.len();
    let byte = |i: usize| name.get(i).map_or(0, |&b| usize::from(b));
    let mixed = len.wrapping_mul(0x9E37)
        ^ byte(0).wrapping_mul(0x61)
        ^ byte(len / 2).wrapping_mul(0x1F3)
        ^ byte(len.wrapping_sub(1)).wrapping_mul(0x3B5);
    (mixed ^ (mixed >> 10)) % SLOT_COUNT
}

/// The table entry of a known name.
fn known(name: &str) -> Option<&'static KeyInfo> {
    let slots: &'static [Option<&'static KeyInfo>] = &SLOTS;
    let mut at = slot_of(name.as_bytes());
    // The table is never full, so an empty slot ends every search.
    for _ in 0..SLOT_COUNT {
        match slots.get(at).copied().flatten() {
            None => return None,
            Some(info) if info.name.len() == name.len() && info.name == name => {
                return Some(info);
            }
            Some(_) => at = (at + 1) % SLOT_COUNT,
        }
    }
    None
}

fn table(scope: Scope) -> &'static [(&'static str, ValueType)] {
    match scope {
        Scope::Graph => GRAPH_ATTRS,
        Scope::Node => NODE_ATTRS,
        Scope::Edge => EDGE_ATTRS,
    }
}

/// The declared type of `key` in `scope`, if the language reads it there.
#[must_use]
pub(crate) fn declared_type(scope: Scope, key: &str) -> Option<ValueType> {
    KNOWN.get(key).and_then(|info| info.types[scope as usize])
}

/// True when `key` is meaningful in `scope` (read by Weft or by Graphviz).
#[must_use]
pub fn is_known(scope: Scope, key: &str) -> bool {
    KNOWN
        .get(key)
        .is_some_and(|info| info.presentation || info.types[scope as usize].is_some())
}

/// Every attribute name the language reads in `scope`, for suggestions.
pub fn names(scope: Scope) -> impl Iterator<Item = &'static str> {
    table(scope).iter().map(|(k, _)| *k)
}

/// An attribute name. Known names point into the static table, so the
/// hundreds of thousands of attributes in a large workflow share a few
/// dozen strings, and carry what the table says about them, so checks need
/// no lookup. Sixteen bytes: a workflow holds one per attribute.
#[derive(Clone)]
pub struct Key(KeyName);

#[derive(Clone)]
enum KeyName {
    Known(&'static KeyInfo),
    /// A name the language does not know (the `unknown_attribute` rule
    /// warns). Boxed twice so that the common case stays one pointer wide.
    #[allow(clippy::redundant_allocation)]
    Other(Box<Box<str>>),
}

impl Key {
    /// The key for `name`, interned when the language knows it.
    #[must_use]
    pub fn new(name: &str) -> Key {
        match known(name) {
            Some(info) => Key(KeyName::Known(info)),
            None => Key(KeyName::Other(Box::new(name.into()))),
        }
    }

    fn info(&self) -> Option<&'static KeyInfo> {
        match &self.0 {
            KeyName::Known(info) => Some(info),
            KeyName::Other(_) => None,
        }
    }

    /// A number naming a known key (its table entry's address), for
    /// indexes keyed by attribute; `None` for names the language does not
    /// know.
    #[must_use]
    pub(crate) fn id(&self) -> Option<usize> {
        self.info().map(|info| std::ptr::from_ref(info) as usize)
    }

    /// The name as the static table spells it, for known keys.
    #[must_use]
    pub(crate) fn static_name(&self) -> Option<&'static str> {
        self.info().map(|info| info.name)
    }

    /// The name.
    #[must_use]
    pub fn as_str(&self) -> &str {
        match &self.0 {
            KeyName::Known(info) => info.name,
            KeyName::Other(name) => name,
        }
    }

    /// True when both name the same attribute: known keys compare by their
    /// table entry (one pointer), the others by text.
    fn same(&self, other: &Key) -> bool {
        match (&self.0, &other.0) {
            (KeyName::Known(a), KeyName::Known(b)) => std::ptr::eq(*a, *b),
            (KeyName::Other(a), KeyName::Other(b)) => a == b,
            // Every known name is interned, so an unknown one differs.
            _ => false,
        }
    }

    /// The declared type of this attribute in `scope` (see [`declared_type`]).
    #[must_use]
    pub(crate) fn declared_type(&self, scope: Scope) -> Option<ValueType> {
        self.info().and_then(|info| info.types[scope as usize])
    }

    /// True when the attribute is meaningful in `scope` (see [`is_known`]).
    #[must_use]
    pub fn is_known(&self, scope: Scope) -> bool {
        self.info()
            .is_some_and(|info| info.presentation || info.types[scope as usize].is_some())
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.same(other)
    }
}

impl Eq for Key {}

impl std::hash::Hash for Key {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

// Hashes as the `str` it names, so indexes keyed by `Key` look up by `&str`.
impl std::borrow::Borrow<str> for Key {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl std::ops::Deref for Key {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq<str> for Key {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Key {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl From<&str> for Key {
    fn from(name: &str) -> Key {
        Key::new(name)
    }
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One `key=value` as written, with where the key and the value stand.
#[derive(Debug, Clone, PartialEq)]
pub struct Attr {
    pub key: Key,
    pub value: Value,
    pub key_span: Span,
    pub value_span: Span,
}

/// An ordered attribute list: one entry per key, the later write winning.
///
/// A `Vec` rather than a map: nodes carry a handful of attributes, and a
/// linear scan over a few entries beats hashing at 100k-node scale. A list
/// that grows past [`INDEX_FROM`] entries gets a hash index as well, so
/// that setting or finding a key stays constant-time and a node written
/// with 20,000 attributes loads in linear time.
#[derive(Clone, Default)]
pub struct Attrs {
    list: Vec<Attr>,
    /// Position of each key in `list`, kept only for long lists.
    index: Option<Box<FxHashMap<Key, usize>>>,
}

/// The length from which an attribute list keeps a hash index.
const INDEX_FROM: usize = 32;

impl PartialEq for Attrs {
    fn eq(&self, other: &Attrs) -> bool {
        self.list == other.list
    }
}

impl std::fmt::Debug for Attrs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(&self.list).finish()
    }
}

impl Attrs {
    /// An empty list.
    #[must_use]
    pub fn new() -> Self {
        Attrs::default()
    }

    fn position(&self, key: &str) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(key).copied(),
            // Length and first byte before the text: most keys of a list
            // differ in one of them, and a call to `memcmp` per entry was a
            // visible share of validating a large graph.
            None => {
                let first = key.as_bytes().first();
                self.list.iter().position(|a| {
                    let name = a.key.as_str();
                    name.len() == key.len() && name.as_bytes().first() == first && name == key
                })
            }
        }
    }

    /// The position of `key`: known keys compare by their table entry (one
    /// pointer), the others by text.
    fn position_of_key(&self, key: &Key) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(key.as_str()).copied(),
            None => self.list.iter().position(|a| a.key.same(key)),
        }
    }

    /// Sets an attribute, replacing an earlier value of the same key.
    pub fn set(&mut self, attr: Attr) {
        if let Some(i) = self.position_of_key(&attr.key) {
            self.list[i] = attr;
            return;
        }
        if let Some(index) = &mut self.index {
            index.insert(attr.key.clone(), self.list.len());
        }
        self.list.push(attr);
        if self.index.is_none() && self.list.len() > INDEX_FROM {
            let index = self
                .list
                .iter()
                .enumerate()
                .map(|(i, a)| (a.key.clone(), i))
                .collect();
            self.index = Some(Box::new(index));
        }
    }

    /// Moves every attribute into a new list of exactly their number,
    /// leaving this one empty with its capacity (a reusable buffer).
    pub(crate) fn take_exact(&mut self) -> Attrs {
        let index = self.index.take();
        let mut list = Vec::with_capacity(self.list.len());
        // One copy of the whole block rather than a move per entry.
        list.append(&mut self.list);
        Attrs { list, index }
    }

    /// Adds every attribute of `other`, later wins.
    pub fn merge(&mut self, other: Attrs) {
        if self.list.is_empty() {
            *self = other;
            return;
        }
        for attr in other.list {
            self.set(attr);
        }
    }

    /// The attribute named `key`.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&Attr> {
        self.position(key).map(|i| &self.list[i])
    }

    /// Roughly how many bytes a copy of the list occupies: the entries, the
    /// text they own, and the index of a long list. Loading charges copies
    /// (node defaults, chained edges) against a budget with it.
    #[must_use]
    pub fn weight(&self) -> u64 {
        let entries: usize = self
            .list
            .iter()
            .map(|a| {
                let key = if a.key.static_name().is_some() {
                    0
                } else {
                    a.key.len()
                };
                let value = a.value.as_str().map_or(0, str::len);
                std::mem::size_of::<Attr>() + key + value
            })
            .sum();
        // An index entry: the key, the position, and the table's control
        // byte and spare capacity.
        let index = self.index.as_ref().map_or(0, |_| {
            self.list.len() * (std::mem::size_of::<(Key, usize)>() * 2 + 1)
        });
        (entries + index) as u64
    }

    /// The value of `key`.
    #[must_use]
    pub fn value(&self, key: &str) -> Option<&Value> {
        self.get(key).map(|a| &a.value)
    }

    /// The value of `key` as text (typed values in their written form).
    #[must_use]
    pub fn text(&self, key: &str) -> Option<std::borrow::Cow<'_, str>> {
        self.value(key).map(Value::as_text)
    }

    /// The value of `key` as text, when set and not blank.
    #[must_use]
    pub(crate) fn non_empty(&self, key: &str) -> Option<std::borrow::Cow<'_, str>> {
        self.text(key).filter(|t| !t.trim().is_empty())
    }

    /// True when `key` is set.
    #[must_use]
    pub fn contains(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The attributes in the order they were first set.
    pub fn iter(&self) -> std::slice::Iter<'_, Attr> {
        self.list.iter()
    }

    /// Mutable access, for passes that rewrite values (templates, `@file`).
    /// Keys must not be changed through it (long lists index them).
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, Attr> {
        self.list.iter_mut()
    }

    /// Number of attributes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// True when there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

impl Serialize for Attrs {
    /// A JSON object `{key: value}` in declaration order.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.list.len()))?;
        for attr in &self.list {
            map.serialize_entry(attr.key.as_str(), &attr.value)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_write_wins_and_keeps_first_position() {
        let mut attrs = Attrs::new();
        let at = |k: &str, v: i64| Attr {
            key: Key::new(k),
            value: Value::Int(v),
            key_span: Span::default(),
            value_span: Span::default(),
        };
        attrs.set(at("a", 1));
        attrs.set(at("b", 2));
        attrs.set(at("a", 3));
        let keys: Vec<_> = attrs
            .iter()
            .map(|a| (a.key.as_str(), a.value.as_int()))
            .collect();
        assert_eq!(keys, vec![("a", Some(3)), ("b", Some(2))]);
    }

    #[test]
    fn a_long_list_keeps_first_positions_and_later_values_through_its_index() {
        let at = |k: String, v: i64| Attr {
            key: Key::new(&k),
            value: Value::Int(v),
            key_span: Span::default(),
            value_span: Span::default(),
        };
        let mut attrs = Attrs::new();
        for i in 0..100 {
            attrs.set(at(format!("k{i}"), i));
        }
        attrs.set(at("k5".into(), -5));
        attrs.set(at("label".into(), 1));
        assert_eq!(attrs.len(), 101);
        assert_eq!(attrs.value("k5"), Some(&Value::Int(-5)));
        assert_eq!(attrs.value("k99"), Some(&Value::Int(99)));
        assert_eq!(attrs.iter().nth(5).map(|a| a.key.as_str()), Some("k5"));
        assert_eq!(attrs.iter().last().map(|a| a.key.as_str()), Some("label"));
        let mut copy = Attrs::new();
        copy.set(at("k0".into(), 7));
        copy.merge(attrs.clone());
        assert_eq!(copy, attrs, "a merge onto a short list gives the same list");
        let moved = attrs.take_exact();
        assert!(attrs.is_empty() && attrs.get("k1").is_none());
        assert_eq!(moved.value("k1"), Some(&Value::Int(1)));
    }

    #[test]
    fn keys_and_values_stay_small_since_a_workflow_holds_one_per_attribute() {
        assert_eq!(std::mem::size_of::<Key>(), 16);
        assert_eq!(std::mem::size_of::<Value>(), 24);
        let known = Key::new("label");
        let other = Key::new("lable");
        assert!(known == Key::new("label") && other == Key::new("lable"));
        assert!(known != other && other.static_name().is_none());
        assert_eq!((known.as_str(), other.as_str()), ("label", "lable"));
    }

    #[test]
    fn every_known_name_is_found_by_its_slot_and_no_other_name_is() {
        for (name, info) in KNOWN.iter() {
            assert!(
                known(name).is_some_and(|found| std::ptr::eq(found, info)),
                "{name}"
            );
        }
        for name in ["", "labe", "labels", "x", "acp.", "human.default_choic"] {
            assert!(known(name).is_none(), "{name}");
        }
    }

    #[test]
    fn typed_attributes_are_declared_per_scope() {
        assert_eq!(
            declared_type(Scope::Node, "max_retries"),
            Some(ValueType::Int)
        );
        assert_eq!(declared_type(Scope::Edge, "weight"), Some(ValueType::Int));
        assert_eq!(
            declared_type(Scope::Graph, "stall_timeout"),
            Some(ValueType::Duration)
        );
        assert_eq!(declared_type(Scope::Edge, "max_retries"), None);
        assert!(is_known(Scope::Node, "fillcolor"));
    }
}
