//! Source positions. Every node, edge and attribute carries a [`Span`] so that
//! diagnostics can point at `file:line:column`.

use serde::Serialize;

/// A region of the source text: byte offsets plus the 1-based line and column
/// (in characters) of its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, ts_rs::TS)]
pub struct Span {
    /// Byte offset of the first byte.
    pub start: u32,
    /// Byte offset one past the last byte.
    pub end: u32,
    /// 1-based line of `start`.
    pub line: u32,
    /// 1-based column of `start`, counted in characters.
    pub column: u32,
}

impl Span {
    /// The span from the start of `self` to the end of `other`.
    #[must_use]
    pub fn to(self, other: Span) -> Span {
        Span {
            end: other.end.max(self.end),
            ..self
        }
    }
}

/// Finds the line and column of a byte offset in `text`.
///
/// Used for positions computed after lexing (inside a string value, say);
/// offsets past the end clamp to the end.
#[must_use]
pub fn position_of(text: &str, offset: usize) -> (u32, u32) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
    (to_u32(line), to_u32(column))
}

/// Builds a span over `text[start..end]`.
#[must_use]
pub fn span_of(text: &str, start: usize, end: usize) -> Span {
    let (line, column) = position_of(text, start);
    Span {
        start: to_u32(start),
        end: to_u32(end),
        line,
        column,
    }
}

/// Saturating conversion for offsets and counts; workflow files over 4 GiB
/// are refused before they reach the lexer.
#[must_use]
pub fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
