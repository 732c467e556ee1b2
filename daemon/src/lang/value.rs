//! Attribute values and their types.

use std::fmt;

use serde::{Serialize, Serializer};

/// The unit a duration was written with; kept so printing preserves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DurationUnit {
    Millis,
    Seconds,
    Minutes,
    Hours,
    Days,
}

impl DurationUnit {
    fn suffix(self) -> &'static str {
        match self {
            DurationUnit::Millis => "ms",
            DurationUnit::Seconds => "s",
            DurationUnit::Minutes => "m",
            DurationUnit::Hours => "h",
            DurationUnit::Days => "d",
        }
    }

    fn millis(self) -> u64 {
        match self {
            DurationUnit::Millis => 1,
            DurationUnit::Seconds => 1_000,
            DurationUnit::Minutes => 60_000,
            DurationUnit::Hours => 3_600_000,
            DurationUnit::Days => 86_400_000,
        }
    }
}

/// A duration as written: `250ms`, `30s`, `15m`, `2h`, `1d`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Duration {
    pub amount: u64,
    pub unit: DurationUnit,
}

impl Duration {
    /// Parses `<digits><unit>`; `None` for anything else (including overflow).
    #[must_use]
    pub fn parse(text: &str) -> Option<Duration> {
        let digits_end = text.find(|c: char| !c.is_ascii_digit())?;
        if digits_end == 0 {
            return None;
        }
        let (digits, suffix) = text.split_at(digits_end);
        let unit = match suffix {
            "ms" => DurationUnit::Millis,
            "s" => DurationUnit::Seconds,
            "m" => DurationUnit::Minutes,
            "h" => DurationUnit::Hours,
            "d" => DurationUnit::Days,
            _ => return None,
        };
        let amount: u64 = digits.parse().ok()?;
        amount.checked_mul(unit.millis())?;
        Some(Duration { amount, unit })
    }

    /// The length as a [`std::time::Duration`].
    #[must_use]
    pub(crate) fn to_std(self) -> std::time::Duration {
        std::time::Duration::from_millis(self.amount.saturating_mul(self.unit.millis()))
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.amount, self.unit.suffix())
    }
}

/// The text of a string value: shared and immutable. The parser hands
/// every short value it reads more than once the same allocation (a large
/// workflow repeats its shapes, classes, edge labels and conditions on
/// thousands of nodes), and a copy of a value costs a reference count.
pub type Text = std::sync::Arc<str>;

/// A typed attribute value.
///
/// Bare words are typed by their spelling (`42`, `3.5`, `true`, `30s`,
/// `LR`); quoted strings stay strings unless the attribute has a declared
/// type, in which case they are coerced (`max_retries="3"` is the integer 3).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A quoted string (or a bare value coerced to string).
    Str(Text),
    Int(i64),
    Float(f64),
    Bool(bool),
    Duration(Duration),
    /// A bare identifier or bare string such as `LR` or `gpt-5.2-codex`.
    Word(Text),
}

/// The declared type of a known attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueType {
    String,
    Int,
    Float,
    Bool,
    Duration,
}

impl ValueType {
    /// How the type reads in an error message.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            ValueType::String => "a string",
            ValueType::Int => "an integer",
            ValueType::Float => "a number",
            ValueType::Bool => "`true` or `false`",
            ValueType::Duration => "a duration such as `30s`, `15m` or `250ms`",
        }
    }
}

impl Value {
    /// Types a bare word by its spelling.
    #[must_use]
    pub(crate) fn from_word(word: &str) -> Value {
        Value::typed_word(word).unwrap_or_else(|| Value::Word(word.into()))
    }

    /// The value a bare word spells when it is not text: a boolean, a
    /// number or a duration.
    #[must_use]
    pub(crate) fn typed_word(word: &str) -> Option<Value> {
        match word {
            "true" => return Some(Value::Bool(true)),
            "false" => return Some(Value::Bool(false)),
            _ => {}
        }
        let first = word.as_bytes().first().copied().unwrap_or(b'a');
        if first.is_ascii_digit() || first == b'-' || first == b'.' {
            if let Ok(i) = word.parse::<i64>() {
                return Some(Value::Int(i));
            }
            if is_float_literal(word)
                && let Ok(f) = word.parse::<f64>()
            {
                return Some(Value::Float(f));
            }
            if let Some(d) = Duration::parse(word) {
                return Some(Value::Duration(d));
            }
        }
        None
    }

    /// The value as text, the way a condition or template sees it.
    #[must_use]
    pub(crate) fn as_text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Value::Str(s) | Value::Word(s) => std::borrow::Cow::Borrowed(s),
            other => std::borrow::Cow::Owned(other.to_string()),
        }
    }

    /// The string inside a `Str` or `Word`; `None` for typed values.
    #[must_use]
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) | Value::Word(s) => Some(s),
            _ => None,
        }
    }

    /// The integer, if this is one.
    #[must_use]
    pub(crate) fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The boolean, if this is one.
    #[must_use]
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The duration, if this is one.
    #[must_use]
    pub(crate) fn as_duration(&self) -> Option<Duration> {
        match self {
            Value::Duration(d) => Some(*d),
            _ => None,
        }
    }

    /// Converts to the declared type, or says why it cannot.
    ///
    /// Quoted and bare spellings coerce alike: `"3"`, `3`; `"true"`, `true`;
    /// `"30s"`, `30s`. Anything coerces to a string.
    pub(crate) fn coerce(self, ty: ValueType) -> Result<Value, Value> {
        match (ty, self) {
            (ValueType::String, Value::Str(s) | Value::Word(s)) => Ok(Value::Str(s)),
            (ValueType::String, other) => Ok(Value::Str(other.to_string().into())),
            (ValueType::Int, v @ Value::Int(_)) => Ok(v),
            (ValueType::Float, v @ Value::Float(_)) => Ok(v),
            (ValueType::Float, Value::Int(i)) => Ok(Value::Float(i as f64)),
            (ValueType::Bool, v @ Value::Bool(_)) => Ok(v),
            (ValueType::Duration, v @ Value::Duration(_)) => Ok(v),
            (ty, Value::Str(s)) => {
                let typed = Value::from_word(s.trim());
                match typed {
                    Value::Word(_) | Value::Str(_) => Err(Value::Str(s)),
                    other => other.coerce(ty).map_err(|_| Value::Str(s)),
                }
            }
            (_, other) => Err(other),
        }
    }
}

fn is_float_literal(word: &str) -> bool {
    let body = word.strip_prefix('-').unwrap_or(word);
    let mut dots = 0;
    let mut digits = 0;
    for b in body.bytes() {
        match b {
            b'.' => dots += 1,
            b'0'..=b'9' => digits += 1,
            _ => return false,
        }
    }
    dots == 1 && digits > 0
}

/// Writes `s` as a DOT quoted string, escaping what the lexer decodes.
pub(crate) fn write_quoted(f: &mut impl fmt::Write, s: &str) -> fmt::Result {
    f.write_char('"')?;
    for c in s.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            // Always doubled: a lone backslash could merge with what follows
            // into an escape the lexer would decode differently.
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\t' => f.write_str("\\t")?,
            c => f.write_char(c)?,
        }
    }
    f.write_char('"')
}

impl fmt::Display for Value {
    /// The value as DOT source: strings quoted, everything else bare.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Str(s) => write_quoted(f, s),
            Value::Word(w) => f.write_str(w),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => {
                // Always print a decimal point so it reads back as a float.
                if x.fract() == 0.0 && x.is_finite() && x.abs() < 1e15 {
                    write!(f, "{x:.1}")
                } else {
                    write!(f, "{x}")
                }
            }
            Value::Bool(b) => write!(f, "{b}"),
            Value::Duration(d) => write!(f, "{d}"),
        }
    }
}

impl Serialize for Value {
    /// JSON form: strings, numbers and booleans natively; durations as their
    /// written text (`"30s"`).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Str(v) | Value::Word(v) => s.serialize_str(v),
            Value::Int(i) => s.serialize_i64(*i),
            Value::Float(x) => s.serialize_f64(*x),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Duration(d) => s.collect_str(d),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_words_are_typed_by_spelling() {
        assert_eq!(Value::from_word("42"), Value::Int(42));
        assert_eq!(Value::from_word("-1"), Value::Int(-1));
        assert_eq!(Value::from_word(".5"), Value::Float(0.5));
        assert_eq!(Value::from_word("true"), Value::Bool(true));
        assert_eq!(
            Value::from_word("250ms"),
            Value::Duration(Duration {
                amount: 250,
                unit: DurationUnit::Millis
            })
        );
        assert_eq!(
            Value::from_word("gpt-5.2-codex"),
            Value::Word("gpt-5.2-codex".into())
        );
        assert_eq!(Value::from_word("1.2.3"), Value::Word("1.2.3".into()));
    }

    #[test]
    fn quoted_typed_values_are_coerced() {
        assert_eq!(
            Value::Str("3".into()).coerce(ValueType::Int),
            Ok(Value::Int(3))
        );
        assert_eq!(
            Value::Str("true".into()).coerce(ValueType::Bool),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            Value::Str("900s".into())
                .coerce(ValueType::Duration)
                .map(|v| v.as_duration()),
            Ok(Some(Duration {
                amount: 900,
                unit: DurationUnit::Seconds
            }))
        );
        assert!(Value::Str("three".into()).coerce(ValueType::Int).is_err());
        assert!(Value::Int(900).coerce(ValueType::Duration).is_err());
    }

    #[test]
    fn durations_convert_to_std() {
        let d = Duration::parse("2m").expect("parses");
        assert_eq!(d.to_std(), std::time::Duration::from_secs(120));
        assert!(Duration::parse("99999999999999999999d").is_none());
        assert!(Duration::parse("5x").is_none());
    }

    #[test]
    fn display_reads_back_as_the_same_value() {
        for v in [
            Value::Float(2.0),
            Value::Float(-0.25),
            Value::Int(-7),
            Value::Str("a \"q\" \\ \\d\n".into()),
        ] {
            let text = v.to_string();
            let back = if let Some(inner) = text.strip_prefix('"') {
                let mut lexer = super::super::lexer::Lexer::new(&text);
                let _ = inner;
                match lexer.next_token().expect("lexes").kind {
                    super::super::lexer::TokenKind::Str(s) => Value::Str(s.into()),
                    other => panic!("{other:?}"),
                }
            } else {
                Value::from_word(&text)
            };
            assert_eq!(back, v, "{text}");
        }
    }
}
