//! The DOT lexer: turns workflow source into tokens with exact positions.
//!
//! Hand-written for speed and for precise errors. It tracks line and column
//! (in characters) as it advances, so every token carries a ready [`Span`]
//! without a second pass over the text.
//!
//! The parser reads [`Lexeme`]s: a kind and a span, twenty bytes, copied
//! rather than moved through every call. A word's or a string's text is
//! sliced from the source when the parser asks for it ([`Lexer::word`],
//! [`Lexer::string`]), and a string's escapes are decoded only then, so the
//! lexer itself allocates nothing. (The tests read the same tokens with
//! their text attached, from `Lexer::next_token`.)

use std::borrow::Cow;

use super::span::{Span, to_u32};

/// What a token is, without its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A bare word: identifier, number, duration, keyword or bare string
    /// such as `gpt-5.2-codex`. The parser decides which.
    Word,
    /// A double-quoted string without escapes: its text is the source
    /// between the quotes.
    Str,
    /// A double-quoted string with at least one backslash, decoded on
    /// demand ([`Lexer::string`]).
    EscapedStr,
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

/// A token as the parser reads it: its kind and where it stands. The span
/// of a string includes its quotes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Lexeme {
    pub kind: Kind,
    pub span: Span,
}

/// What a token is, with its text: what [`Lexer::next_token`] hands out.
/// The parser reads [`Lexeme`]s instead; the lexer's tests read these.
#[cfg(test)]
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

/// How a token of `kind` reads in an error message; `word` is the text of
/// a [`Kind::Word`].
#[must_use]
pub(crate) fn describe(kind: Kind, word: &str) -> String {
    match kind {
        Kind::Word => format!("`{word}`"),
        Kind::Str | Kind::EscapedStr => "a quoted string".to_string(),
        Kind::LBrace => "`{`".to_string(),
        Kind::RBrace => "`}`".to_string(),
        Kind::LBracket => "`[`".to_string(),
        Kind::RBracket => "`]`".to_string(),
        Kind::Equals => "`=`".to_string(),
        Kind::Semicolon => "`;`".to_string(),
        Kind::Comma => "`,`".to_string(),
        Kind::Arrow => "`->`".to_string(),
        Kind::Eof => "the end of the file".to_string(),
    }
}

/// A token and where it stands in the source.
#[cfg(test)]
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
    /// True when the whole source is ASCII (checked once, up front): a
    /// column then advances by the bytes passed, without counting
    /// characters run by run.
    ascii: bool,
}

/// Strings up to this many bytes are scanned byte by byte; longer ones by a
/// vectorised search, whose set-up costs more than a short string.
const SHORT_STRING: usize = 16;

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
            ascii: src.is_ascii(),
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

    /// Moves to the next `"`, `\\` or newline inside a string: byte by
    /// byte over the first few bytes (labels, conditions and classes are
    /// short), then by a vectorised search (scripts and prompts are most
    /// of a workflow's bytes).
    fn skip_string_body(&mut self) {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        let head = rest.get(..SHORT_STRING).unwrap_or(rest);
        let len = match head.iter().position(|&b| matches!(b, b'"' | b'\\' | b'\n')) {
            Some(at) => at,
            None => {
                let tail = rest.get(head.len()..).unwrap_or_default();
                head.len() + memchr::memchr3(b'"', b'\\', b'\n', tail).unwrap_or(tail.len())
            }
        };
        self.advance_in_line(len);
    }

    /// Moves `len` bytes forward over text without a newline, so the column
    /// can be updated once for the whole run.
    fn advance_in_line(&mut self, len: usize) {
        let chars = if self.ascii {
            len
        } else {
            let run = self.bytes.get(self.pos..self.pos + len).unwrap_or_default();
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
        // The usual case: one space between two tokens.
        if self.peek_byte(0) == Some(b' ')
            && !matches!(self.peek_byte(1), Some(b' ' | b'\t' | b'\r' | b'\n' | b'/'))
        {
            self.pos += 1;
            self.column += 1;
            return Ok(());
        }
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

    /// The next token, with its text: [`Lexer::lex`], then the text sliced
    /// and decoded. [`TokenKind::Eof`] at the end, forever after.
    #[cfg(test)]
    pub(crate) fn next_token(&mut self) -> Result<Token<'src>, LexError> {
        let lexeme = self.lex()?;
        let kind = match lexeme.kind {
            Kind::Word => TokenKind::Word(self.word(lexeme)),
            Kind::Str | Kind::EscapedStr => TokenKind::Str(self.string(lexeme)),
            Kind::LBrace => TokenKind::LBrace,
            Kind::RBrace => TokenKind::RBrace,
            Kind::LBracket => TokenKind::LBracket,
            Kind::RBracket => TokenKind::RBracket,
            Kind::Equals => TokenKind::Equals,
            Kind::Semicolon => TokenKind::Semicolon,
            Kind::Comma => TokenKind::Comma,
            Kind::Arrow => TokenKind::Arrow,
            Kind::Eof => TokenKind::Eof,
        };
        Ok(Token {
            kind,
            span: lexeme.span,
        })
    }

    /// The text of a [`Kind::Word`] (of any token: the source it spans).
    #[must_use]
    pub(crate) fn word(&self, lexeme: Lexeme) -> &'src str {
        self.src
            .get(lexeme.span.start as usize..lexeme.span.end as usize)
            .unwrap_or("")
    }

    /// The text of a quoted string: borrowed from the source when it has
    /// no escapes, else decoded. Decodes `\"`, `\\`, `\n`, `\t`; a
    /// backslash before a newline continues the line (both are dropped, as
    /// Graphviz does); any other backslash is kept as written so regexes
    /// such as `^v\d+` survive.
    #[must_use]
    pub(crate) fn string(&self, lexeme: Lexeme) -> Cow<'src, str> {
        let start = lexeme.span.start as usize + 1;
        let end = (lexeme.span.end as usize).saturating_sub(1).max(start);
        let body = self.src.get(start..end).unwrap_or("");
        if lexeme.kind == Kind::Str {
            return Cow::Borrowed(body);
        }
        let bytes = body.as_bytes();
        let mut out = String::with_capacity(body.len());
        let mut seg = 0;
        let mut at = 0;
        while let Some(found) = memchr::memchr(b'\\', bytes.get(at..).unwrap_or_default()) {
            let slash = at + found;
            out.push_str(body.get(seg..slash).unwrap_or(""));
            let (decoded, skip) = match bytes.get(slash + 1) {
                Some(b'"') => (Some('"'), 2),
                Some(b'\\') => (Some('\\'), 2),
                Some(b'n') => (Some('\n'), 2),
                Some(b't') => (Some('\t'), 2),
                Some(b'\n') => (None, 2),
                Some(b'\r') if bytes.get(slash + 2) == Some(&b'\n') => (None, 3),
                // Kept verbatim (regexes, `\l`); the next byte is read as
                // ordinary text.
                _ => (Some('\\'), 1),
            };
            if let Some(c) = decoded {
                out.push(c);
            }
            at = slash + skip;
            seg = at;
        }
        out.push_str(body.get(seg..).unwrap_or(""));
        Cow::Owned(out)
    }

    /// The next token's kind and span; [`Kind::Eof`] at the end, forever
    /// after.
    pub(crate) fn lex(&mut self) -> Result<Lexeme, LexError> {
        self.skip_trivia()?;
        let start = self.here();
        let Some(b) = self.peek_byte(0) else {
            return Ok(Lexeme {
                kind: Kind::Eof,
                span: start,
            });
        };
        let single = |lexer: &mut Self, kind| {
            lexer.pos += 1;
            lexer.column += 1;
            Ok(Lexeme {
                kind,
                span: lexer.finish(start),
            })
        };
        match b {
            b'{' => single(self, Kind::LBrace),
            b'}' => single(self, Kind::RBrace),
            b'[' => single(self, Kind::LBracket),
            b']' => single(self, Kind::RBracket),
            b'=' => single(self, Kind::Equals),
            b';' => single(self, Kind::Semicolon),
            b',' => single(self, Kind::Comma),
            b'"' => self.quoted(start),
            b'-' if self.peek_byte(1) == Some(b'>') => {
                self.pos += 2;
                self.column += 2;
                Ok(Lexeme {
                    kind: Kind::Arrow,
                    span: self.finish(start),
                })
            }
            // `--` before words, which `-` may start.
            b'-' if self.peek_byte(1) == Some(b'-') => Err(self.unexpected(start, b)),
            _ if is_word_byte(b) => Ok(self.bare_word(start)),
            _ => Err(self.unexpected(start, b)),
        }
    }

    /// The error for a byte no token starts with: kept out of
    /// [`Lexer::lex`], which runs for every token and never needs it on a
    /// valid file.
    #[cold]
    #[inline(never)]
    fn unexpected(&mut self, start: Span, b: u8) -> LexError {
        match b {
            b'-' if self.peek_byte(1) == Some(b'-') => {
                self.bump();
                self.bump();
                self.error(
                    self.finish(start),
                    "undirected edge `--` is not supported",
                    Some("workflows are directed graphs: use `->`"),
                )
            }
            b':' => {
                self.bump();
                self.error(
                    self.finish(start),
                    "node ports (`node:port`) are not supported",
                    Some("connect the nodes directly: `a -> b`"),
                )
            }
            b'<' => {
                self.bump();
                self.error(
                    self.finish(start),
                    "HTML labels (`<...>`) are not supported",
                    Some("use a quoted string: label=\"...\""),
                )
            }
            b'#' => {
                self.bump();
                self.error(
                    self.finish(start),
                    "unexpected `#`",
                    Some("comments start with `//` or `/*`"),
                )
            }
            _ => {
                let ch = self
                    .src
                    .get(self.pos..)
                    .and_then(|s| s.chars().next())
                    .unwrap_or('?');
                for _ in 0..ch.len_utf8() {
                    self.bump();
                }
                self.error(
                    self.finish(start),
                    format!("unexpected character `{ch}`"),
                    None,
                )
            }
        }
    }

    /// A bare word: letters, digits, `_`, `.` and `-` (but not the `-` of a
    /// following `->`, so `a->b` lexes as three tokens).
    fn bare_word(&mut self, start: Span) -> Lexeme {
        loop {
            self.skip_run(|b| WORD_BYTES[usize::from(b)] == WORD);
            // A `-` continues the word unless it starts `->`.
            if self.peek_byte(0) == Some(b'-') && self.peek_byte(1) != Some(b'>') {
                self.bump();
            } else {
                break;
            }
        }
        Lexeme {
            kind: Kind::Word,
            span: self.finish(start),
        }
    }

    /// A double-quoted string, found but not decoded ([`Lexer::string`]
    /// decodes it). A backslash escapes the byte after it, whatever it is,
    /// so `\"` does not end the string; raw newlines are allowed.
    fn quoted(&mut self, start: Span) -> Result<Lexeme, LexError> {
        self.bump(); // opening quote
        let mut kind = Kind::Str;
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
                    self.bump();
                    return Ok(Lexeme {
                        kind,
                        span: self.finish(start),
                    });
                }
                Some(b'\\') => {
                    kind = Kind::EscapedStr;
                    self.bump();
                    self.bump();
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
