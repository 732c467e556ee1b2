//! Edge condition expressions such as `outcome=succeeded && context.score > 80`.
//!
//! Grammar and meaning follow workflows/transitions.mdx ("Conditions") and
//! reference/dot-language.mdx ("Condition expressions"), plus parentheses for
//! grouping. [`parse`] is total: every input gives a [`Condition`] or a
//! [`ConditionError`], never a panic. [`Condition::evaluate`] is pure and
//! cannot fail: missing keys read as `""` and ill-typed comparisons are false.

use std::borrow::Cow;
use std::fmt;

use regex::Regex;
use serde_json::{Map, Value};

/// How deep parentheses may nest. Parentheses are the only source of recursion,
/// so this bounds the stack used by parsing, evaluation, `Display` and `Drop`.
const MAX_DEPTH: usize = 64;

/// A parsed condition, ready to be evaluated any number of times.
#[derive(Debug, Clone)]
pub struct Condition {
    expr: Expr,
}

#[derive(Debug, Clone)]
enum Expr {
    /// Two or more operands, none of them `Or` (nested ones are flattened).
    Or(Vec<Expr>),
    /// Two or more operands, none of them `And`.
    And(Vec<Expr>),
    /// Never wraps another `Not`: `!!x` is stored as `x`.
    Not(Box<Expr>),
    Clause(Clause),
}

#[derive(Debug, Clone)]
struct Clause {
    /// The key as written (`outcome`, `context.x`, `x`); resolved at evaluation.
    key: String,
    test: Test,
}

#[derive(Debug, Clone)]
enum Test {
    Truthy,
    Compare(Cmp, String),
    Contains(String),
    Matches(Regex),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmp {
    Eq,
    Ne,
    Gt,
    Lt,
    Ge,
    Le,
}

/// Symbolic operators, longest first so `!=` wins over a lone `=`.
const SYMBOL_OPS: [(&str, Cmp); 6] = [
    ("!=", Cmp::Ne),
    (">=", Cmp::Ge),
    ("<=", Cmp::Le),
    ("=", Cmp::Eq),
    (">", Cmp::Gt),
    ("<", Cmp::Lt),
];

/// Operators from other languages, rejected with a hint rather than read as
/// an operator followed by a surprising value (`a==b` would otherwise compare
/// `a` with `=b`).
const FOREIGN_OPS: [(&str, &str); 4] = [
    ("!==", "use != for inequality"),
    ("==", "use = for equality"),
    ("<>", "use != for inequality"),
    (
        "=~",
        "use `matches` for a regex, or quote a value that starts with ~",
    ),
];

const OPERATOR_LIST: &str = "operators are = != > < >= <= contains matches";

impl Cmp {
    fn symbol(self) -> &'static str {
        match self {
            Cmp::Eq => "=",
            Cmp::Ne => "!=",
            Cmp::Gt => ">",
            Cmp::Lt => "<",
            Cmp::Ge => ">=",
            Cmp::Le => "<=",
        }
    }
}

/// Why a condition failed to parse, with the byte range of `src` at fault.
///
/// `offset..offset + len` always lies within the source and on character
/// boundaries, so callers can slice it or map it to a line and column.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ConditionError {
    /// Byte offset into the condition source where the problem starts.
    pub offset: usize,
    /// Length in bytes of the offending text (0 only when `src` is empty).
    pub len: usize,
    /// Short, lowercase description, like rustc's.
    pub message: String,
    /// What to write instead, when there is something specific to say.
    pub hint: Option<String>,
}

/// An error without a hint; add one with [`ConditionError::with_hint`].
fn error(offset: usize, len: usize, message: impl Into<String>) -> ConditionError {
    ConditionError {
        offset,
        len,
        message: message.into(),
        hint: None,
    }
}

impl ConditionError {
    fn with_hint(self, hint: &str) -> Self {
        ConditionError {
            hint: Some(hint.to_string()),
            ..self
        }
    }
}

/// What a condition is evaluated against: one stage's result and the run context.
#[derive(Debug, Clone, Copy)]
pub struct Env<'a> {
    /// The stage outcome (`succeeded`, `failed`, ...; Attractor spellings accepted).
    pub outcome: &'a str,
    /// The label a human gate or routing directive chose; `""` when none.
    pub preferred_label: &'a str,
    /// The run context; keys are looked up verbatim (dotted names are flat keys).
    pub context: &'a Map<String, Value>,
}

/// Parses a condition expression.
///
/// Fails on an empty condition, a missing key or value, unbalanced parentheses,
/// an unterminated string, a dangling `&&`/`||`/`!`, trailing text, an invalid
/// `matches` regex (compiled here, so evaluation never fails) or parentheses
/// nested deeper than 64 levels. Never panics.
pub fn parse(src: &str) -> Result<Condition, ConditionError> {
    if src.trim().is_empty() {
        let hint = "write a condition such as `outcome=succeeded`, or remove the attribute";
        return Err(error(0, src.len(), "empty condition").with_hint(hint));
    }
    let mut parser = Parser { src, pos: 0 };
    let expr = parser.parse_or(0)?;
    parser.skip_ws();
    if !parser.rest().is_empty() {
        return Err(parser.unexpected());
    }
    Ok(Condition { expr })
}

impl Condition {
    /// Whether the condition holds in `env`. Pure; never fails.
    #[must_use]
    pub fn evaluate(&self, env: &Env<'_>) -> bool {
        self.expr.eval(env)
    }

    /// Whether the condition holds for a stage that ended `outcome`, whatever
    /// the context and the preferred label: `Some(true)` when it always
    /// does, `Some(false)` when it never does, `None` when it depends on
    /// them. Clauses on `outcome` are decided, every other clause is
    /// unknown (three-valued logic). For validation: which outcomes an
    /// edge set surely routes.
    #[must_use]
    pub fn given_outcome(&self, outcome: &str) -> Option<bool> {
        self.expr.given_outcome(outcome)
    }

    /// Every key referenced, as written, each once, in order of first use.
    #[must_use]
    pub fn keys(&self) -> Vec<&str> {
        let mut keys = Vec::new();
        self.expr.collect_keys(&mut keys);
        keys
    }
}

/// Prints a normalised form that [`parse`] reads back to an equivalent
/// condition: single spaces around `&&`, `||` and the ordering and word
/// operators, none around `=` and `!=`, only the parentheses precedence needs,
/// values quoted only when they must be, Attractor outcome spellings replaced.
impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.expr.fmt(f)
    }
}

// ---------------------------------------------------------------- parsing

struct Parser<'s> {
    src: &'s str,
    pos: usize,
}

fn is_key_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '.' | '-')
}

/// The text an error should quote: a whole word, or else one character.
fn token(s: &str) -> &str {
    let word = s.find(|c| !is_key_char(c)).unwrap_or(s.len());
    let end = if word > 0 {
        word
    } else {
        s.chars().next().map_or(0, char::len_utf8)
    };
    s.get(..end).unwrap_or(s)
}

/// Where a bare value ends: at whitespace, `&&`, `||`, or a `)` that does not
/// close a `(` inside the value (so `matches ^(a|b)$` works unquoted). Also
/// returns how many `(` were left open.
fn scan_bare(s: &str) -> (usize, usize) {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        let rest = s.get(i..).unwrap_or("");
        if c.is_whitespace() || rest.starts_with("&&") || rest.starts_with("||") {
            return (i, depth);
        }
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => return (i, 0),
            ')' => depth -= 1,
            _ => {}
        }
    }
    (s.len(), depth)
}

/// Maps Attractor's outcome spellings to Fabro's, leaving anything else alone.
fn normalise_outcome(s: &str) -> &str {
    match s {
        "success" => "succeeded",
        "fail" => "failed",
        "partial_success" => "partially_succeeded",
        other => other,
    }
}

impl<'s> Parser<'s> {
    fn rest(&self) -> &'s str {
        self.src.get(self.pos..).unwrap_or("")
    }

    fn skip_ws(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
    }

    /// Consumes `tok` if the input continues with it.
    fn eat(&mut self, tok: &str) -> bool {
        let found = self.rest().starts_with(tok);
        if found {
            self.pos += tok.len();
        }
        found
    }

    /// At a place where an operand has ended: the end, `&&`, `||` or `)`.
    fn at_boundary(&self) -> bool {
        let r = self.rest();
        r.is_empty() || r.starts_with("&&") || r.starts_with("||") || r.starts_with(')')
    }

    /// Checks that an operand follows the token `tok` that started at `at`.
    fn require_operand(&mut self, at: usize, tok: &str) -> Result<(), ConditionError> {
        self.skip_ws();
        if self.at_boundary() {
            return Err(error(
                at,
                tok.len(),
                format!("expected a condition after `{tok}`"),
            ));
        }
        Ok(())
    }

    fn parse_or(&mut self, depth: usize) -> Result<Expr, ConditionError> {
        let mut items = Vec::new();
        loop {
            match self.parse_and(depth)? {
                Expr::Or(inner) => items.extend(inner),
                e => items.push(e),
            }
            self.skip_ws();
            let at = self.pos;
            if !self.eat("||") {
                break;
            }
            self.require_operand(at, "||")?;
        }
        Ok(<[Expr; 1]>::try_from(items).map_or_else(Expr::Or, |[e]| e))
    }

    fn parse_and(&mut self, depth: usize) -> Result<Expr, ConditionError> {
        let mut items = Vec::new();
        loop {
            match self.parse_unary(depth)? {
                Expr::And(inner) => items.extend(inner),
                e => items.push(e),
            }
            self.skip_ws();
            let at = self.pos;
            if !self.eat("&&") {
                break;
            }
            self.require_operand(at, "&&")?;
        }
        Ok(<[Expr; 1]>::try_from(items).map_or_else(Expr::And, |[e]| e))
    }

    fn parse_unary(&mut self, depth: usize) -> Result<Expr, ConditionError> {
        // Bangs are counted in a loop, not by recursion, so `!!!…` cannot
        // exhaust the stack. `!=` here is a missing key, left to parse_clause.
        let mut negated = false;
        self.skip_ws();
        while !self.rest().starts_with("!=") && self.eat("!") {
            negated = !negated;
            self.require_operand(self.pos - 1, "!")?;
        }
        let open = self.pos;
        let expr = if self.eat("(") {
            if depth >= MAX_DEPTH {
                let hint = "nest parentheses at most 64 deep";
                return Err(error(open, 1, "parentheses nest too deeply").with_hint(hint));
            }
            self.require_operand(open, "(")?;
            let inner = self.parse_or(depth + 1)?;
            self.skip_ws();
            if self.rest().is_empty() {
                return Err(error(open, 1, "unclosed `(`").with_hint("add a matching `)`"));
            } else if !self.eat(")") {
                return Err(self.unexpected());
            }
            inner
        } else {
            let key = self.parse_key()?;
            let test = self.parse_test(&key)?;
            Expr::Clause(Clause { key, test })
        };
        Ok(match (negated, expr) {
            (false, e) => e,
            (true, Expr::Not(inner)) => *inner,
            (true, e) => Expr::Not(Box::new(e)),
        })
    }

    fn parse_key(&mut self) -> Result<String, ConditionError> {
        let rest = self.rest();
        let key = rest
            .get(..rest.find(|c| !is_key_char(c)).unwrap_or(rest.len()))
            .unwrap_or("");
        if key.is_empty() {
            return Err(self.expected_key());
        }
        if key == "context." {
            let hint = "write the context key, as in `context.tests_passed`";
            return Err(
                error(self.pos, key.len(), "expected a name after `context.`").with_hint(hint),
            );
        }
        self.pos += key.len();
        Ok(key.to_string())
    }

    /// Parses what follows a key: an operator and a value, or nothing (a
    /// truthiness check).
    fn parse_test(&mut self, key: &str) -> Result<Test, ConditionError> {
        self.skip_ws();
        let (at, rest) = (self.pos, self.rest());
        if let Some((bad, hint)) = FOREIGN_OPS.iter().find(|(bad, _)| rest.starts_with(bad)) {
            return Err(error(at, bad.len(), format!("`{bad}` is not an operator")).with_hint(hint));
        }
        let (op, cmp) = match SYMBOL_OPS.iter().find(|(sym, _)| rest.starts_with(sym)) {
            Some(&(sym, cmp)) => (sym, Some(cmp)),
            // The key scan was maximal, so a word here followed whitespace.
            None => match token(rest) {
                word @ ("contains" | "matches") => (word, None),
                _ if self.at_boundary() => return Ok(Test::Truthy),
                "&" | "|" | "and" | "or" | "AND" | "OR" => return Err(self.unexpected()),
                word => {
                    let msg = format!("expected an operator after `{key}`, found `{word}`");
                    return Err(error(at, word.len(), msg).with_hint(OPERATOR_LIST));
                }
            },
        };
        self.pos += op.len();
        if cmp.is_none() && !self.at_boundary() && !self.rest().starts_with(char::is_whitespace) {
            let msg = format!("expected a space after `{op}`");
            return Err(error(at, op.len(), msg));
        }
        self.skip_ws();
        if self.at_boundary() {
            let e = error(at, op.len(), format!("expected a value after `{op}`"));
            return Err(match cmp {
                Some(Cmp::Eq | Cmp::Ne) => {
                    e.with_hint("to compare with the empty string, write \"\"")
                }
                _ => e,
            });
        }

        let value_at = self.pos;
        let quoted = self.rest().starts_with('"');
        let mut value = if quoted {
            self.quoted()?
        } else {
            let (end, _) = scan_bare(self.rest());
            let bare = self.rest().get(..end).unwrap_or("").to_string();
            self.pos += end;
            bare
        };
        if op == "matches" {
            return Regex::new(&value).map(Test::Matches).map_err(|e| {
                let msg = format!("invalid regex: {}", regex_problem(&e));
                let e = error(value_at, self.pos - value_at, msg);
                // A bare regex stops at a space or `)`; say so when that may
                // be why it is incomplete.
                if quoted || self.rest().is_empty() {
                    return e;
                }
                e.with_hint("a bare regex ends at a space, `&&`, `||` or unmatched `)`; quote it")
            });
        }
        if key == "outcome" {
            value = normalise_outcome(&value).to_string();
        }
        Ok(match cmp {
            Some(cmp) => Test::Compare(cmp, value),
            None => Test::Contains(value),
        })
    }

    /// Reads a double-quoted string at `pos`. `\"` and `\\` are escapes; any
    /// other backslash is kept, so `"^v\d+"` means what it says.
    fn quoted(&mut self) -> Result<String, ConditionError> {
        let open = self.pos;
        let mut out = String::new();
        let mut chars = self.rest().char_indices().skip(1);
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.pos = open + i + 1;
                    return Ok(out);
                }
                '\\' => match chars.next() {
                    Some((_, e @ ('"' | '\\'))) => out.push(e),
                    Some((_, other)) => out.extend(['\\', other]),
                    None => break,
                },
                _ => out.push(c),
            }
        }
        let e = error(open, self.src.len() - open, "unterminated string");
        Err(e.with_hint("add a closing `\"`"))
    }

    /// The error for a clause that does not start with a key.
    fn expected_key(&self) -> ConditionError {
        let (at, rest) = (self.pos, self.rest());
        if let Some(op) = ["&&", "||"].into_iter().find(|op| rest.starts_with(op)) {
            return error(at, 2, format!("expected a condition before `{op}`"));
        }
        if rest.starts_with(')') {
            return self.unexpected();
        }
        let ops = ["!=", ">=", "<=", "==", "=", ">", "<"];
        if let Some(op) = ops.into_iter().find(|op| rest.starts_with(op)) {
            let hint = "write the key first, as in `outcome=succeeded`";
            return error(at, op.len(), format!("expected a key before `{op}`")).with_hint(hint);
        }
        if rest.starts_with('"') {
            return error(at, 1, "expected a key, found a string")
                .with_hint("write keys without quotes");
        }
        let tok = token(rest);
        let hint = "keys use letters, digits, `_`, `.` and `-`";
        error(at, tok.len(), format!("expected a key, found `{tok}`")).with_hint(hint)
    }

    /// The error for text left over where an operand has ended.
    fn unexpected(&self) -> ConditionError {
        let tok = token(self.rest());
        let hint = match tok {
            ")" => {
                return error(self.pos, 1, "unmatched `)`")
                    .with_hint("remove it, or add a `(` before it");
            }
            "&" | "|" => "use && or ||",
            "and" | "AND" => "use && for and",
            "or" | "OR" => "use || for or",
            _ => "join conditions with && or ||",
        };
        error(self.pos, tok.len(), format!("unexpected `{tok}`")).with_hint(hint)
    }
}

/// The one-line reason from a regex error (its `Display` is a multi-line
/// picture pointing into the pattern).
fn regex_problem(e: &regex::Error) -> String {
    match e {
        regex::Error::Syntax(s) => s
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("error: "))
            .unwrap_or("syntax error")
            .to_string(),
        regex::Error::CompiledTooBig(_) => "regex is too large".to_string(),
        other => other.to_string(),
    }
}

// ------------------------------------------------------------- evaluation

/// A key's value: plain text, or a context entry (absent when missing).
enum Found<'e> {
    Text(&'e str),
    Json(Option<&'e Value>),
}

impl<'e> Found<'e> {
    fn lookup(key: &str, env: &Env<'e>) -> Found<'e> {
        match key {
            "outcome" => Found::Text(normalise_outcome(env.outcome)),
            "preferred_label" => Found::Text(env.preferred_label),
            // `context.X` names context key `X`; Attractor also accepted the
            // literal key `context.X`, so fall back to it.
            _ => Found::Json(match key.strip_prefix("context.") {
                Some(name) => env.context.get(name).or_else(|| env.context.get(key)),
                None => env.context.get(key),
            }),
        }
    }

    /// Strings read as their text, null and missing as `""`, anything else
    /// as its JSON text (`true`, `3`, `["a"]`).
    fn text(&self) -> Cow<'e, str> {
        match *self {
            Found::Text(s) => Cow::Borrowed(s),
            Found::Json(Some(Value::String(s))) => Cow::Borrowed(s),
            Found::Json(None | Some(Value::Null)) => Cow::Borrowed(""),
            Found::Json(Some(other)) => Cow::Owned(other.to_string()),
        }
    }
}

/// A finite number, or `None`: `inf` and `NaN` stay strings so `nan=nan` holds.
fn number(s: &str) -> Option<f64> {
    s.parse::<f64>().ok().filter(|n| n.is_finite())
}

fn compare(cmp: Cmp, lhs: &str, rhs: &str) -> bool {
    let nums = number(lhs).zip(number(rhs));
    let equal = || nums.map_or(lhs == rhs, |(a, b)| a == b);
    match cmp {
        Cmp::Eq => equal(),
        Cmp::Ne => !equal(),
        Cmp::Gt => nums.is_some_and(|(a, b)| a > b),
        Cmp::Lt => nums.is_some_and(|(a, b)| a < b),
        Cmp::Ge => nums.is_some_and(|(a, b)| a >= b),
        Cmp::Le => nums.is_some_and(|(a, b)| a <= b),
    }
}

impl Expr {
    fn eval(&self, env: &Env<'_>) -> bool {
        match self {
            Expr::Or(items) => items.iter().any(|e| e.eval(env)),
            Expr::And(items) => items.iter().all(|e| e.eval(env)),
            Expr::Not(inner) => !inner.eval(env),
            Expr::Clause(clause) => clause.eval(env),
        }
    }

    fn given_outcome(&self, outcome: &str) -> Option<bool> {
        match self {
            Expr::Or(items) => {
                let mut all_false = true;
                for item in items {
                    match item.given_outcome(outcome) {
                        Some(true) => return Some(true),
                        Some(false) => {}
                        None => all_false = false,
                    }
                }
                all_false.then_some(false)
            }
            Expr::And(items) => {
                let mut all_true = true;
                for item in items {
                    match item.given_outcome(outcome) {
                        Some(false) => return Some(false),
                        Some(true) => {}
                        None => all_true = false,
                    }
                }
                all_true.then_some(true)
            }
            Expr::Not(inner) => inner.given_outcome(outcome).map(|b| !b),
            Expr::Clause(clause) if clause.key == "outcome" => {
                let context = Map::new();
                Some(clause.eval(&Env {
                    outcome,
                    preferred_label: "",
                    context: &context,
                }))
            }
            Expr::Clause(_) => None,
        }
    }

    fn collect_keys<'c>(&'c self, keys: &mut Vec<&'c str>) {
        match self {
            Expr::Or(items) | Expr::And(items) => items.iter().for_each(|e| e.collect_keys(keys)),
            Expr::Not(inner) => inner.collect_keys(keys),
            Expr::Clause(clause) => {
                if !keys.contains(&clause.key.as_str()) {
                    keys.push(&clause.key);
                }
            }
        }
    }
}

impl Clause {
    fn eval(&self, env: &Env<'_>) -> bool {
        let found = Found::lookup(&self.key, env);
        if let (Test::Contains(rhs), Found::Json(Some(Value::Array(items)))) = (&self.test, &found)
        {
            // Membership: strings compare as text, anything else by its JSON text.
            return items.iter().any(|item| match item {
                Value::String(s) => s == rhs,
                other => {
                    let json = other.to_string();
                    json == *rhs
                }
            });
        }
        let text = found.text();
        match &self.test {
            Test::Truthy => !text.is_empty() && text != "false" && text != "0",
            Test::Compare(cmp, rhs) => compare(*cmp, &text, rhs),
            Test::Contains(rhs) => text.contains(rhs.as_str()),
            Test::Matches(re) => re.is_match(&text),
        }
    }
}

// ---------------------------------------------------------------- display

/// A value, bare when it would read back unchanged, else quoted and escaped.
struct Literal<'a>(&'a str);

impl fmt::Display for Literal<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0;
        // A leading operator character could fuse with the operator (`a==b`).
        let bare = !s.starts_with(['"', '=', '!', '<', '>', '~']) && scan_bare(s) == (s.len(), 0);
        if bare && !s.is_empty() {
            return f.write_str(s);
        }
        f.write_str("\"")?;
        for c in s.chars() {
            if matches!(c, '"' | '\\') {
                f.write_str("\\")?;
            }
            write!(f, "{c}")?;
        }
        f.write_str("\"")
    }
}

fn join(f: &mut fmt::Formatter<'_>, items: &[Expr], sep: &str, group_or: bool) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(sep)?;
        }
        if group_or && matches!(item, Expr::Or(_)) {
            write!(f, "({item})")?;
        } else {
            write!(f, "{item}")?;
        }
    }
    Ok(())
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Or(items) => join(f, items, " || ", false),
            Expr::And(items) => join(f, items, " && ", true),
            Expr::Not(inner) if matches!(**inner, Expr::Clause(_)) => write!(f, "!{inner}"),
            Expr::Not(inner) => write!(f, "!({inner})"),
            Expr::Clause(c) => match &c.test {
                Test::Truthy => f.write_str(&c.key),
                Test::Compare(cmp @ (Cmp::Eq | Cmp::Ne), v) => {
                    write!(f, "{}{}{}", c.key, cmp.symbol(), Literal(v))
                }
                Test::Compare(cmp, v) => write!(f, "{} {} {}", c.key, cmp.symbol(), Literal(v)),
                Test::Contains(v) => write!(f, "{} contains {}", c.key, Literal(v)),
                Test::Matches(re) => write!(f, "{} matches {}", c.key, Literal(re.as_str())),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Evaluates `src` with the given outcome and context, no preferred label.
    fn holds_with(src: &str, outcome: &str, context: Value) -> bool {
        let Value::Object(context) = context else {
            panic!("context must be an object")
        };
        let env = Env {
            outcome,
            preferred_label: "",
            context: &context,
        };
        parse(src)
            .unwrap_or_else(|e| panic!("{src:?}: {e:?}"))
            .evaluate(&env)
    }

    fn holds(src: &str, context: Value) -> bool {
        holds_with(src, "succeeded", context)
    }

    #[test]
    fn a_condition_given_an_outcome_is_decided_only_by_its_outcome_clauses() {
        let given = |src: &str, outcome: &str| {
            parse(src)
                .unwrap_or_else(|e| panic!("{src:?}: {e:?}"))
                .given_outcome(outcome)
        };
        assert_eq!(given("outcome=success", "succeeded"), Some(true));
        assert_eq!(given("outcome=success", "failed"), Some(false));
        assert_eq!(given("outcome!=fail", "partially_succeeded"), Some(true));
        assert_eq!(
            given(
                "outcome=fail || outcome=partial_success",
                "partially_succeeded"
            ),
            Some(true)
        );
        assert_eq!(given("outcome=success && context.ok", "succeeded"), None);
        assert_eq!(
            given("outcome=success && context.ok", "failed"),
            Some(false)
        );
        assert_eq!(given("outcome=failed || context.ok", "succeeded"), None);
        assert_eq!(given("outcome=failed || context.ok", "failed"), Some(true));
        assert_eq!(given("!(outcome=skipped)", "skipped"), Some(false));
        assert_eq!(given("preferred_label=Fix", "succeeded"), None);
    }

    fn parse_err(src: &str) -> ConditionError {
        parse(src).map(|c| c.to_string()).expect_err(src)
    }

    /// Asserts that `src` fails with `message`, pointing exactly at `at`.
    fn fails(src: &str, at: &str, message: &str) {
        let e = parse_err(src);
        let pointed = src.get(e.offset..e.offset + e.len);
        assert_eq!(
            (pointed, e.message.as_str()),
            (Some(at), message),
            "{src:?}"
        );
    }

    fn hint(src: &str) -> String {
        parse_err(src).hint.unwrap_or_default()
    }

    #[test]
    fn outcome_equality_compares_the_stage_outcome() {
        assert!(holds_with("outcome=succeeded", "succeeded", json!({})));
        assert!(!holds_with("outcome=succeeded", "failed", json!({})));
        assert!(holds_with("outcome!=failed", "succeeded", json!({})));
        assert!(!holds_with("outcome!=failed", "failed", json!({})));
    }

    #[test]
    fn spaces_around_symbol_operators_are_optional() {
        for src in [
            "outcome=succeeded",
            "outcome = succeeded",
            " outcome =succeeded ",
        ] {
            assert!(holds(src, json!({})), "{src}");
        }
        assert!(holds("context.score > 80", json!({"score": 81})));
        assert!(holds("context.score>80", json!({"score": 81})));
    }

    #[test]
    fn and_binds_tighter_than_or() {
        // Read as (a && b) || c, which holds; a && (b || c) would not.
        assert!(holds("a=1 && b=1 || c=1", json!({"c": "1"})));
        assert!(holds("c=1 || a=1 && b=1", json!({"c": "1"})));
    }

    #[test]
    fn parentheses_group() {
        assert!(!holds("a=1 && (b=1 || c=1)", json!({"c": "1"})));
        assert!(holds("(a || b) && c", json!({"b": "x", "c": "y"})));
        assert!(!holds("(a || b) && c", json!({"b": "x"})));
        assert!(holds("((a))", json!({"a": "x"})));
    }

    #[test]
    fn bang_negates_and_may_repeat() {
        assert!(!holds("!outcome=succeeded", json!({})));
        assert!(holds("!!outcome=succeeded", json!({})));
        assert!(!holds("! ! !outcome=succeeded", json!({})));
        assert!(holds("!(a && b)", json!({"a": "x"})));
    }

    #[test]
    fn bare_key_is_a_truthiness_check() {
        for truthy in [json!("yes"), json!(true), json!(2), json!("0.0")] {
            assert!(
                holds("flag", json!({ "flag": truthy })),
                "{truthy} is truthy"
            );
        }
        for falsy in [
            json!(""),
            json!("false"),
            json!("0"),
            json!(false),
            json!(0),
            json!(null),
        ] {
            assert!(!holds("flag", json!({ "flag": falsy })), "{falsy} is falsy");
        }
        assert!(!holds("flag", json!({})));
    }

    #[test]
    fn missing_key_reads_as_empty() {
        assert!(holds(r#"missing="""#, json!({})));
        assert!(holds("missing!=x", json!({})));
        assert!(!holds("missing contains x", json!({})));
        assert!(!holds("preferred_label", json!({})));
    }

    #[test]
    fn null_reads_as_empty() {
        assert!(holds(r#"context.x="""#, json!({"x": null})));
    }

    #[test]
    fn context_prefix_and_shorthand_read_the_same_key() {
        assert!(holds(
            "context.tests_passed=true",
            json!({"tests_passed": true})
        ));
        assert!(holds("tests_passed=true", json!({"tests_passed": true})));
        // Attractor stored some keys with the prefix; those still resolve.
        assert!(holds("context.x=1", json!({"context.x": "1"})));
    }

    #[test]
    fn keys_may_contain_dots_dashes_and_digits() {
        let context =
            json!({"human.gate.selected": "A", "internal.node_visit_count": 3, "k-2_b": 1});
        assert!(holds("context.human.gate.selected=A", context.clone()));
        assert!(holds("internal.node_visit_count >= 3", context.clone()));
        assert!(holds("k-2_b", context));
    }

    #[test]
    fn json_bools_and_numbers_compare_as_their_text() {
        let context = json!({"ok": true, "n": 3, "list": ["a"]});
        assert!(holds("ok=true", context.clone()));
        assert!(holds("n=3", context.clone()));
        assert!(holds(r#"list="[\"a\"]""#, context));
    }

    #[test]
    fn ordering_operators_compare_numbers() {
        let context = json!({"score": 80, "count": "5"});
        assert!(holds("context.score >= 80", context.clone()));
        assert!(!holds("context.score > 80", context.clone()));
        assert!(holds("context.score <= 80.0", context.clone()));
        // As strings "5" > "10"; as numbers it is less.
        assert!(holds("context.count < 10", context));
        assert!(holds("n > -1.5", json!({"n": "-1"})));
    }

    #[test]
    fn ordering_with_a_non_number_is_false() {
        for src in [
            "s > 1",
            "s < 1",
            "s >= 1",
            "s <= 1",
            "missing < 1",
            "n > abc",
            "n <= abc",
        ] {
            assert!(!holds(src, json!({"s": "abc", "n": 5})), "{src}");
        }
        // Infinities and NaN are not numbers here.
        assert!(!holds("x > 1", json!({"x": "inf"})));
    }

    #[test]
    fn equality_is_numeric_when_both_sides_are_numbers() {
        assert!(holds("n=3.0", json!({"n": 3})));
        assert!(holds("n=1e2", json!({"n": "100"})));
        assert!(!holds("n!=3", json!({"n": "3.0"})));
        assert!(!holds("s=3", json!({"s": "three"})));
        assert!(holds("s=nan", json!({"s": "nan"})));
    }

    #[test]
    fn contains_checks_substring() {
        let context = json!({"log": "an error occurred"});
        assert!(holds("context.log contains error", context.clone()));
        assert!(!holds("context.log contains warning", context));
        assert!(holds("outcome contains succ", json!({})));
    }

    #[test]
    fn contains_checks_array_membership() {
        let context = json!({"tags": ["fast", "error-prone", 3, true, null]});
        for member in ["fast", "error-prone", "3", "true", "null"] {
            assert!(
                holds(&format!("tags contains {member}"), context.clone()),
                "{member}"
            );
        }
        // Membership, not a substring of an element or of the JSON text.
        assert!(!holds("tags contains error", context.clone()));
        assert!(!holds(r#"tags contains "\"fast\"""#, context));
    }

    #[test]
    fn matches_uses_a_regex_written_bare_or_quoted() {
        let context = json!({"version": "v2.1"});
        assert!(holds(r"context.version matches ^v\d+", context.clone()));
        assert!(holds(r"context.version matches ^v2\.", context.clone()));
        assert!(!holds(r"context.version matches ^v3\.", context.clone()));
        assert!(holds(r#"version matches "^v\d+\.\d$""#, context.clone()));
        assert!(holds(r"version matches ^(v1|v2)", context.clone()));
        assert!(holds(r"(version matches ^(v1|v2))", context));
    }

    #[test]
    fn quoted_values_allow_spaces_and_escapes() {
        assert!(holds(r#"msg="all good""#, json!({"msg": "all good"})));
        assert!(holds(r#"msg="say \"hi\"""#, json!({"msg": "say \"hi\""})));
        assert!(holds(r#"msg="a\\b""#, json!({"msg": "a\\b"})));
        assert!(holds(
            r#"msg="x && y" && ok"#,
            json!({"msg": "x && y", "ok": 1})
        ));
    }

    #[test]
    fn bare_values_end_at_whitespace_logical_operators_and_unmatched_paren() {
        assert!(holds("a=1&&b=2", json!({"a": "1", "b": "2"})));
        assert!(holds("a=x||b=2", json!({"b": "2"})));
        assert!(holds("(a=1)", json!({"a": "1"})));
        assert!(holds("a=f(x)", json!({"a": "f(x)"})));
        assert!(holds("a=b&c", json!({"a": "b&c"})));
    }

    #[test]
    fn attractor_outcome_spellings_match() {
        let pairs = [
            ("success", "succeeded"),
            ("fail", "failed"),
            ("partial_success", "partially_succeeded"),
        ];
        for (attractor, fabro) in pairs {
            assert!(holds_with(
                &format!("outcome={attractor}"),
                fabro,
                json!({})
            ));
            assert!(holds_with(
                &format!("outcome={fabro}"),
                attractor,
                json!({})
            ));
            assert!(holds_with(
                &format!("outcome={attractor}"),
                attractor,
                json!({})
            ));
        }
        assert!(!holds_with("outcome=success", "failed", json!({})));
        // Only the outcome key is normalised.
        assert!(!holds(
            "context.outcome=success",
            json!({"outcome": "succeeded"})
        ));
    }

    #[test]
    fn outcome_retry_parses_and_never_holds_since_no_stage_ends_with_it() {
        // Attractor's RETRY asks for another attempt; the engine never
        // leaves a stage with it, so no status ever equals it.
        for status in ["succeeded", "failed", "partially_succeeded", "skipped"] {
            assert!(!holds_with("outcome=retry", status, json!({})), "{status}");
            assert!(holds_with("outcome!=retry", status, json!({})), "{status}");
        }
    }

    #[test]
    fn preferred_label_compares_exactly() {
        let context = Map::new();
        let env = Env {
            outcome: "succeeded",
            preferred_label: "[A] Approve",
            context: &context,
        };
        let holds = |src: &str| parse(src).unwrap().evaluate(&env);
        assert!(holds(r#"preferred_label="[A] Approve""#));
        assert!(!holds(r#"preferred_label="[a] approve""#));
        assert!(!holds("preferred_label=Approve"));
    }

    #[test]
    fn word_operators_need_whitespace() {
        // Glued to the key, `contains` is part of the key name.
        assert_eq!(parse("xcontains").unwrap().keys(), ["xcontains"]);
        fails(
            "x containsy",
            "containsy",
            "expected an operator after `x`, found `containsy`",
        );
        fails(
            r"x matches^v",
            "matches",
            "expected a space after `matches`",
        );
        assert!(holds("contains contains s", json!({"contains": "is"})));
    }

    #[test]
    fn empty_condition_is_an_error() {
        for src in ["", "   ", "\t\n"] {
            fails(src, src, "empty condition");
        }
    }

    #[test]
    fn dangling_operator_points_at_the_operator() {
        fails("outcome=", "=", "expected a value after `=`");
        fails("x >= && y", ">=", "expected a value after `>=`");
        fails(
            "(x contains)",
            "contains",
            "expected a value after `contains`",
        );
        fails(
            "x matches   ",
            "matches",
            "expected a value after `matches`",
        );
        assert_eq!(
            hint("outcome= "),
            r#"to compare with the empty string, write """#
        );
    }

    #[test]
    fn missing_key_is_an_error() {
        fails("=x", "=", "expected a key before `=`");
        fails("a && !=x", "!=", "expected a key before `!=`");
        fails(r#""outcome"=x"#, "\"", "expected a key, found a string");
        fails("context.=x", "context.", "expected a name after `context.`");
        fails("a && @b", "@", "expected a key, found `@`");
    }

    #[test]
    fn unbalanced_parentheses_are_errors() {
        let e = parse_err("(a && (b)");
        assert_eq!((e.offset, e.message.as_str()), (0, "unclosed `(`"));
        let e = parse_err("a && b)");
        assert_eq!((e.offset, e.message.as_str()), (6, "unmatched `)`"));
        fails(")a", ")", "unmatched `)`");
        fails("()", "(", "expected a condition after `(`");
    }

    #[test]
    fn unterminated_quote_points_at_the_opening_quote() {
        fails(r#"a="abc"#, r#""abc"#, "unterminated string");
        fails(r#"a="abc\""#, r#""abc\""#, "unterminated string");
        fails(r#"a="abc\"#, r#""abc\"#, "unterminated string");
    }

    #[test]
    fn logical_operators_need_operands() {
        fails("a &&", "&&", "expected a condition after `&&`");
        fails("a || ", "||", "expected a condition after `||`");
        fails("a && || b", "&&", "expected a condition after `&&`");
        fails("|| b", "||", "expected a condition before `||`");
        fails("a && !", "!", "expected a condition after `!`");
    }

    #[test]
    fn trailing_garbage_is_an_error() {
        fails("outcome=succeeded extra", "extra", "unexpected `extra`");
        fails(r#"a="x"y"#, "y", "unexpected `y`");
        fails(
            "outcome succeeded",
            "succeeded",
            "expected an operator after `outcome`, found `succeeded`",
        );
        assert_eq!(hint("outcome succeeded"), OPERATOR_LIST);
    }

    #[test]
    fn single_ampersand_or_pipe_hints_at_the_logical_operator() {
        for src in ["a & b", "a | b", "a=1 & b=2"] {
            assert_eq!(hint(src), "use && or ||", "{src}");
        }
        assert_eq!(hint("a and b"), "use && for and");
        assert_eq!(hint("a or b"), "use || for or");
    }

    #[test]
    fn foreign_operators_hint_at_ours() {
        fails("outcome==succeeded", "==", "`==` is not an operator");
        assert_eq!(hint("outcome==succeeded"), "use = for equality");
        assert_eq!(hint("a <> b"), "use != for inequality");
        assert_eq!(hint("a !== b"), "use != for inequality");
        fails("a =~ ^v", "=~", "`=~` is not an operator");
    }

    #[test]
    fn invalid_regex_is_a_parse_error_at_the_regex() {
        let e = parse_err("context.v matches a(b && x");
        assert_eq!((e.offset, e.len), (18, 3));
        assert!(e.message.starts_with("invalid regex: "), "{}", e.message);
        assert!(!e.message.contains('\n'), "one line: {}", e.message);
        assert!(e.hint.is_some(), "a truncated bare regex gets a hint");
        assert_eq!(
            parse_err(r#"v matches "[a-""#).offset,
            10,
            "points at the quoted regex"
        );
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = format!("{}a{}", "(".repeat(10_000), ")".repeat(10_000));
        assert_eq!(parse_err(&deep).message, "parentheses nest too deeply");
        let ok = format!("{}a{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
        assert!(holds(&ok, json!({"a": "1"})));
        let bangs = format!("{}a", "!".repeat(100_001));
        assert!(holds(&bangs, json!({})), "an odd count of ! negates once");
    }

    #[test]
    fn parse_is_total_and_errors_point_inside_the_source() {
        let seeds = [
            r#"outcome=succeeded && (context.tags contains "a b" || !x matches ^v\d+) && n >= 3"#,
            "é=ü && ünïcode contains 日本 || 🙂 matches (",
            r#"a="\"" || !(!(b<>c"#,
        ];
        for seed in seeds {
            for (i, _) in seed.char_indices() {
                for piece in [&seed[..i], &seed[i..]] {
                    if let Err(e) = parse(piece) {
                        assert!(
                            piece.get(e.offset..e.offset + e.len).is_some(),
                            "{piece:?}: {e:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn display_is_normalised_and_reparses_to_itself() {
        let cases = [
            ("outcome = success", "outcome=succeeded"),
            ("a&&(b||c)", "a && (b || c)"),
            ("((a && b)) || c", "a && b || c"),
            ("a || (b || c)", "a || b || c"),
            ("!!a", "a"),
            ("!(a || b)", "!(a || b)"),
            ("score>80", "score > 80"),
            (r#"m="x y""#, r#"m="x y""#),
            (r#"m="=b""#, r#"m="=b""#),
            (r#"m="""#, r#"m="""#),
            (r#"m="f(""#, r#"m="f(""#),
            (r#"m="q\"\\""#, r#"m=q"\"#),
            (r"v matches ^v\d+", r"v matches ^v\d+"),
            (r#"v matches "a b""#, r#"v matches "a b""#),
            ("t contains x", "t contains x"),
        ];
        for (src, want) in cases {
            let shown = parse(src).unwrap().to_string();
            assert_eq!(shown, want, "display of {src:?}");
            assert_eq!(
                parse(&shown).unwrap().to_string(),
                shown,
                "re-parse of {shown:?}"
            );
        }
    }

    #[test]
    fn keys_lists_every_key_once_as_written() {
        let c = parse(
            "outcome=succeeded && (context.a > 1 || b) && !context.a contains x || preferred_label=A",
        );
        assert_eq!(
            c.unwrap().keys(),
            ["outcome", "context.a", "b", "preferred_label"]
        );
    }
}
