//! The DOT lexer: turns workflow source into tokens with exact positions.
//!
//! Hand-written for speed and for precise errors. It tracks line and column
//! (in characters) as it advances, so every token carries a ready [`Span`]
//! without a second pass over the text.

use std::borrow::Cow;

use super::span::{Span, to_u32};

/// What a token is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TokenKind<'src> {
    /// A bare word: identifier, number, duration, keyword or bare string
    /// such as `gpt-5.2-codex`. The parser decides which.
    Word(&'src str),
    /// A double-quoted string, with escapes already decoded.
    Str(Cow<'src, str>),
    LBrace,
    RBrace,
    LBracket,
    RBracket,
    Equals,
    Semicolon,
    Comma,
    /// `->`
    Arrow,
    Eof,
}

impl TokenKind<'_> {
    /// How the token reads in an error message.
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            TokenKind::Word(w) => format!("`{w}`"),
            TokenKind::Str(_) => "a quoted string".to_string(),
            TokenKind::LBrace => "`{`".to_string(),
            TokenKind::RBrace => "`}`".to_string(),
            TokenKind::LBracket => "`[`".to_string(),
            TokenKind::RBracket => "`]`".to_string(),
            TokenKind::Equals => "`=`".to_string(),
            TokenKind::Semicolon => "`;`".to_string(),
            TokenKind::Comma => "`,`".to_string(),
            TokenKind::Arrow => "`->`".to_string(),
            TokenKind::Eof => "the end of the file".to_string(),
        }
    }
}

/// A token and where it stands in the source.
#[derive(Debug, Clone, PartialEq)]
pub struct Token<'src> {
    pub kind: TokenKind<'src>,
    pub span: Span,
}

/// A lexical error: the message, where, and what to do about it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LexError {
    pub message: String,
    pub span: Span,
    pub hint: Option<String>,
}

/// Streams tokens out of a source string.
pub(crate) struct Lexer<'src> {
    src: &'src str,
    bytes: &'src [u8],
    pos: usize,
    line: u32,
    column: u32,
}

impl<'src> Lexer<'src> {
    /// A lexer positioned at the start of `src`.
    #[must_use]
    pub fn new(src: &'src str) -> Self {
        Lexer {
            src,
            bytes: src.as_bytes(),
            pos: 0,
            line: 1,
            column: 1,
        }
    }

    fn peek_byte(&self, ahead: usize) -> Option<u8> {
        self.bytes.get(self.pos + ahead).copied()
    }

    /// Moves one byte forward, keeping line and column right. Columns count
    /// characters, so UTF-8 continuation bytes do not advance them.
    fn bump(&mut self) {
        if let Some(&b) = self.bytes.get(self.pos) {
            self.pos += 1;
            if b == b'\n' {
                self.line += 1;
                self.column = 1;
            } else if b & 0xC0 != 0x80 {
                self.column += 1;
            }
        }
    }

    /// Moves past the run of bytes for which `keep` holds: the hot path
    /// for words, whitespace and comments.
    fn skip_run(&mut self, keep: impl Fn(u8) -> bool) {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        self.advance_in_line(rest.iter().position(|&b| !keep(b)).unwrap_or(rest.len()));
    }

    /// Moves to the next `"`, `\\` or newline inside a string, using a
    /// vectorised search: string bodies (scripts, prompts) are most of a
    /// workflow's bytes.
    fn skip_string_body(&mut self) {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        self.advance_in_line(memchr::memchr3(b'"', b'\\', b'\n', rest).unwrap_or(rest.len()));
    }

    /// Moves `len` bytes forward over text without a newline, so the column
    /// can be updated once for the whole run.
    fn advance_in_line(&mut self, len: usize) {
        let run = self.bytes.get(self.pos..self.pos + len).unwrap_or_default();
        let chars = if run.is_ascii() {
            len
        } else {
            run.iter().filter(|&&b| b & 0xC0 != 0x80).count()
        };
        self.pos += len;
        self.column += to_u32(chars);
    }

    fn here(&self) -> Span {
        let at = to_u32(self.pos);
        Span {
            start: at,
            end: at,
            line: self.line,
            column: self.column,
        }
    }

    fn finish(&self, mut span: Span) -> Span {
        span.end = to_u32(self.pos);
        span
    }

    fn error(&self, span: Span, message: impl Into<String>, hint: Option<&str>) -> LexError {
        LexError {
            message: message.into(),
            span,
            hint: hint.map(str::to_string),
        }
    }

    /// Skips whitespace and comments. An unterminated block comment is an
    /// error pointing at its opening `/*`.
    fn skip_trivia(&mut self) -> Result<(), LexError> {
        loop {
            match self.peek_byte(0) {
                Some(b'\n') => self.bump(),
                Some(b' ' | b'\t' | b'\r') => self.skip_run(|b| matches!(b, b' ' | b'\t' | b'\r')),
                // A byte-order mark at the very start is harmless.
                Some(0xEF) if self.pos == 0 && self.src.starts_with('\u{feff}') => {
                    self.pos += 3;
                }
                Some(b'/') if self.peek_byte(1) == Some(b'/') => self.skip_run(|b| b != b'\n'),
                Some(b'/') if self.peek_byte(1) == Some(b'*') => {
                    let open = self.here();
                    self.bump();
                    self.bump();
                    loop {
                        match self.peek_byte(0) {
                            None => {
                                let mut span = open;
                                span.end = span.start + 2;
                                return Err(self.error(
                                    span,
                                    "unterminated block comment",
                                    Some("close it with `*/`"),
                                ));
                            }
                            Some(b'*') if self.peek_byte(1) == Some(b'/') => {
                                self.bump();
                                self.bump();
                                break;
                            }
                            Some(_) => self.bump(),
                        }
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    /// The next token; [`TokenKind::Eof`] at the end, forever after.
    pub(crate) fn next_token(&mut self) -> Result<Token<'src>, LexError> {
        self.skip_trivia()?;
        let start = self.here();
        let Some(b) = self.peek_byte(0) else {
            return Ok(Token {
                kind: TokenKind::Eof,
                span: start,
            });
        };
        let single = |lexer: &mut Self, kind| {
            lexer.bump();
            Ok(Token {
                kind,
                span: lexer.finish(start),
            })
        };
        match b {
            b'{' => single(self, TokenKind::LBrace),
            b'}' => single(self, TokenKind::RBrace),
            b'[' => single(self, TokenKind::LBracket),
            b']' => single(self, TokenKind::RBracket),
            b'=' => single(self, TokenKind::Equals),
            b';' => single(self, TokenKind::Semicolon),
            b',' => single(self, TokenKind::Comma),
            b'"' => self.string(start),
            b'-' if self.peek_byte(1) == Some(b'>') => {
                self.bump();
                self.bump();
                Ok(Token {
                    kind: TokenKind::Arrow,
                    span: self.finish(start),
                })
            }
            b'-' if self.peek_byte(1) == Some(b'-') => {
                self.bump();
                self.bump();
                Err(self.error(
                    self.finish(start),
                    "undirected edge `--` is not supported",
                    Some("workflows are directed graphs: use `->`"),
                ))
            }
            b':' => {
                self.bump();
                Err(self.error(
                    self.finish(start),
                    "node ports (`node:port`) are not supported",
                    Some("connect the nodes directly: `a -> b`"),
                ))
            }
            b'<' => {
                self.bump();
                Err(self.error(
                    self.finish(start),
                    "HTML labels (`<...>`) are not supported",
                    Some("use a quoted string: label=\"...\""),
                ))
            }
            b'#' => {
                self.bump();
                Err(self.error(
                    self.finish(start),
                    "unexpected `#`",
                    Some("comments start with `//` or `/*`"),
                ))
            }
            _ if is_word_byte(b) => Ok(self.word(start)),
            _ => {
                let ch = self
                    .src
                    .get(self.pos..)
                    .and_then(|s| s.chars().next())
                    .unwrap_or('?');
                for _ in 0..ch.len_utf8() {
                    self.bump();
                }
                Err(self.error(
                    self.finish(start),
                    format!("unexpected character `{ch}`"),
                    None,
                ))
            }
        }
    }

    /// A bare word: letters, digits, `_`, `.` and `-` (but not the `-` of a
    /// following `->`, so `a->b` lexes as three tokens).
    fn word(&mut self, start: Span) -> Token<'src> {
        let from = self.pos;
        loop {
            self.skip_run(|b| WORD_BYTES[usize::from(b)] == WORD);
            // A `-` continues the word unless it starts `->`.
            if self.peek_byte(0) == Some(b'-') && self.peek_byte(1) != Some(b'>') {
                self.bump();
            } else {
                break;
            }
        }
        let text = self.src.get(from..self.pos).unwrap_or("");
        Token {
            kind: TokenKind::Word(text),
            span: self.finish(start),
        }
    }

    /// A double-quoted string. Decodes `\"`, `\\`, `\n`, `\t`; a backslash
    /// before a newline continues the line (both are dropped, as Graphviz
    /// does); any other backslash is kept as written so regexes such as
    /// `^v\d+` survive. Raw newlines are allowed.
    fn string(&mut self, start: Span) -> Result<Token<'src>, LexError> {
        self.bump(); // opening quote
        let from = self.pos;
        // Fast path: no escapes, borrow the text.
        let mut owned: Option<String> = None;
        let mut seg = from;
        loop {
            match self.peek_byte(0) {
                None => {
                    let mut span = start;
                    span.end = span.start + 1;
                    return Err(self.error(
                        span,
                        "unterminated string",
                        Some("close the string with `\"`"),
                    ));
                }
                Some(b'"') => {
                    let text = self.src.get(seg..self.pos).unwrap_or("");
                    self.bump();
                    let kind = match owned {
                        Some(mut s) => {
                            s.push_str(text);
                            TokenKind::Str(Cow::Owned(s))
                        }
                        None => TokenKind::Str(Cow::Borrowed(text)),
                    };
                    return Ok(Token {
                        kind,
                        span: self.finish(start),
                    });
                }
                Some(b'\\') => {
                    let buf = owned.get_or_insert_with(String::new);
                    buf.push_str(self.src.get(seg..self.pos).unwrap_or(""));
                    let next = self.peek_byte(1);
                    self.bump();
                    match next {
                        Some(b'"') => buf.push('"'),
                        Some(b'\\') => buf.push('\\'),
                        Some(b'n') => buf.push('\n'),
                        Some(b't') => buf.push('\t'),
                        Some(b'\n') => {}
                        Some(b'\r') if self.peek_byte(1) == Some(b'\n') => self.bump(),
                        // Keep unknown escapes verbatim (regexes, `\l`).
                        Some(_) | None => {
                            buf.push('\\');
                            seg = self.pos;
                            continue;
                        }
                    }
                    self.bump();
                    seg = self.pos;
                }
                Some(b'\n') => self.bump(),
                Some(_) => self.skip_string_body(),
            }
        }
    }
}

/// Bytes that may appear in a bare word. Non-ASCII letters are accepted so
/// that a label like `café` as a bare value reads naturally; ids are checked
/// more strictly by the parser.
fn is_word_byte(b: u8) -> bool {
    WORD_BYTES[usize::from(b)] != NOT_WORD
}

/// A bare word's bytes, by class: one table load per byte in the lexer's
/// hottest loop instead of a chain of range tests.
const WORD_BYTES: [u8; 256] = {
    let mut table = [NOT_WORD; 256];
    let mut b = 0;
    while b < 256 {
        let byte = b as u8;
        if byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'.' || byte >= 0x80 {
            table[b] = WORD;
        } else if byte == b'-' {
            table[b] = DASH;
        }
        b += 1;
    }
    table
};
const NOT_WORD: u8 = 0;
/// Any word byte but `-`.
const WORD: u8 = 1;
/// `-`, which continues a word unless it starts `->`.
const DASH: u8 = 2;

/// Maps a byte offset inside the *decoded* text of a string literal back to
/// the byte offset in the source, by re-walking the literal's escapes.
///
/// `literal_start` is the offset of the opening quote. Used to place errors
/// found inside attribute values (stylesheets, conditions) at their true
/// position in the file.
#[must_use]
pub(crate) fn source_offset_in_string(
    src: &str,
    literal_start: usize,
    decoded_offset: usize,
) -> usize {
    let bytes = src.as_bytes();
    let mut raw = literal_start + 1;
    let mut decoded = 0usize;
    while decoded < decoded_offset {
        match bytes.get(raw) {
            None | Some(b'"') => break,
            Some(b'\\') => match bytes.get(raw + 1) {
                Some(b'"' | b'\\' | b'n' | b't') => {
                    raw += 2;
                    decoded += 1;
                }
                Some(b'\n') => raw += 2,
                Some(b'\r') if bytes.get(raw + 2) == Some(&b'\n') => raw += 3,
                _ => {
                    raw += 1;
                    decoded += 1;
                }
            },
            Some(_) => {
                raw += 1;
                decoded += 1;
            }
        }
    }
    raw
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<TokenKind<'_>> {
        let mut lexer = Lexer::new(src);
        let mut out = Vec::new();
        loop {
            let token = lexer.next_token().expect("lexes");
            if token.kind == TokenKind::Eof {
                return out;
            }
            out.push(token.kind);
        }
    }

    fn lex_error(src: &str) -> LexError {
        let mut lexer = Lexer::new(src);
        loop {
            match lexer.next_token() {
                Err(e) => return e,
                Ok(t) if t.kind == TokenKind::Eof => panic!("no error in {src:?}"),
                Ok(_) => {}
            }
        }
    }

    #[test]
    fn arrow_splits_adjacent_words() {
        assert_eq!(
            kinds("a->b"),
            vec![TokenKind::Word("a"), TokenKind::Arrow, TokenKind::Word("b")]
        );
    }

    #[test]
    fn bare_model_ids_are_single_words() {
        assert_eq!(
            kinds("gpt-5.2-codex"),
            vec![TokenKind::Word("gpt-5.2-codex")]
        );
        assert_eq!(kinds("-0.5"), vec![TokenKind::Word("-0.5")]);
    }

    #[test]
    fn comments_are_skipped_but_not_inside_strings() {
        assert_eq!(
            kinds("// line\na /* block\n */ \"x // y /* z */\""),
            vec![
                TokenKind::Word("a"),
                TokenKind::Str(Cow::Borrowed("x // y /* z */"))
            ]
        );
    }

    #[test]
    fn string_escapes_decode() {
        let toks = kinds(r#""a\"b\\c\nd\te\d""#);
        assert_eq!(
            toks,
            vec![TokenKind::Str(Cow::Owned("a\"b\\c\nd\te\\d".to_string()))]
        );
    }

    #[test]
    fn backslash_newline_continues_a_string() {
        assert_eq!(
            kinds("\"ab \\\n   cd\""),
            vec![TokenKind::Str(Cow::Owned("ab    cd".into()))]
        );
    }

    #[test]
    fn raw_newlines_are_allowed_in_strings() {
        assert_eq!(
            kinds("\"a\nb\""),
            vec![TokenKind::Str(Cow::Borrowed("a\nb"))]
        );
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        let mut lexer = Lexer::new("\"é\" x");
        lexer.next_token().expect("string");
        let x = lexer.next_token().expect("word");
        assert_eq!((x.span.line, x.span.column), (1, 5));
    }

    #[test]
    fn positions_track_lines() {
        let mut lexer = Lexer::new("a\n  b");
        lexer.next_token().expect("a");
        let b = lexer.next_token().expect("b");
        assert_eq!((b.span.line, b.span.column, b.span.start), (2, 3, 4));
    }

    #[test]
    fn unterminated_string_points_at_its_opening_quote() {
        let e = lex_error("a [label=\"oops]\n");
        assert_eq!((e.span.line, e.span.column), (1, 10));
        assert!(e.message.contains("unterminated string"));
    }

    #[test]
    fn unterminated_comment_points_at_its_opening() {
        let e = lex_error("a\n /* never closed");
        assert_eq!((e.span.line, e.span.column), (2, 2));
    }

    #[test]
    fn undirected_edges_ports_and_html_are_rejected() {
        assert!(lex_error("a -- b").message.contains("`--`"));
        assert!(lex_error("a:n -> b").message.contains("ports"));
        assert!(lex_error("a [label=<b>x</b>]").message.contains("HTML"));
    }

    #[test]
    fn decoded_offsets_map_back_through_escapes() {
        let src = r#"x="a\"b\nc""#;
        // decoded: a " b \n c ; offset 4 is `c`
        let raw = source_offset_in_string(src, 2, 4);
        assert_eq!(&src[raw..=raw], "c");
    }
}
