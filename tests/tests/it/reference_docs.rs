//! Every ```dot example in the Fabro reference docs goes through the real
//! loader: the docs are the specification we implement, so an example that
//! a reader copies must parse, and must validate unless it is deliberately
//! partial. (The extraction of the blocks is in `reference_blocks`; the
//! workflows with agent stages are also run, in `reference_agents`.)
//!
//! - A block whose first statement is `digraph` is loaded as written, with
//!   the `.mdx` file's directory as base dir. It must have no `syntax`
//!   diagnostic, and its validation errors must be exactly the rule ids in
//!   [`EXPECTED_ERRORS`] (most doc examples are complete; some show only the
//!   attribute under discussion and so lack a start or exit node).
//! - Any other block is a fragment (a few statements out of a workflow). It
//!   is wrapped in `digraph Fragment { ... }` and must parse. Fragments are
//!   not validated: they are partial by design.
//! - [`EXPECTED_REJECTIONS`] lists blocks that use something we reject on
//!   purpose; for those the named diagnostic must be present instead.
//!
//! The blocks are read from `tests/fixtures/reference/`, where they are
//! kept verbatim, one file per docs page (same path, same block order), so
//! that the test needs nothing outside the repository. To take in a new
//! version of the docs, point `WEFT_UPDATE_REFERENCE` at it: the test then
//! rewrites the fixtures from the pages before checking them.
//!
//! ```sh
//! WEFT_UPDATE_REFERENCE=/path/to/fabro-docs cargo nextest run -p weft-tests --test it reference_docs
//! ```

use std::collections::BTreeSet;
use std::path::Path;

use weft::lang::{LoadOptions, Workflow};

use crate::reference_blocks::{
    Block, doc_load_options, dot_blocks, fixture_blocks, fixtures_root, is_complete, mdx_files,
    relative,
};

/// A block that uses something we reject on purpose: (file, block index),
/// the rule id that must be reported, and why. When the loader starts
/// accepting one of these, the test fails until its entry is removed.
const EXPECTED_REJECTIONS: &[((&str, usize), &str, &str)] = &[
    (
        ("tutorials/plan-implement.mdx", 2),
        "syntax",
        "`plan [label=\"Plan\", max_visits=5, ...]`: the `...` is prose for \"the other attributes\", not DOT",
    ),
    (
        ("workflows/transitions.mdx", 10),
        "syntax",
        "`node -> preferred`: `node` is the DOT keyword for node defaults and cannot be a node id \
         (Graphviz rejects it too); the parser reports it before `reserved_keyword_node_id` could",
    ),
    // workflows/transitions.mdx blocks 1 and 2 write attributes without a
    // `,` between them (`[prompt="..." on_failure="route"]`), as Graphviz
    // allows; the parser accepts that since issue 14, so they are no longer
    // listed here.
];

/// The exact set of error rule ids each complete `digraph` example draws,
/// and why. Every complete example not listed must have no errors.
const EXPECTED_ERRORS: &[((&str, usize), &[&str], &str)] = &[
    // Examples that show one attribute inside a bare `digraph`, without the
    // start and exit nodes every runnable workflow needs.
    (
        ("agents/prompts.mdx", 3),
        NO_START_OR_EXIT,
        "shows `{{ goal }}` reaching a prompt; one node only",
    ),
    (
        ("core-concepts/models.mdx", 0),
        NO_START_OR_EXIT,
        "shows a model_stylesheet; three unconnected nodes",
    ),
    (
        ("execution/context.mdx", 4),
        NO_START_OR_EXIT,
        "shows graph-level default_fidelity; no nodes",
    ),
    (
        ("execution/failures.mdx", 4),
        NO_START_OR_EXIT,
        "shows graph-level max_node_visits; body elided as `// ...`",
    ),
    (
        ("execution/failures.mdx", 5),
        NO_START_OR_EXIT,
        "shows node max_visits overriding max_node_visits",
    ),
    (
        ("execution/run-configuration.mdx", 0),
        NO_START_OR_EXIT,
        "shows `{{ inputs.* }}`; no start or exit",
    ),
    (
        ("workflows/variables.mdx", 1),
        NO_START_OR_EXIT,
        "shows `{{ goal }}` in a prompt; one node only",
    ),
    (
        ("execution/failures.mdx", 7),
        &["retry_target_exists", "start_node", "terminal_node"],
        "shows retry target precedence; `plan` and `implement` are named but not part of the excerpt",
    ),
    // The page writes `stall_timeout="300"  // 5 minutes`: a unitless
    // duration reads as seconds with an `attribute_type` warning (not an
    // error), so only the excerpt's missing start and exit remain.
    (
        ("execution/failures.mdx", 8),
        &["start_node", "terminal_node"],
        "shows `stall_timeout` alone; no start or exit",
    ),
    // Complete workflows whose `@file` / child workflow lives next to the
    // workflow in the Fabro repo, not next to the docs page.
    (
        ("tutorials/plan-implement.mdx", 0),
        &["unresolved_file_ref"],
        "`prompt=\"@prompts/simplify.md\"`: the prompt file is not part of the docs",
    ),
    (
        ("tutorials/sub-workflow.mdx", 1),
        &["unresolved_file_ref"],
        "`stack.child_workflow=\"implement-and-test.fabro\"` is the page's previous block, not a file",
    ),
];

/// The errors of a `digraph` that has neither a start nor an exit node.
const NO_START_OR_EXIT: &[&str] = &["start_node", "terminal_node"];

/// Rewrites the fixtures from the docs at `docs`: for every page with a
/// ```dot block, a file of the same relative path holding those blocks,
/// fences included, exactly as the page has them, each after a line saying
/// where on the page it starts. Files of pages that no longer have a block
/// are removed.
fn update_fixtures(docs: &Path, fixtures: &Path) {
    assert!(
        docs.is_dir(),
        "WEFT_UPDATE_REFERENCE={} is not a directory",
        docs.display()
    );
    if fixtures.is_dir() {
        for old in mdx_files(fixtures) {
            std::fs::remove_file(&old)
                .unwrap_or_else(|e| panic!("cannot remove {}: {e}", old.display()));
        }
    }
    for page in mdx_files(docs) {
        let rel = relative(&page, docs);
        let source = std::fs::read_to_string(&page)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", page.display()));
        let blocks = dot_blocks(&rel, &source);
        if blocks.is_empty() {
            continue;
        }
        let lines: Vec<&str> = source.lines().collect();
        // No backticks in the prose lines: only the copied fences open blocks.
        let mut out = format!(
            "The dot code blocks of Fabro's docs page {rel}, verbatim and in order\n\
             (Fabro's examples; see README.md).\n"
        );
        for block in &blocks {
            out.push_str(&format!("\nPage line {}:\n", block.line));
            for line in &lines[block.line - 1..block.last_line] {
                out.push_str(line);
                out.push('\n');
            }
        }
        let target = fixtures.join(&rel);
        if let Some(dir) = target.parent() {
            std::fs::create_dir_all(dir)
                .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        }
        std::fs::write(&target, out)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", target.display()));
    }
}

fn load(block: &Block, base_dir: &Path, options: &LoadOptions) -> Workflow {
    let name = format!("{}#{}", block.file, block.index);
    if is_complete(block) {
        Workflow::from_bytes(&name, block.text.as_bytes(), base_dir, options)
    } else {
        let wrapped = format!("digraph Fragment {{\n{}\n}}\n", block.text);
        Workflow::from_bytes(&name, wrapped.as_bytes(), base_dir, options)
    }
}

fn sorted_unique<'a>(items: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    items
        .into_iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

#[test]
fn every_dot_block_in_the_reference_docs_parses_and_validates_as_expected() {
    let root = fixtures_root();
    if let Some(docs) = std::env::var_os("WEFT_UPDATE_REFERENCE").filter(|v| !v.is_empty()) {
        update_fixtures(Path::new(&docs), &root);
    }
    let options = doc_load_options();
    let (blocks, base_dirs): (Vec<Block>, Vec<_>) = fixture_blocks(&root).into_iter().unzip();

    let mut failures = Vec::new();

    // A table entry that names no block is a typo or a docs change, and
    // would silently stop checking what it was written for.
    let keys: BTreeSet<(&str, usize)> = blocks.iter().map(Block::key).collect();
    for (key, _, _) in EXPECTED_REJECTIONS {
        if !keys.contains(key) {
            failures.push(format!(
                "EXPECTED_REJECTIONS names {key:?}, which is not a ```dot block"
            ));
        }
    }
    for (key, _, _) in EXPECTED_ERRORS {
        if !keys.contains(key) {
            failures.push(format!(
                "EXPECTED_ERRORS names {key:?}, which is not a ```dot block"
            ));
        }
    }

    let mut complete = 0;
    let mut fragments = 0;
    for (block, base_dir) in blocks.iter().zip(&base_dirs) {
        let wf = load(block, base_dir, &options);
        let whole = is_complete(block);
        if whole {
            complete += 1;
        } else {
            fragments += 1;
        }

        if let Some((_, rule, _)) = EXPECTED_REJECTIONS
            .iter()
            .find(|(k, _, _)| *k == block.key())
        {
            if !wf.diagnostics.iter().any(|d| d.rule == *rule) {
                failures.push(format!(
                    "{}: expected a `{rule}` diagnostic (EXPECTED_REJECTIONS), got {:?}",
                    block.describe(),
                    wf.diagnostics
                        .iter()
                        .map(|d| (d.rule, d.message.as_str()))
                        .collect::<Vec<_>>()
                ));
            }
            continue;
        }

        // Template errors stop the load before parsing, so they count as
        // parse failures here.
        let parse_errors: Vec<_> = wf
            .diagnostics
            .iter()
            .filter(|d| d.rule == "syntax" || d.rule == "template")
            .collect();
        if !parse_errors.is_empty() || wf.graph.is_none() {
            for d in &parse_errors {
                let line = d.span.map_or(0, |s| s.line);
                failures.push(format!(
                    "{}: does not parse{}: line {line} of the {}: [{}] {}",
                    block.describe(),
                    if whole { "" } else { " as a fragment" },
                    if whole {
                        "block"
                    } else {
                        "wrapped block (block line + 1)"
                    },
                    d.rule,
                    d.message
                ));
            }
            if parse_errors.is_empty() {
                failures.push(format!(
                    "{}: produced no graph: {:?}",
                    block.describe(),
                    wf.diagnostics
                ));
            }
            continue;
        }
        if !whole {
            continue;
        }

        let expected: &[&str] = EXPECTED_ERRORS
            .iter()
            .find(|(k, _, _)| *k == block.key())
            .map_or(&[], |(_, rules, _)| *rules);
        let errors: Vec<_> = wf.diagnostics.iter().filter(|d| d.is_error()).collect();
        let got = sorted_unique(errors.iter().map(|d| d.rule));
        let want = sorted_unique(expected.iter().copied());
        if got != want {
            let mut report = format!(
                "{}: validation errors differ from EXPECTED_ERRORS\n    expected rules: {want:?}\n    got rules:      {got:?}",
                block.describe()
            );
            for d in errors.iter().filter(|d| !want.contains(&d.rule)) {
                let line = d.span.map_or(0, |s| s.line);
                report.push_str(&format!(
                    "\n    unexpected: block line {line}: [{}] {}",
                    d.rule, d.message
                ));
            }
            failures.push(report);
        }
    }

    println!(
        "checked {} ```dot blocks from {}: {complete} complete workflows, {fragments} fragments",
        blocks.len(),
        root.display()
    );
    assert!(
        blocks.len() > 50,
        "found only {} ```dot blocks; is the fence extractor broken?",
        blocks.len()
    );
    assert!(
        failures.is_empty(),
        "{} problem(s) in reference doc examples:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
