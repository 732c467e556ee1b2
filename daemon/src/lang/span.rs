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
pub(crate) fn position_of(text: &str, offset: usize) -> (u32, u32) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
    (to_u32(line), to_u32(column))
}

/// Builds a span over `text[start..end]`.
#[must_use]
pub(crate) fn span_of(text: &str, start: usize, end: usize) -> Span {
    let (line, column) = position_of(text, start);
    Span {
        start: to_u32(start),
        end: to_u32(end),
        line,
        column,
    }
}

/// Builds a span over `text[start..end]` counting from `anchor`, a span
/// whose position is known and which starts at or before `start`. Costs
/// the distance from the anchor, not from the start of the file (which is
/// what [`span_of`] does, and what it falls back to when `start` lies before
/// the anchor).
#[must_use]
pub(crate) fn span_after(text: &str, anchor: Span, start: usize, end: usize) -> Span {
    let from = anchor.start as usize;
    let Some(between) = text.get(from..start.min(text.len())) else {
        return span_of(text, start, end);
    };
    let newlines = between.bytes().filter(|&b| b == b'\n').count();
    let (line, column) = match between.rfind('\n') {
        Some(i) => (
            anchor.line as usize + newlines,
            between.get(i + 1..).map_or(0, |s| s.chars().count()) + 1,
        ),
        None => (
            anchor.line as usize,
            anchor.column as usize + between.chars().count(),
        ),
    };
    Span {
        start: to_u32(start),
        end: to_u32(end),
        line: to_u32(line),
        column: to_u32(column),
    }
}

/// Saturating conversion for offsets and counts; workflow files over 4 GiB
/// are refused before they reach the lexer.
#[must_use]
pub(crate) fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_counted_from_an_anchor_matches_one_counted_from_the_start() {
        let text = "ab\ncé d\nefg \"x\ny\" z";
        for anchor_at in [0, 3, 7, 12] {
            let anchor = span_of(text, anchor_at, anchor_at);
            for start in anchor_at..text.len() {
                if !text.is_char_boundary(start) {
                    continue;
                }
                assert_eq!(
                    span_after(text, anchor, start, start),
                    span_of(text, start, start),
                    "anchor {anchor_at}, start {start}"
                );
            }
        }
    }
}
