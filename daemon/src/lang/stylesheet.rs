//! Model stylesheets: the CSS-like `model_stylesheet` graph attribute that
//! assigns models, providers and settings to nodes by selector
//! (fabro-docs/workflows/stylesheets.mdx, tutorials/multi-model.mdx).
//!
//! Grammar; whitespace (including newlines) is free between tokens:
//!
//! ```text
//! stylesheet  := rule*
//! rule        := selector ("," selector)* "{" (declaration? ";")* declaration? "}"
//! selector    := "*" | shape | "." class | "#" id
//! declaration := property ":" value
//! value       := bare-word | '"' chars '"'      // bare: [A-Za-z0-9._:/-]+
//! ```
//!
//! `llm_model` and `llm_provider`, the Attractor spec's names for `model`
//! and `provider`, are read as those (recorded for a note, never an error).
//!
//! The spec says CSS comments are not supported, so `/* */` is an error with
//! a hint rather than silently accepted or mis-parsed as a value.

use std::fmt;

/// A parse error. `offset` and `len` are byte positions in the stylesheet
/// string (always on char boundaries), so the caller can map them back into
/// the workflow file; `len` is 0 when the problem is the end of input.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct StylesheetError {
    pub offset: usize,
    pub len: usize,
    pub message: String,
    /// What to do about it, when there is something specific to say.
    pub hint: Option<String>,
}

impl StylesheetError {
    fn new(offset: usize, len: usize, message: impl Into<String>) -> Self {
        StylesheetError {
            offset,
            len,
            message: message.into(),
            hint: None,
        }
    }

    fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

/// A parsed stylesheet: its rules in source order (order breaks ties).
/// Two stylesheets are equal when their rules are: how a property was spelt
/// is not part of what it means (a printed stylesheet uses Weft's names and
/// parses back equal).
#[derive(Debug, Clone, Default)]
pub struct Stylesheet {
    pub rules: Vec<Rule>,
    /// Properties written with the Attractor spec's name (`llm_model`), in
    /// source order, for the `attractor_spelling` rule's notes.
    pub attractor_spellings: Vec<AttractorSpelling>,
}

impl PartialEq for Stylesheet {
    fn eq(&self, other: &Stylesheet) -> bool {
        self.rules == other.rules
    }
}

/// A property written with the Attractor spec's name: where (byte
/// positions in the stylesheet string, as [`StylesheetError`]'s), as what,
/// and the property it names.
#[derive(Debug, Clone, PartialEq)]
pub struct AttractorSpelling {
    pub offset: usize,
    pub len: usize,
    pub written: &'static str,
    pub property: Property,
}

/// One selector and its declarations. A selector list `a, .b { ... }` parses
/// into one `Rule` per selector, each with the same declarations.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub selector: Selector,
    pub declarations: Vec<Declaration>,
}

/// Which nodes a rule applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// `*`: every node.
    Universal,
    /// A bare Graphviz shape name such as `box`: nodes with that shape.
    Shape(String),
    /// `.name`: nodes whose space-separated `class` attribute includes `name`.
    Class(String),
    /// `#name`: the node with that id.
    Id(String),
}

/// One `property: value` pair. `value` is unquoted and unescaped.
#[derive(Debug, Clone, PartialEq)]
pub struct Declaration {
    pub property: Property,
    pub value: String,
}

/// The properties a stylesheet may set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Property {
    Model,
    Provider,
    ReasoningEffort,
    Speed,
    Backend,
    /// How an external agent's permission requests are answered
    /// (docs/agents.md).
    AcpPermissions,
}

impl Property {
    /// Every property, in the order [`Stylesheet::resolve`] reports them.
    pub const ALL: [Property; 6] = [
        Property::Model,
        Property::Provider,
        Property::ReasoningEffort,
        Property::Speed,
        Property::Backend,
        Property::AcpPermissions,
    ];

    /// The name written in stylesheets (`reasoning_effort`, ...).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Property::Model => "model",
            Property::Provider => "provider",
            Property::ReasoningEffort => "reasoning_effort",
            Property::Speed => "speed",
            Property::Backend => "backend",
            Property::AcpPermissions => "acp.permissions",
        }
    }

    /// The property with exactly this name; names are case-sensitive.
    #[must_use]
    pub(crate) fn from_name(name: &str) -> Option<Property> {
        Property::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The property the Attractor spec names `name` (§8.2 has `llm_model`
    /// and `llm_provider`; `reasoning_effort` is spelt alike), with that
    /// name as a static string.
    #[must_use]
    pub(crate) fn from_attractor_name(name: &str) -> Option<(Property, &'static str)> {
        match name {
            "llm_model" => Some((Property::Model, "llm_model")),
            "llm_provider" => Some((Property::Provider, "llm_provider")),
            _ => None,
        }
    }

    /// The only values the property accepts, or `None` when any value goes
    /// (models and providers are checked against the catalog elsewhere).
    #[must_use]
    pub(crate) fn allowed_values(self) -> Option<&'static [&'static str]> {
        match self {
            Property::Model | Property::Provider => None,
            Property::ReasoningEffort => Some(&["low", "medium", "high"]),
            Property::Speed => Some(&["fast", "normal"]),
            Property::Backend => Some(&["api", "acp", "cli"]),
            Property::AcpPermissions => Some(&["allow", "deny", "ask"]),
        }
    }

    /// Position in [`Property::ALL`], which lists the variants in declaration
    /// order.
    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Selector {
    /// CSS-like specificity: universal 0 < shape 1 < class 2 < id 3.
    #[must_use]
    pub(crate) fn specificity(&self) -> u8 {
        match self {
            Selector::Universal => 0,
            Selector::Shape(_) => 1,
            Selector::Class(_) => 2,
            Selector::Id(_) => 3,
        }
    }

    /// Whether a node with this id, shape and classes is selected. Names
    /// compare exactly (case-sensitive). `shape` is the node's effective
    /// shape, so a node with no `shape` attribute should be passed `box`.
    #[must_use]
    pub fn matches(&self, id: &str, shape: &str, classes: &[String]) -> bool {
        match self {
            Selector::Universal => true,
            Selector::Shape(s) => s == shape,
            Selector::Class(c) => classes.iter().any(|k| k == c),
            Selector::Id(i) => i == id,
        }
    }
}

impl Stylesheet {
    /// The winning value of each property for a node, in [`Property::ALL`]
    /// order; properties no matching rule sets are absent.
    ///
    /// Decided per property: the matching declaration with the highest
    /// selector specificity wins, and among equals the later one in the
    /// stylesheet wins (so a later `.b { model: x }` leaves an earlier
    /// `.a { reasoning_effort: high }` in force). Explicit node attributes
    /// override all of this; that is the caller's job.
    #[must_use]
    pub fn resolve(&self, id: &str, shape: &str, classes: &[String]) -> Vec<(Property, &str)> {
        let mut best: [Option<(u8, &str)>; Property::ALL.len()] = [None; Property::ALL.len()];
        for rule in self
            .rules
            .iter()
            .filter(|r| r.selector.matches(id, shape, classes))
        {
            let specificity = rule.selector.specificity();
            for d in &rule.declarations {
                let slot = &mut best[d.property.index()];
                // `>=`, not `>`: a later rule of equal specificity wins.
                if slot.is_none_or(|(s, _)| specificity >= s) {
                    *slot = Some((specificity, d.value.as_str()));
                }
            }
        }
        Property::ALL
            .into_iter()
            .zip(best)
            .filter_map(|(p, b)| b.map(|(_, v)| (p, v)))
            .collect()
    }
}

/// Parses a stylesheet. Never panics, whatever the input.
///
/// # Errors
///
/// The first syntax error, unknown property or disallowed value, with its
/// byte position and usually a hint.
pub fn parse(src: &str) -> Result<Stylesheet, StylesheetError> {
    Parser {
        src,
        pos: 0,
        attractor_spellings: Vec::new(),
    }
    .stylesheet()
}

const SELECTOR_KINDS: &str = "a selector (`*`, a shape, `.class` or `#id`)";
const COMMENT_HINT: &str = "stylesheets do not support comments; remove it";

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

fn is_bare_value_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | ':' | '/')
}

/// A recursive-descent parser. `pos` only ever moves by whole chars, so every
/// slice taken from `src` is on a char boundary; `get` guards it anyway.
struct Parser<'a> {
    src: &'a str,
    pos: usize,
    attractor_spellings: Vec<AttractorSpelling>,
}

impl<'a> Parser<'a> {
    fn rest(&self) -> &'a str {
        self.src.get(self.pos..).unwrap_or("")
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn take_while(&mut self, keep: impl Fn(char) -> bool) -> &'a str {
        let start = self.pos;
        while self.peek().is_some_and(&keep) {
            self.bump();
        }
        self.src.get(start..self.pos).unwrap_or("")
    }

    /// Skips whitespace, refusing comments where they would otherwise start.
    fn skip_ws(&mut self) -> Result<(), StylesheetError> {
        self.take_while(char::is_whitespace);
        let rest = self.rest();
        if rest.starts_with("/*") {
            let len = rest.find("*/").map_or(rest.len(), |i| i + 2);
            return Err(
                StylesheetError::new(self.pos, len, "comments are not supported")
                    .with_hint(COMMENT_HINT),
            );
        }
        Ok(())
    }

    /// "expected X, found Y" at the current position.
    fn unexpected(&self, expected: &str) -> StylesheetError {
        match self.peek() {
            None => {
                StylesheetError::new(self.pos, 0, format!("expected {expected}, found the end"))
            }
            Some(c) => {
                let err = StylesheetError::new(
                    self.pos,
                    c.len_utf8(),
                    format!("expected {expected}, found `{c}`"),
                );
                // `//` is not a comment either; say so rather than "found `/`".
                if self.rest().starts_with("//") {
                    err.with_hint(COMMENT_HINT)
                } else {
                    err
                }
            }
        }
    }

    fn stylesheet(&mut self) -> Result<Stylesheet, StylesheetError> {
        let mut rules = Vec::new();
        self.skip_ws()?;
        while self.peek().is_some() {
            let selectors = self.selectors()?;
            let declarations = self.block()?;
            for selector in selectors {
                rules.push(Rule {
                    selector,
                    declarations: declarations.clone(),
                });
            }
            self.skip_ws()?;
        }
        Ok(Stylesheet {
            rules,
            attractor_spellings: std::mem::take(&mut self.attractor_spellings),
        })
    }

    /// One or more comma-separated selectors, stopping before the `{`.
    fn selectors(&mut self) -> Result<Vec<Selector>, StylesheetError> {
        let mut selectors = vec![self.selector()?];
        loop {
            self.skip_ws()?;
            match self.peek() {
                Some('{') => return Ok(selectors),
                Some(',') => {
                    self.bump();
                    self.skip_ws()?;
                    selectors.push(self.selector()?);
                }
                Some(c) if c == '*' || c == '.' || c == '#' || is_name_char(c) => {
                    return Err(self.unexpected("`{` or `,` after the selector").with_hint(
                        "a rule takes one simple selector (`*`, a shape, `.class` or `#id`); \
                         compound and descendant selectors are not supported; \
                         list several selectors with `,`",
                    ));
                }
                _ => return Err(self.unexpected("`{` after the selector")),
            }
        }
    }

    fn selector(&mut self) -> Result<Selector, StylesheetError> {
        let (make, what): (fn(String) -> Selector, &str) = match self.peek() {
            Some('*') => {
                self.bump();
                return Ok(Selector::Universal);
            }
            Some(c) if c.is_alphabetic() || c == '_' => {
                return Ok(Selector::Shape(self.take_while(is_name_char).to_owned()));
            }
            Some('.') => (Selector::Class, "a class name after `.`"),
            Some('#') => (Selector::Id, "a node id after `#`"),
            _ => return Err(self.unexpected(SELECTOR_KINDS)),
        };
        let id = self.peek() == Some('#');
        self.bump();
        // Ids may be dotted (`#review.check`, a node an import spliced in):
        // there are no compound selectors for the dot to mean.
        let name = if id {
            self.take_while(|c| is_name_char(c) || c == '.')
        } else {
            self.take_while(is_name_char)
        };
        match name {
            "" => Err(self.unexpected(what)),
            name => Ok(make(name.to_owned())),
        }
    }

    /// A `{ ... }` block, from the `{` through the `}`.
    fn block(&mut self) -> Result<Vec<Declaration>, StylesheetError> {
        let open = self.pos;
        self.bump();
        let mut declarations = Vec::new();
        loop {
            self.skip_ws()?;
            match self.peek() {
                None => {
                    return Err(StylesheetError::new(
                        open,
                        1,
                        "unclosed `{`: the block has no `}`",
                    )
                    .with_hint("add `}` after the last declaration"));
                }
                Some('}') => {
                    self.bump();
                    return Ok(declarations);
                }
                // Empty declarations (`;;`) are harmless, as in CSS.
                Some(';') => {
                    self.bump();
                }
                Some(_) => {
                    let declaration = self.declaration()?;
                    self.skip_ws()?;
                    // `}` and the end of input are dealt with on the next turn.
                    if !matches!(self.peek(), Some(';' | '}') | None) {
                        let what =
                            format!("`;` or `}}` after the value of `{}`", declaration.property);
                        return Err(self.unexpected(&what).with_hint(
                            "end each declaration with `;`; \
                             quote values that contain spaces or other characters",
                        ));
                    }
                    declarations.push(declaration);
                }
            }
        }
    }

    fn declaration(&mut self) -> Result<Declaration, StylesheetError> {
        let start = self.pos;
        // Dotted, as `acp.permissions` is.
        let name = self.take_while(|c| is_name_char(c) || c == '.');
        if name.is_empty() {
            return Err(self.unexpected("a property name"));
        }
        let spelt = Property::from_attractor_name(name);
        if let Some((property, written)) = spelt {
            self.attractor_spellings.push(AttractorSpelling {
                offset: start,
                len: name.len(),
                written,
                property,
            });
        }
        let Some(property) = Property::from_name(name).or(spelt.map(|(p, _)| p)) else {
            let names = Property::ALL.map(Property::name);
            let err = StylesheetError::new(start, name.len(), format!("unknown property `{name}`"));
            return Err(match suggest(name, &names) {
                Some(close) => err.with_hint(format!("did you mean `{close}`?")),
                None => err.with_hint(format!("known properties: {}", names.join(", "))),
            });
        };
        self.skip_ws()?;
        if self.peek() != Some(':') {
            return Err(self.unexpected(&format!("`:` after `{name}`")));
        }
        self.bump();
        self.skip_ws()?;
        let value = self.value(property)?;
        Ok(Declaration { property, value })
    }

    /// A bare word or a quoted string, checked against the property's allowed
    /// values.
    fn value(&mut self, property: Property) -> Result<String, StylesheetError> {
        let start = self.pos;
        let value = match self.peek() {
            Some('"') => self.quoted()?,
            Some(c) if is_bare_value_char(c) => {
                // Stop before `/*` so the comment is reported as one, not as
                // a stray `*` after a value such as `a/`.
                while self.peek().is_some_and(is_bare_value_char) && !self.rest().starts_with("/*")
                {
                    self.bump();
                }
                self.src.get(start..self.pos).unwrap_or("").to_owned()
            }
            _ => return Err(self.unexpected(&format!("a value for `{property}`"))),
        };
        let len = self.pos - start;
        if value.trim().is_empty() {
            return Err(
                StylesheetError::new(start, len, format!("empty value for `{property}`"))
                    .with_hint("give a value or remove the declaration"),
            );
        }
        let rejects = |allowed: &&[&str]| !allowed.contains(&value.as_str());
        if let Some(allowed) = property.allowed_values().filter(rejects) {
            let accepts = format!("`{property}` accepts `{}`", allowed.join("`, `"));
            let hint = match suggest(&value, allowed) {
                Some(close) => format!("did you mean `{close}`? {accepts}"),
                None => accepts,
            };
            let message = format!("invalid value `{value}` for `{property}`");
            return Err(StylesheetError::new(start, len, message).with_hint(hint));
        }
        Ok(value)
    }

    /// A double-quoted string; `\"` and `\\` are the only escapes, any other
    /// backslash is kept as written.
    fn quoted(&mut self) -> Result<String, StylesheetError> {
        let open = self.pos;
        self.bump();
        let mut value = String::new();
        loop {
            match self.bump() {
                None => {
                    return Err(StylesheetError::new(open, 1, "unterminated string")
                        .with_hint("close the value with `\"`"));
                }
                Some('"') => return Ok(value),
                Some('\\') => match self.peek() {
                    Some(c @ ('"' | '\\')) => {
                        self.bump();
                        value.push(c);
                    }
                    _ => value.push('\\'),
                },
                Some(c) => value.push(c),
            }
        }
    }
}

/// The candidate closest to `word` (case-insensitively), if it is close
/// enough to be what the user meant: a small edit distance, or one name
/// containing the other (`effort` for `reasoning_effort`).
fn suggest(word: &str, candidates: &[&'static str]) -> Option<&'static str> {
    let word = word.to_lowercase();
    let by_distance = candidates
        .iter()
        .map(|&c| (edit_distance(&word, c), c))
        .filter(|&(d, c)| d <= (c.len() / 3).max(2))
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c);
    by_distance.or_else(|| {
        let contained = |c: &&str| word.len() >= 3 && (c.contains(&word) || word.contains(*c));
        candidates.iter().copied().find(contained)
    })
}

/// Levenshtein distance in chars: insertions, deletions and substitutions.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut row = Vec::with_capacity(b.len() + 1);
        row.push(i + 1);
        for (j, &cb) in b.iter().enumerate() {
            let substitute = prev[j] + usize::from(ca != cb);
            row.push(substitute.min(prev[j + 1] + 1).min(row[j] + 1));
        }
        prev = row;
    }
    prev[b.len()]
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Selector::Universal => f.write_str("*"),
            Selector::Shape(s) => f.write_str(s),
            Selector::Class(c) => write!(f, ".{c}"),
            Selector::Id(i) => write!(f, "#{i}"),
        }
    }
}

impl fmt::Display for Declaration {
    /// `property: value`, quoting the value only when it is not a bare word.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = &self.value;
        if !v.is_empty() && v.chars().all(is_bare_value_char) && !v.contains("/*") {
            write!(f, "{}: {v}", self.property)
        } else {
            let escaped = v.replace('\\', "\\\\").replace('"', "\\\"");
            write!(f, "{}: \"{escaped}\"", self.property)
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {{", self.selector)?;
        for d in &self.declarations {
            write!(f, " {d};")?;
        }
        f.write_str(" }")
    }
}

impl fmt::Display for Stylesheet {
    /// One rule per line (selector lists written out as separate rules);
    /// parsing the output gives back an equal `Stylesheet`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, rule) in self.rules.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{rule}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn attractor_property_names_read_as_weft_properties_and_are_recorded() {
        let src = "* { llm_model: claude-sonnet-4-5; llm_provider: anthropic; }\n#x { model: m; }";
        let sheet = parse(src).expect("parses");
        assert_eq!(
            sheet.resolve("y", "box", &[]),
            vec![
                (Property::Model, "claude-sonnet-4-5"),
                (Property::Provider, "anthropic")
            ]
        );
        let spelt: Vec<_> = sheet
            .attractor_spellings
            .iter()
            .map(|s| (&src[s.offset..s.offset + s.len], s.written, s.property))
            .collect();
        assert_eq!(
            spelt,
            vec![
                ("llm_model", "llm_model", Property::Model),
                ("llm_provider", "llm_provider", Property::Provider)
            ]
        );
        let printed = sheet.to_string();
        assert!(printed.contains("model: claude-sonnet-4-5"), "{printed}");
        assert_eq!(
            parse(&printed),
            Ok(sheet),
            "prints Weft's names, parses back equal"
        );
    }

    const DOCS_EXAMPLE: &str = "
        *            { model: claude-haiku-4-5;reasoning_effort: low; }
        box          { reasoning_effort: high; }
        tab          { reasoning_effort: low; }
        .coding      { model: claude-sonnet-4-5;reasoning_effort: high; }
        .review      { model: gemini-3.1-pro-preview;}
        #final_check { model: claude-opus-4-6;reasoning_effort: high; }
    ";

    fn classes(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| (*s).to_owned()).collect()
    }

    /// The model `src` gives node `id`, or "" when none.
    fn model(src: &str, id: &str, shape: &str, class: &[&str]) -> String {
        let sheet = parse(src).unwrap();
        let resolved = sheet.resolve(id, shape, &classes(class));
        let found = resolved.into_iter().find(|(p, _)| *p == Property::Model);
        found.map_or_else(String::new, |(_, v)| v.to_owned())
    }

    fn decl(property: Property, value: &str) -> Declaration {
        Declaration {
            property,
            value: value.to_owned(),
        }
    }

    fn first_value(src: &str) -> String {
        parse(src).unwrap().rules[0].declarations[0].value.clone()
    }

    fn err(src: &str) -> StylesheetError {
        parse(src).expect_err("the stylesheet should be rejected")
    }

    fn hint(src: &str) -> String {
        err(src).hint.unwrap_or_default()
    }

    /// The source text the error points at.
    fn pointed_at(src: &str) -> &str {
        let e = err(src);
        &src[e.offset..e.offset + e.len]
    }

    #[test]
    fn parses_the_documented_example() {
        let sheet = parse(DOCS_EXAMPLE).unwrap();
        let selectors: Vec<String> = sheet.rules.iter().map(|r| r.selector.to_string()).collect();
        assert_eq!(
            selectors,
            ["*", "box", "tab", ".coding", ".review", "#final_check"]
        );
        let coding = [
            decl(Property::Model, "claude-sonnet-4-5"),
            decl(Property::ReasoningEffort, "high"),
        ];
        assert_eq!(sheet.rules[3].declarations, coding);
    }

    #[test]
    fn id_beats_class_beats_shape_beats_universal() {
        // Written most-specific first so source order cannot be what decides.
        let src = "#n { model: id } .c { model: class } box { model: shape } * { model: any }";
        assert_eq!(model(src, "n", "box", &["c"]), "id");
        assert_eq!(model(src, "m", "box", &["c"]), "class");
        assert_eq!(model(src, "m", "box", &[]), "shape");
        assert_eq!(model(src, "m", "tab", &[]), "any");
    }

    #[test]
    fn an_external_agent_s_permission_policy_is_a_dotted_property_with_known_values() {
        let sheet = parse(".agents { backend: acp; acp.permissions: ask; }").unwrap();
        assert_eq!(
            sheet.rules[0].declarations,
            [
                decl(Property::Backend, "acp"),
                decl(Property::AcpPermissions, "ask")
            ]
        );
        assert!(
            err("* { acp.permissions: sometimes; }")
                .message
                .contains("acp.permissions")
        );
        assert_eq!(
            hint("* { acp.permision: ask; }"),
            "did you mean `acp.permissions`?"
        );
    }

    #[test]
    fn an_id_selector_may_be_dotted_to_name_a_spliced_node() {
        let src = "#review.check { model: spliced } * { model: any }";
        assert_eq!(model(src, "review.check", "box", &[]), "spliced");
        assert_eq!(model(src, "review", "box", &["check"]), "any");
    }

    #[test]
    fn later_rule_wins_a_tie() {
        let src = ".a { model: first } .b { model: second }";
        assert_eq!(model(src, "n", "box", &["a", "b"]), "second");
        assert_eq!(
            model(src, "n", "box", &["b", "a"]),
            "second",
            "class order is irrelevant"
        );
        assert_eq!(
            model("* { model: x; model: y }", "n", "box", &[]),
            "y",
            "in one block too"
        );
    }

    #[test]
    fn specificity_is_decided_per_property() {
        let sheet = parse(
            "* { provider: anthropic; speed: fast }
             .a { reasoning_effort: high } .b { model: x } #n { provider: openai }",
        )
        .unwrap();
        let resolved = sheet.resolve("n", "box", &classes(&["a", "b"]));
        let expected = [
            (Property::Model, "x"),
            (Property::Provider, "openai"),
            (Property::ReasoningEffort, "high"),
            (Property::Speed, "fast"),
        ];
        assert_eq!(
            resolved, expected,
            "each property has its own winner, in ALL order"
        );
    }

    #[test]
    fn a_node_without_matching_rules_resolves_to_nothing() {
        let sheet = parse("#other { model: x } .c { model: y } hexagon { model: z }").unwrap();
        assert!(sheet.resolve("n", "box", &classes(&["d"])).is_empty());
    }

    #[test]
    fn selector_list_expands_to_one_rule_per_selector() {
        let sheet = parse("tab, .fast ,#n{speed:fast}").unwrap();
        let rule = |selector| Rule {
            selector,
            declarations: vec![decl(Property::Speed, "fast")],
        };
        let expected = [
            rule(Selector::Shape("tab".into())),
            rule(Selector::Class("fast".into())),
            rule(Selector::Id("n".into())),
        ];
        assert_eq!(sheet.rules, expected);
        assert!(
            err("a, { model: x }").message.contains("a selector"),
            "trailing comma"
        );
    }

    #[test]
    fn whitespace_is_free_and_the_last_semicolon_optional() {
        let compact = parse("*{model:a;backend:cli}.c{model:b}").unwrap();
        let spread = "\n\t*\n{\n model :\ta ;\n backend: cli;\n}\n\n.c {\n model: b;\n}\n";
        assert_eq!(compact, parse(spread).unwrap());
        assert_eq!(compact.rules.len(), 2);
    }

    #[test]
    fn empty_stylesheet_and_empty_block_are_valid() {
        assert_eq!(parse("").unwrap().rules, []);
        assert_eq!(parse("  \n ").unwrap().rules, []);
        let sheet = parse("box {} .c { ; ; }").unwrap();
        assert_eq!(sheet.rules.len(), 2);
        assert!(sheet.rules.iter().all(|r| r.declarations.is_empty()));
    }

    #[test]
    fn model_ids_with_dots_slashes_and_colons_are_bare_words() {
        for id in [
            "gpt-5.2-codex",
            "openrouter/meta-llama/llama-3.1",
            "ollama:qwen3_8b",
        ] {
            assert_eq!(first_value(&format!("* {{ model: {id} }}")), id);
        }
    }

    #[test]
    fn quoted_values_allow_spaces_and_escapes() {
        let src = r#"* { model: "my model \"x\" \\ \n"; }"#;
        assert_eq!(first_value(src), r#"my model "x" \ \n"#);
        assert_eq!(first_value(r#"* { backend: "cli" }"#), "cli");
        assert!(
            hint(r#"* { backend: "CLI" }"#).contains("accepts"),
            "quoted values are checked"
        );
    }

    #[test]
    fn unknown_property_suggests_the_closest() {
        let src = "* { model: x; reasoning-effort: high }";
        assert_eq!(err(src).message, "unknown property `reasoning-effort`");
        assert_eq!(hint(src), "did you mean `reasoning_effort`?");
        assert_eq!(pointed_at(src), "reasoning-effort");
        assert_eq!(hint("* { modle: x }"), "did you mean `model`?");
        assert_eq!(hint("* { Provider: x }"), "did you mean `provider`?");
        assert_eq!(
            hint("* { effort: high }"),
            "did you mean `reasoning_effort`?"
        );
    }

    #[test]
    fn unknown_property_without_a_close_match_lists_the_known_ones() {
        let known =
            "known properties: model, provider, reasoning_effort, speed, backend, acp.permissions";
        assert_eq!(hint("* { temperature: 0.2 }"), known);
    }

    #[test]
    fn comments_are_rejected_with_a_hint() {
        for (src, comment) in [
            ("/* defaults */ * { model: x }", "/* defaults */"),
            ("* { model: x; /* cheap */ }", "/* cheap */"),
            ("* { model: claude/* no */; }", "/* no */"),
            ("* { model: x } /* unterminated", "/* unterminated"),
        ] {
            assert_eq!(hint(src), COMMENT_HINT, "{src}");
            assert_eq!(pointed_at(src), comment, "the whole comment is pointed at");
        }
        assert_eq!(hint("// line\n* {}"), COMMENT_HINT);
    }

    #[test]
    fn enumerated_properties_reject_other_values() {
        let src = "* { reasoning_effort: extreme }";
        assert_eq!(
            err(src).message,
            "invalid value `extreme` for `reasoning_effort`"
        );
        assert_eq!(
            hint(src),
            "`reasoning_effort` accepts `low`, `medium`, `high`"
        );
        assert_eq!(pointed_at(src), "extreme");
        let clii = "did you mean `cli`? `backend` accepts `api`, `acp`, `cli`";
        assert_eq!(hint("* { backend: clii }"), clii);
        assert_eq!(
            hint("* { speed: slow }"),
            "`speed` accepts `fast`, `normal`"
        );
        assert!(parse("* { speed: normal; backend: api; reasoning_effort: medium }").is_ok());
    }

    #[test]
    fn error_offsets_point_at_the_offending_byte() {
        // A multi-byte char before the error checks offsets are bytes, not chars.
        assert_eq!(pointed_at("#é { model: x } box { model x }"), "x");
        assert_eq!(pointed_at("* { model: x }\n}"), "}");
        assert_eq!(pointed_at("* { model: ; }"), ";");
        assert_eq!(pointed_at("* { model: a b }"), "b");
        assert_eq!(pointed_at("* { model: \"\" }"), "\"\"");
        assert_eq!(pointed_at("* { model: x } ≠"), "≠");
        let e = err("* { model: x");
        assert_eq!(
            (e.offset, e.len),
            (2, 1),
            "an unclosed block points at its `{{`"
        );
        let e = err("* { model: \"x }");
        assert_eq!(
            (e.offset, e.len),
            (11, 1),
            "an unterminated string points at its quote"
        );
        let e = err("* { model");
        assert_eq!(
            (e.offset, e.len),
            (9, 0),
            "the end of input is an empty span at the end"
        );
        assert_eq!(e.message, "expected `:` after `model`, found the end");
    }

    #[test]
    fn compound_selectors_are_rejected_with_a_hint() {
        for src in [
            "box.coding { model: a }",
            "box .coding { model: a }",
            "* * {}",
        ] {
            assert!(hint(src).contains("one simple selector"), "{src}");
        }
        assert_eq!(pointed_at("box.coding { model: a }"), ".");
    }

    #[test]
    fn display_round_trips_through_parse() {
        let src = format!(
            r#"{DOCS_EXAMPLE} a, #b {{}} .q {{ model: "with space"; provider: "a\"b\\c" }}
               .odd {{ model: "x/*y" }}"#
        );
        let sheet = parse(&src).unwrap();
        let text = sheet.to_string();
        assert_eq!(parse(&text).unwrap(), sheet, "reparsing:\n{text}");
        assert!(text.starts_with("* { model: claude-haiku-4-5; reasoning_effort: low; }\nbox {"));
        assert!(
            text.contains("\na { }\n#b { }\n"),
            "selector lists come out as separate rules"
        );
    }

    #[test]
    fn edit_distance_counts_single_char_edits() {
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("model", "model"), 0);
        assert_eq!(edit_distance("modle", "model"), 2);
    }

    /// What holds for any input: no panic; an error's span lies inside the
    /// text on char boundaries; a success round-trips through Display.
    fn check_invariants(src: &str) {
        match parse(src) {
            Ok(sheet) => assert_eq!(parse(&sheet.to_string()), Ok(sheet)),
            Err(e) => assert!(
                src.get(e.offset..e.offset + e.len).is_some(),
                "{e:?} in {src:?}"
            ),
        }
    }

    proptest! {
        #[test]
        fn parse_never_panics_on_arbitrary_text(src in any::<String>()) {
            check_invariants(&src);
        }

        #[test]
        fn parse_never_panics_on_stylesheet_like_text(
            tokens in prop::collection::vec(prop::sample::select(vec![
                "*", "box", ".c", "#n", ",", "{", "}", ":", ";", " ", "\n", "model", "speed",
                "backend", "fast", "cli", "a/b", "\"", "\\", "/*", "*/", "//", "é", "x.y",
            ]), 0..24)
        ) {
            check_invariants(&tokens.concat());
        }
    }
}
