//! Cutting text to a width, marked with `…` where something was left out.
//! Widths count characters (Unicode scalar values), never bytes, so a cut
//! never splits a character.

/// The mark put where text was cut.
pub(crate) const ELLIPSIS: char = '…';

/// `text` cut to at most `max_chars` characters: when it is longer, its
/// first `max_chars - 1` characters and `…`. (`max_chars` 0 still leaves
/// the `…`.)
#[must_use]
pub fn truncate(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_owned(),
        Some(_) => {
            let keep = max_chars.saturating_sub(1);
            let end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
            let mut cut = String::with_capacity(end + ELLIPSIS.len_utf8());
            cut.push_str(&text[..end]);
            cut.push(ELLIPSIS);
            cut
        }
    }
}

/// `text` cut from the front to at most `max_chars` characters: when it is
/// longer, `…` and its last `max_chars - 1` characters (the end of an
/// output is what matters).
#[must_use]
pub(crate) fn truncate_start(text: &str, max_chars: usize) -> String {
    let total = text.chars().count();
    if total <= max_chars {
        return text.to_owned();
    }
    let skip = total - max_chars.saturating_sub(1);
    let start = text.char_indices().nth(skip).map_or(text.len(), |(i, _)| i);
    let mut cut = String::with_capacity(text.len() - start + ELLIPSIS.len_utf8());
    cut.push(ELLIPSIS);
    cut.push_str(&text[start..]);
    cut
}

/// `text` on one line — every run of whitespace, newlines included, made
/// one space, none at either end — then [`truncate`]d to `max_chars`.
#[must_use]
pub(crate) fn one_line(text: &str, max_chars: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    truncate(&flat, max_chars)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_that_fits_is_left_alone() {
        assert_eq!(truncate("hello", 5), "hello");
        assert_eq!(truncate("", 0), "");
        assert_eq!(truncate_start("hello", 5), "hello");
    }

    #[test]
    fn a_cut_keeps_the_width_including_the_mark() {
        assert_eq!(truncate("hello world", 6), "hello…");
        assert_eq!(truncate("hello world", 6).chars().count(), 6);
        assert_eq!(truncate_start("hello world", 6), "…world");
    }

    #[test]
    fn cuts_count_characters_not_bytes() {
        assert_eq!(truncate("héllo wörld", 4), "hél…");
        assert_eq!(truncate_start("héllo wörld", 4), "…rld");
        assert_eq!(truncate("日本語のテキスト", 3), "日本…");
    }

    #[test]
    fn a_zero_width_leaves_only_the_mark() {
        assert_eq!(truncate("abc", 0), "…");
        assert_eq!(truncate_start("abc", 0), "…");
    }

    #[test]
    fn one_line_folds_whitespace_before_cutting() {
        assert_eq!(one_line("  say\n\thello   there ", 100), "say hello there");
        assert_eq!(one_line("say\nhello there", 9), "say hell…");
    }
}
