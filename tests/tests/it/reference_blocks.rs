//! The ```dot blocks of the Fabro reference docs, as kept verbatim in
//! `tests/fixtures/reference/` (see its README.md): the fence extractor and
//! what the tests over those blocks share. `reference_docs` loads every
//! block (parse and validation); `reference_agents` runs the complete
//! workflows with agent stages against the fake provider.
//!
//! Blocks are numbered per `.mdx` file, from 0, counting only ```dot blocks
//! (whatever follows `dot` on the fence line, e.g. `title="x.fabro"`).

use std::path::{Path, PathBuf};

use weft::lang::LoadOptions;

/// The `[run.inputs]` that workflows/variables.mdx declares in its run.toml
/// next to the examples that use `{{ inputs.* }}`; without them those
/// examples fail template rendering before they are even parsed.
pub(crate) const DOC_INPUTS: &[(&str, &str)] = &[
    ("repo_name", "fabro"),
    ("repo_url", "https://github.com/fabro-sh/fabro"),
    ("language", "rust"),
];

/// A fenced ```dot block in an `.mdx` page.
#[derive(Debug)]
pub(crate) struct Block {
    /// Path under the docs root, with `/` separators.
    pub(crate) file: String,
    /// Position among the file's ```dot blocks, from 0.
    pub(crate) index: usize,
    /// 1-based line of the opening fence.
    pub(crate) line: usize,
    /// 1-based line of the closing fence.
    pub(crate) last_line: usize,
    pub(crate) text: String,
}

impl Block {
    pub(crate) fn key(&self) -> (&str, usize) {
        (self.file.as_str(), self.index)
    }

    pub(crate) fn describe(&self) -> String {
        format!(
            "{} block {} (tests/fixtures/reference/{}:{})",
            self.file, self.index, self.file, self.line
        )
    }
}

/// Where the docs' ```dot blocks are kept (`tests/fixtures/reference/`).
pub(crate) fn fixtures_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/reference")
}

/// `path` under `root`, with `/` separators.
pub(crate) fn relative(path: &Path, root: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// Every `.mdx` file under `dir`, recursively, sorted.
pub(crate) fn mdx_files(dir: &Path) -> Vec<PathBuf> {
    weft_tests::files_under(dir, &["mdx"])
}

/// The ```dot blocks of one page. Fences may be indented (inside list items
/// or components); the fence's indentation is removed from the block's
/// lines. A fence closes at a line of at least as many backticks and
/// nothing else, as in CommonMark.
pub(crate) fn dot_blocks(file: &str, source: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut lines = source.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        let trimmed = line.trim_start();
        let ticks = trimmed.chars().take_while(|&c| c == '`').count();
        if ticks < 3 {
            continue;
        }
        let indent = line.len() - trimmed.len();
        let info = trimmed[ticks..].trim();
        let language = info
            .split(|c: char| c.is_whitespace() || c == '{')
            .next()
            .unwrap_or("");
        let mut body = Vec::new();
        let mut closed = None;
        for (m, inner) in lines.by_ref() {
            let t = inner.trim_start();
            if t.len() >= ticks
                && t.chars().take(ticks).all(|c| c == '`')
                && t[ticks..].trim().is_empty()
            {
                closed = Some(m + 1);
                break;
            }
            let strip = inner.len() - inner.trim_start().len();
            body.push(&inner[strip.min(indent)..]);
        }
        let last_line =
            closed.unwrap_or_else(|| panic!("{file}:{}: unterminated code fence", n + 1));
        if language == "dot" {
            blocks.push(Block {
                file: file.to_string(),
                index: blocks.len(),
                line: n + 1,
                last_line,
                text: body.join("\n"),
            });
        }
    }
    blocks
}

/// The first word of `text` after whitespace and DOT comments.
fn first_word(text: &str) -> &str {
    let mut rest = text;
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix("//") {
            rest = after.split_once('\n').map_or("", |(_, r)| r);
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after.split_once("*/").map_or("", |(_, r)| r);
        } else {
            break;
        }
    }
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    &rest[..end]
}

pub(crate) fn is_complete(block: &Block) -> bool {
    matches!(first_word(&block.text), "digraph" | "strict")
}

/// Every ```dot block of the fixtures under `root`, in file and page
/// order, each with the directory of its `.mdx` file (the base dir it is
/// loaded with, as a reader's copy would sit next to the page).
pub(crate) fn fixture_blocks(root: &Path) -> Vec<(Block, PathBuf)> {
    let mut blocks = Vec::new();
    for path in mdx_files(root) {
        let rel = relative(&path, root);
        let source = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let dir = path.parent().unwrap_or(root).to_path_buf();
        for block in dot_blocks(&rel, &source) {
            blocks.push((block, dir.clone()));
        }
    }
    blocks
}

/// Load options with the docs' [`DOC_INPUTS`].
pub(crate) fn doc_load_options() -> LoadOptions {
    LoadOptions {
        inputs: DOC_INPUTS
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect(),
        goal: None,
    }
}

#[test]
fn fence_extractor_handles_titles_indentation_and_other_languages() {
    let page = "\
text
```dot title=\"a.fabro\"
digraph A { }
```
```bash
echo not dot
```
1. item

   ```dot
   x -> y
   ```
```dot theme={\"x\":1}
y -> z
```
";
    let blocks = dot_blocks("page.mdx", page);
    let texts: Vec<_> = blocks
        .iter()
        .map(|b| (b.index, b.line, b.last_line, b.text.as_str()))
        .collect();
    assert_eq!(
        texts,
        vec![
            (0, 2, 4, "digraph A { }"),
            (1, 10, 12, "x -> y"),
            (2, 13, 15, "y -> z")
        ]
    );
    assert!(is_complete(&blocks[0]));
    assert!(!is_complete(&blocks[1]));
}

#[test]
fn a_leading_comment_does_not_hide_digraph() {
    assert_eq!(first_word("// intro\n/* more */ digraph X {}"), "digraph");
    assert_eq!(first_word("graph [goal=\"x\"]"), "graph");
}
