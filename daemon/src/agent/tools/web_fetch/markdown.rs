//! HTML turned into Markdown for the model: headings, paragraphs, links,
//! lists, emphasis, code and preformatted blocks, tables as `|` rows;
//! scripts, styles and other non-content elements dropped.
//!
//! Built on html5ever's tokenizer (the WHATWG tokenizing rules, so
//! entities, unclosed tags and `</script>` inside strings are read as a
//! browser reads them) without a tree: one pass, memory bounded by the
//! input, no recursion, whatever the nesting.

use std::cell::RefCell;

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, Tag, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};

/// List levels indented at most; deeper levels share the last indent, so
/// 100,000 nested `<ul>` cannot make the output quadratic.
const MAX_INDENT_LEVELS: usize = 8;

/// A page as Markdown.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Page {
    /// The `<title>`, whitespace collapsed; empty without one.
    pub title: String,
    pub markdown: String,
}

/// Converts `html` (a whole document or a fragment).
pub(crate) fn to_markdown(html: &str) -> Page {
    let tokenizer = Tokenizer::new(Converter::default(), TokenizerOpts::default());
    let queue = BufferQueue::default();
    queue.push_back(StrTendril::from_slice(html));
    let _ = tokenizer.feed(&queue);
    tokenizer.end();
    let state = tokenizer.sink.state.into_inner();
    Page {
        title: collapse_whitespace(&state.title).trim().to_string(),
        markdown: tidy(&state.out),
    }
}

#[derive(Default)]
struct Converter {
    state: RefCell<State>,
}

#[derive(Default)]
struct State {
    out: String,
    title: String,
    in_title: bool,
    /// The element whose content is being dropped, and how many of the
    /// same name are open inside it.
    skipping: Option<(String, usize)>,
    /// Inside `<pre>`: whitespace kept, no Markdown added.
    pre_depth: usize,
    /// Open lists: `None` unordered, `Some(n)` ordered at item `n`.
    lists: Vec<Option<u32>>,
    /// Targets of the open links (`None`: no usable href).
    links: Vec<Option<String>>,
    /// Cells written in the current table row.
    cells: usize,
}

/// Elements whose content is not page text.
const SKIPPED: [&str; 12] = [
    "script", "style", "noscript", "template", "svg", "math", "head", "iframe", "object", "canvas",
    "select", "button",
];

impl TokenSink for Converter {
    type Handle = ();

    fn process_token(&self, token: Token, _line_number: u64) -> TokenSinkResult<()> {
        let mut state = self.state.borrow_mut();
        match token {
            Token::TagToken(tag) => state.tag(&tag),
            Token::CharacterTokens(text) => state.text(&text),
            _ => TokenSinkResult::Continue,
        }
    }
}

impl State {
    fn tag(&mut self, tag: &Tag) -> TokenSinkResult<()> {
        let name: &str = &tag.name;
        let start = tag.kind == TagKind::StartTag;
        // The tokenizer reads the content of these elements as raw text or
        // RCDATA only when told, as a tree builder would tell it.
        let raw = if start && !tag.self_closing {
            match name {
                "script" => Some(RawKind::ScriptData),
                "style" | "xmp" | "iframe" | "noembed" | "noframes" | "noscript" => {
                    Some(RawKind::Rawtext)
                }
                "title" | "textarea" => Some(RawKind::Rcdata),
                _ => None,
            }
        } else {
            None
        };
        if name == "title" {
            self.in_title = start && !tag.self_closing;
            return raw.map_or(TokenSinkResult::Continue, TokenSinkResult::RawData);
        }
        if let Some((skipped, depth)) = &mut self.skipping {
            if skipped == name {
                if start && !tag.self_closing {
                    *depth += 1;
                } else if !start {
                    *depth -= 1;
                    if *depth == 0 {
                        self.skipping = None;
                    }
                }
            }
            return raw.map_or(TokenSinkResult::Continue, TokenSinkResult::RawData);
        }
        if start && !tag.self_closing && SKIPPED.contains(&name) {
            self.skipping = Some((name.to_string(), 1));
            return raw.map_or(TokenSinkResult::Continue, TokenSinkResult::RawData);
        }
        if start {
            self.open(name, tag);
        } else {
            self.close(name);
        }
        raw.map_or(TokenSinkResult::Continue, TokenSinkResult::RawData)
    }

    fn open(&mut self, name: &str, tag: &Tag) {
        let attr = |wanted: &str| {
            tag.attrs
                .iter()
                .find(|a| &*a.name.local == wanted)
                .map(|a| a.value.trim().to_string())
        };
        match name {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                self.blank_line();
                let level = usize::from(name.as_bytes()[1] - b'0');
                self.out.push_str(&"#".repeat(level));
                self.out.push(' ');
            }
            "p" | "div" | "section" | "article" | "main" | "header" | "footer" | "nav"
            | "aside" | "blockquote" | "figure" | "figcaption" | "dl" | "form" | "table"
            | "address" | "details" | "summary" => self.blank_line(),
            "dt" | "dd" | "caption" => self.line_break(),
            "tr" => {
                self.line_break();
                self.cells = 0;
            }
            "td" | "th" => {
                if self.cells > 0 {
                    self.out.push_str(" | ");
                }
                self.cells += 1;
            }
            "br" => self.out.push('\n'),
            "hr" => {
                self.blank_line();
                self.out.push_str("---\n\n");
            }
            "ul" | "menu" => {
                self.line_break();
                self.lists.push(None);
            }
            "ol" => {
                self.line_break();
                let first = attr("start").and_then(|s| s.parse().ok()).unwrap_or(1);
                self.lists.push(Some(first));
            }
            "li" => {
                self.line_break();
                let depth = self.lists.len().clamp(1, MAX_INDENT_LEVELS);
                self.out.push_str(&"  ".repeat(depth - 1));
                match self.lists.last_mut() {
                    Some(Some(n)) => {
                        self.out.push_str(&format!("{n}. "));
                        *n = n.saturating_add(1);
                    }
                    _ => self.out.push_str("- "),
                }
            }
            "pre" => {
                self.blank_line();
                self.out.push_str("```\n");
                self.pre_depth += 1;
            }
            "code" | "kbd" | "samp" if self.pre_depth == 0 => self.out.push('`'),
            "strong" | "b" if self.pre_depth == 0 => self.out.push_str("**"),
            "em" | "i" if self.pre_depth == 0 => self.out.push('*'),
            "a" => {
                let href = attr("href").filter(|h| {
                    !h.is_empty()
                        && !h.starts_with('#')
                        && !h.to_ascii_lowercase().starts_with("javascript:")
                });
                if href.is_some() {
                    self.out.push('[');
                }
                self.links.push(href);
            }
            "img" => {
                if let Some(src) = attr("src").filter(|s| !s.is_empty() && !s.starts_with("data:"))
                {
                    let alt = attr("alt").unwrap_or_default();
                    self.out
                        .push_str(&format!("![{}]({src})", collapse_whitespace(&alt)));
                }
            }
            _ => {}
        }
    }

    fn close(&mut self, name: &str) {
        match name {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "p" | "div" | "section" | "article"
            | "main" | "header" | "footer" | "nav" | "aside" | "blockquote" | "figure"
            | "figcaption" | "dl" | "form" | "table" | "address" | "details" | "summary" => {
                self.blank_line();
            }
            "tr" | "dt" | "dd" | "caption" | "li" => self.line_break(),
            "ul" | "ol" | "menu" => {
                self.lists.pop();
                self.line_break();
            }
            "pre" if self.pre_depth > 0 => {
                self.pre_depth -= 1;
                self.line_break();
                self.out.push_str("```\n\n");
            }
            "code" | "kbd" | "samp" if self.pre_depth == 0 => self.out.push('`'),
            "strong" | "b" if self.pre_depth == 0 => self.out.push_str("**"),
            "em" | "i" if self.pre_depth == 0 => self.out.push('*'),
            "a" => {
                if let Some(Some(href)) = self.links.pop() {
                    self.out.push_str(&format!("]({href})"));
                }
            }
            _ => {}
        }
    }

    fn text(&mut self, text: &str) -> TokenSinkResult<()> {
        if self.in_title {
            self.title.push_str(text);
        } else if self.skipping.is_some() {
            // Dropped.
        } else if self.pre_depth > 0 {
            self.out.push_str(text);
        } else {
            let collapsed = collapse_whitespace(text);
            // No space at the start of a line: Markdown would read an
            // indent as code.
            let at_line_start = self.out.is_empty() || self.out.ends_with('\n');
            let collapsed = if at_line_start || self.out.ends_with(' ') {
                collapsed.trim_start()
            } else {
                &collapsed
            };
            self.out.push_str(collapsed);
        }
        TokenSinkResult::Continue
    }

    /// Ends the current line, if anything is on it.
    fn line_break(&mut self) {
        trim_trailing_spaces(&mut self.out);
        if !self.out.is_empty() && !self.out.ends_with('\n') {
            self.out.push('\n');
        }
    }

    /// Ends the current paragraph with an empty line.
    fn blank_line(&mut self) {
        self.line_break();
        if !self.out.is_empty() && !self.out.ends_with("\n\n") {
            self.out.push('\n');
        }
    }
}

fn trim_trailing_spaces(text: &mut String) {
    let kept = text.trim_end_matches([' ', '\t']).len();
    text.truncate(kept);
}

/// Runs of whitespace as one space.
fn collapse_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            space = true;
        } else {
            if space {
                out.push(' ');
                space = false;
            }
            out.push(c);
        }
    }
    if space {
        out.push(' ');
    }
    out
}

/// Trailing spaces off every line, at most one empty line in a row, no
/// empty lines at the ends.
fn tidy(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut empty_run = 0;
    for line in markdown.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            empty_run += 1;
            if empty_run > 1 || out.is_empty() {
                continue;
            }
        } else {
            empty_run = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    let kept = out.trim_end().len();
    out.truncate(kept);
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structure_becomes_markdown() {
        let page = to_markdown(
            "<!doctype html><html><head><title> The  Title </title></head><body>\
             <h1>Main</h1><p>Some <b>bold</b>, <em>em</em> and <code>x()</code> text\n  across lines.</p>\
             <ul><li>one</li><li>two<ol start=3><li>three</li></ol></li></ul>\
             <p>A <a href=\"https://example.org/a?b=1&amp;c=2\">link</a> and <a href=\"#top\">an anchor</a>.<br>Next line</p>\
             <pre><code>fn main() {\n    x();\n}</code></pre>\
             <table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>\
             </body></html>",
        );
        assert_eq!(page.title, "The Title");
        assert_eq!(
            page.markdown,
            "# Main\n\nSome **bold**, *em* and `x()` text across lines.\n\n- one\n- two\n  3. three\n\n\
             A [link](https://example.org/a?b=1&c=2) and an anchor.\nNext line\n\n\
             ```\nfn main() {\n    x();\n}\n```\n\nk | v\na | 1\n"
        );
    }

    #[test]
    fn scripts_styles_and_their_tricks_are_dropped() {
        let page = to_markdown(
            "<p>before</p><script>var s = '<p>not text</p>'; if (a < b) {}</script>\
             <style>p { color: red }</style><noscript><p>enable js</p></noscript>\
             <svg><text>chart</text></svg><p>after &amp; &lt;done&gt;</p>",
        );
        assert_eq!(page.markdown, "before\n\nafter & <done>\n");
    }

    #[test]
    fn broken_and_hostile_html_is_read_without_panicking() {
        for html in [
            "<p>unclosed <b>bold <a href=x>link",
            "</p></div></li></ul></ol></pre></a>",
            "<script>never closed",
            "<<<>>>&&&;;<!-- comment",
            "<ol start=99999999999999999999><li>x</li></ol>",
            "",
        ] {
            let _ = to_markdown(html);
        }
        let page = to_markdown(&"<ul><li>".repeat(10_000));
        assert!(
            page.markdown.len() < 10_000 * (2 * MAX_INDENT_LEVELS + 4),
            "{}",
            page.markdown.len()
        );
    }
}
