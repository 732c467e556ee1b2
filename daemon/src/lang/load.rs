//! Loading a workflow: bytes → template pass 1 → parse → old and Attractor
//! spellings copied to Weft's names → `@file` references → template pass 2
//! → `$goal` → imports (each imported file loaded the same way) → model
//! stylesheets → validation rules.
//!
//! Loading never fails on bad workflow content: every problem becomes a
//! [`Diagnostic`]. Only reading the file itself can fail.
//!
//! Every file is read through [`super::files::Tree`] (confined to the
//! workflow's tree, regular files only, capped in size), and one load,
//! imports included, shares one [`Budget`] of work.
//!
//! Imports recurse: a file's imports are assembled the way the file itself
//! is. [`super::import`] does not call back into this file by name; the
//! [`Chain`] carries [`assemble`] to it, so the two files do not import
//! each other.

use std::path::{Path, PathBuf};

use super::attractor;
use super::attrs::{Attr, Attrs, Key};
use super::budget::Budget;
use super::diagnostic::Diagnostic;
use super::graph::Graph;
use super::import::{self, Chain};
use super::parser::{self, SYNTAX};
use super::rules;
use super::span::{Span, span_of, to_u32};
use super::template::{self, OUT_OF_FUEL_HINT, Renderer, TEMPLATE};
use super::value::Value;
use super::workflow::{
    FileRef, LoadOptions, PATHS, ScopedSheet, Workflow, resolve_path, span_in_value,
};
use crate::limits::{self, MAX_REFERENCED_BYTES, MAX_WORKFLOW_BYTES, ReadError};

impl Workflow {
    /// Reads and loads a workflow file. Only a regular file of at most
    /// [`MAX_WORKFLOW_BYTES`] is read: a FIFO or a device is refused before
    /// any byte is read.
    pub fn load(path: &Path, options: &LoadOptions) -> Result<Workflow, ReadError> {
        let bytes = limits::read_capped(path, MAX_WORKFLOW_BYTES)?;
        let base_dir = path
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        // The bytes read become the workflow's source: no second copy.
        Ok(Workflow::owning(
            &path.display().to_string(),
            bytes,
            &base_dir,
            options,
            Budget::default(),
        ))
    }

    /// Loads a workflow from memory; `base_dir` resolves relative references.
    #[must_use]
    pub fn from_bytes(
        file: &str,
        bytes: &[u8],
        base_dir: &Path,
        options: &LoadOptions,
    ) -> Workflow {
        Self::within(file, bytes, base_dir, options, Budget::default())
    }

    /// Loads a workflow of up to `max_bytes` rather than
    /// [`MAX_WORKFLOW_BYTES`], keeping `bytes` as its source (no copy): the
    /// parse benchmark measures 100,000-node workflows (30 MB), beyond what
    /// a user's file may be. Every other cap stays as it is.
    #[must_use]
    pub fn from_bytes_up_to(
        file: &str,
        bytes: Vec<u8>,
        base_dir: &Path,
        options: &LoadOptions,
        max_bytes: u64,
    ) -> Workflow {
        let budget = Budget {
            workflow_bytes: max_bytes,
            ..Budget::default()
        };
        Self::owning(file, bytes, base_dir, options, budget)
    }

    /// [`Workflow::from_bytes`] with a given budget (tests use small ones).
    pub(crate) fn within(
        file: &str,
        bytes: &[u8],
        base_dir: &Path,
        options: &LoadOptions,
        budget: Budget,
    ) -> Workflow {
        // The workflow keeps its own copy of the text. One byte past the cap
        // is enough for the loader to refuse an oversized text: the rest is
        // not copied.
        let cap = usize::try_from(budget.workflow_bytes.saturating_add(1)).unwrap_or(usize::MAX);
        let owned = bytes.get(..cap).unwrap_or(bytes).to_vec();
        Self::owning(file, owned, base_dir, options, budget)
    }

    /// Loads `bytes`, which become the workflow's source.
    fn owning(
        file: &str,
        bytes: Vec<u8>,
        base_dir: &Path,
        options: &LoadOptions,
        budget: Budget,
    ) -> Workflow {
        let mut chain = Chain::new(file, base_dir, assemble);
        chain.budget = budget;
        let (mut wf, sheets) = assemble(file, bytes, base_dir, options, &mut chain);
        if let Some(graph) = &mut wf.graph {
            // Innermost imports first, this file's own stylesheet last: each
            // fills only what is still unset (see `ScopedSheet`).
            for sheet in &sheets {
                sheet.apply(graph);
            }
        }
        if let Some(graph) = &wf.graph {
            rules::check(graph, &wf.source, &wf.file_refs, &mut wf.diagnostics);
        }
        wf.diagnostics
            .sort_by_key(|d| d.span.map_or((0, 0), |s| (s.line, s.column)));
        wf
    }
}

/// Loads a file up to the graph with its imports spliced in: every step but
/// the stylesheets, which wait for the outermost file (they are returned,
/// innermost first), and the validation rules, which the caller runs on the
/// graph it ends up with. `chain` holds the files being loaded around this one.
pub(super) fn assemble(
    file: &str,
    bytes: Vec<u8>,
    base_dir: &Path,
    options: &LoadOptions,
    chain: &mut Chain,
) -> (Workflow, Vec<ScopedSheet>) {
    let mut wf = Workflow {
        file: file.to_string(),
        base_dir: base_dir.to_path_buf(),
        source: String::new(),
        graph: None,
        diagnostics: Vec::new(),
        file_refs: Vec::new(),
    };
    // Imported files are read within MAX_WORKFLOW_BYTES; the cap here is the
    // outermost file's (larger only in the benchmark).
    let max_bytes = chain.budget.workflow_bytes;
    if bytes.len() as u64 > max_bytes {
        wf.diagnostics.push(
            Diagnostic::error(
                SYNTAX,
                format!(
                    "the workflow is larger than the limit of {}",
                    limits::human_bytes(max_bytes)
                ),
            )
            .with_hint("split it into files joined by `import`"),
        );
        return (wf, Vec::new());
    }
    wf.source = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            let prefix = String::from_utf8_lossy(valid);
            let span = span_of(&prefix, prefix.len(), prefix.len());
            wf.diagnostics.push(
                Diagnostic::error(SYNTAX, "the file is not valid UTF-8")
                    .at(span)
                    .with_hint("save the workflow as UTF-8 text"),
            );
            return (wf, Vec::new());
        }
    };
    if template::uses_inputs(&wf.source) {
        let text = wf.source.as_str();
        match template::render_structure(text, &options.inputs, &mut chain.budget.fuel) {
            Ok(rendered) if rendered.len() as u64 > max_bytes => {
                wf.diagnostics.push(
                    Diagnostic::error(
                        TEMPLATE,
                        format!(
                            "rendering the inputs makes the workflow larger than the limit of {}",
                            limits::human_bytes(max_bytes)
                        ),
                    )
                    .at(span_of(text, 0, 0))
                    .with_hint(OUT_OF_FUEL_HINT),
                );
                return (wf, Vec::new());
            }
            Ok(rendered) => wf.source = rendered,
            Err(e) => {
                let line = e.line.unwrap_or(1);
                let span = e.range.clone().map_or_else(
                    || Span {
                        line: to_u32(line),
                        column: 1,
                        ..Span::default()
                    },
                    |r| span_of(text, r.start, r.end),
                );
                let hint = if e.out_of_fuel {
                    OUT_OF_FUEL_HINT
                } else {
                    "check the names under `inputs` and pass missing ones with `--input NAME=VALUE`"
                };
                wf.diagnostics.push(
                    Diagnostic::error(TEMPLATE, e.message)
                        .at(span)
                        .with_hint(hint),
                );
                return (wf, Vec::new());
            }
        }
    }
    let parsed = match parser::parse_within(&wf.source, chain.budget.expansion_bytes) {
        Ok(p) => p,
        Err(e) => {
            wf.diagnostics.push(*e);
            return (wf, Vec::new());
        }
    };
    chain.budget.expansion_bytes = chain.budget.expansion_bytes.saturating_sub(parsed.expanded);
    wf.diagnostics.extend(parsed.diagnostics);
    let mut graph = parsed.graph;
    alias_tool_command(&mut graph);
    attractor::alias_spellings(&mut graph);
    wf.file_refs = resolve_file_refs(&mut graph, base_dir, chain);
    if let Some(goal) = &options.goal {
        let span = graph
            .attrs
            .get("goal")
            .map(|a| a.value_span)
            .unwrap_or_default();
        graph.attrs.set(Attr {
            key: "goal".into(),
            value: Value::Str(goal.as_str().into()),
            key_span: span,
            value_span: span,
        });
    }
    // Every value comes from the source, an inlined file or `--goal`: when
    // none of them can hold a template, pass 2 would walk every attribute
    // to change nothing.
    if options.goal.is_some() || !wf.file_refs.is_empty() || template::may_hold_template(&wf.source)
    {
        render_templates(
            &mut graph,
            &wf.source,
            options,
            &mut chain.budget.fuel,
            &mut wf.diagnostics,
        );
        // Templates may have rewritten `shape` or `type`: resolve handlers
        // again.
        graph.finish();
    }
    // After the templates, so the goal is the one the run has (`--goal`,
    // rendered). Only where `$goal` can be: in the file, an inlined file, or
    // a template's output. (`memmem`, not `str::contains`: this scans the
    // whole source, 1.7% of a 10k-node load's instructions the plain way.)
    if memchr::memmem::find(wf.source.as_bytes(), b"$goal").is_some()
        || !wf.file_refs.is_empty()
        || template::may_hold_template(&wf.source)
    {
        attractor::expand_goal_variable(
            &mut graph,
            &wf.source,
            &mut chain.budget.expansion_bytes,
            &mut wf.diagnostics,
        );
    }
    // After this file's templates, so spliced text (already rendered in its
    // own file) is never rendered twice.
    let mut sheets = Vec::new();
    import::splice_all(&mut graph, &mut wf, options, chain, &mut sheets);
    if let Some(attr) = graph.attrs.get("model_stylesheet") {
        sheets.push(ScopedSheet {
            attr: attr.clone(),
            prefix: String::new(),
            nodes: None,
        });
    }
    wf.graph = Some(graph);
    (wf, sheets)
}

/// Attributes whose value may be `@path`: the file's text replaces it.
const INLINED: &[&str] = &["prompt", "goal"];

fn resolve_file_refs(graph: &mut Graph, base_dir: &Path, chain: &mut Chain) -> Vec<FileRef> {
    let mut refs = Vec::new();
    resolve_in(&mut graph.attrs, None, base_dir, chain, &mut refs);
    for node in &mut graph.nodes {
        resolve_in(&mut node.attrs, Some(&node.id), base_dir, chain, &mut refs);
    }
    refs
}

fn resolve_in(
    attrs: &mut Attrs,
    node: Option<&str>,
    base_dir: &Path,
    chain: &mut Chain,
    refs: &mut Vec<FileRef>,
) {
    for attr in attrs.iter_mut() {
        let inline = INLINED.contains(&attr.key.as_str());
        if !inline && !PATHS.contains(&attr.key.as_str()) {
            continue;
        }
        let Some(text) = attr.value.as_str() else {
            continue;
        };
        let written = match text.trim().strip_prefix('@') {
            Some(rest) => rest.trim().to_string(),
            // `output_schema="routing"` names the built-in schema.
            None if inline || attr.key == "output_schema" => continue,
            None => text.trim().to_string(),
        };
        if written.is_empty() {
            continue;
        }
        let path = resolve_path(base_dir, &written);
        let mut file_ref = FileRef {
            node: node.map(str::to_string),
            key: attr.key.to_string(),
            written,
            path: path.clone(),
            span: attr.value_span,
            error: None,
            hint: None,
            refused: false,
        };
        // Child workflows are read when the stage runs, as workflows.
        let cap = if inline || attr.key == "output_schema" {
            MAX_REFERENCED_BYTES
        } else {
            MAX_WORKFLOW_BYTES
        };
        if inline {
            match chain.read_text(&path, cap) {
                Ok(content) => attr.value = Value::Str(content.into()),
                Err(e) => file_ref.failed(&e),
            }
        } else if let Err(e) = chain.tree.check(&path, cap) {
            file_ref.failed(&e);
        }
        refs.push(file_ref);
    }
}

/// `tool_command` is the old name of `script` (Fabro's own
/// `test/legacy_tool.fabro` uses it): a node that sets it and no `script`
/// runs it as its script. The `tool_command_deprecated` rule warns.
fn alias_tool_command(graph: &mut Graph) {
    for node in &mut graph.nodes {
        if node.attrs.contains("script") {
            continue;
        }
        if let Some(old) = node.attrs.get("tool_command") {
            let script = Attr {
                key: Key::new("script"),
                ..old.clone()
            };
            node.attrs.set(script);
        }
    }
}

/// Pass 2: renders every string attribute with the real goal and inputs,
/// taking the work from `fuel`.
fn render_templates(
    graph: &mut Graph,
    source: &str,
    options: &LoadOptions,
    fuel: &mut u64,
    out: &mut Vec<Diagnostic>,
) {
    let inputs = &options.inputs;
    let mut pass = Pass {
        source,
        fuel,
        out,
        exhausted: false,
    };
    // The goal may itself use inputs; render it first, without a goal.
    let mut goal_renderer = Renderer::new(None, inputs);
    let mut goal = None;
    if let Some(attr) = graph.attrs.iter_mut().find(|a| a.key == "goal") {
        pass.render(&mut goal_renderer, attr, None);
        goal = attr.value.as_str().map(str::to_string);
    }
    let mut renderer = Renderer::new(goal.as_deref().or(Some("")), inputs);
    for attr in graph.attrs.iter_mut().filter(|a| a.key != "goal") {
        pass.render(&mut renderer, attr, None);
    }
    for node in &mut graph.nodes {
        for attr in node.attrs.iter_mut() {
            pass.render(&mut renderer, attr, Some(&node.id));
        }
    }
    for edge in &mut graph.edges {
        for attr in edge.attrs.iter_mut() {
            pass.render(&mut renderer, attr, None);
        }
    }
}

/// Template pass 2 over one graph.
struct Pass<'a> {
    source: &'a str,
    fuel: &'a mut u64,
    out: &'a mut Vec<Diagnostic>,
    /// The fuel ran out: reported once, later templates are left as written.
    exhausted: bool,
}

impl Pass<'_> {
    fn render(&mut self, renderer: &mut Renderer, attr: &mut Attr, node: Option<&str>) {
        let Value::Str(text) = &attr.value else {
            return;
        };
        if self.exhausted && template::has_template(text) {
            return;
        }
        match renderer.render(text, self.fuel) {
            Ok(std::borrow::Cow::Borrowed(_)) => {}
            Ok(std::borrow::Cow::Owned(rendered)) => attr.value = Value::Str(rendered.into()),
            Err(e) => {
                let span = match &e.range {
                    Some(r) => span_in_value(self.source, attr, r.start, r.end - r.start),
                    None => attr.value_span,
                };
                let hint = if e.out_of_fuel {
                    self.exhausted = true;
                    OUT_OF_FUEL_HINT
                } else {
                    "templates can use `{{ goal }}` and `{{ inputs.NAME }}`; pass inputs with `--input NAME=VALUE`, or write literal braces with {% raw %}...{% endraw %}"
                };
                let mut d = Diagnostic::error(TEMPLATE, format!("{} in `{}`", e.message, attr.key))
                    .at(span)
                    .with_hint(hint);
                if let Some(id) = node {
                    d = d.on_node(id);
                }
                self.out.push(d);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_in(dir: &Path, src: &str, options: &LoadOptions) -> Workflow {
        let path = dir.join("flow.fabro");
        std::fs::write(&path, src).expect("write workflow");
        Workflow::load(&path, options).expect("load")
    }

    fn node_text(wf: &Workflow, id: &str, key: &str) -> Option<String> {
        wf.graph
            .as_ref()?
            .node(id)?
            .attrs
            .text(key)
            .map(|t| t.into_owned())
    }

    #[test]
    fn file_references_are_inlined_relative_to_the_workflow() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("prompts")).expect("mkdir");
        std::fs::write(dir.path().join("prompts/plan.md"), "Plan for {{ goal }}.\n")
            .expect("write prompt");
        let wf = load_in(
            dir.path(),
            "digraph F { graph [goal=\"ship\"]; start [shape=Mdiamond]; exit [shape=Msquare]\n plan [prompt=\"@prompts/plan.md\"]\n start -> plan -> exit }",
            &LoadOptions::default(),
        );
        assert!(wf.is_valid(), "{:?}", wf.diagnostics);
        assert_eq!(
            node_text(&wf, "plan", "prompt").as_deref(),
            Some("Plan for ship.\n"),
            "inlined, then rendered"
        );
        assert_eq!(wf.file_refs.len(), 1);
        assert_eq!(wf.file_refs[0].path, dir.path().join("prompts/plan.md"));
    }

    #[test]
    fn inputs_can_shape_the_graph_before_parsing() {
        let dir = tempfile::tempdir().expect("temp dir");
        let src = "digraph F {\n start [shape=Mdiamond]; exit [shape=Msquare]\n{% if inputs.lint == \"yes\" %}\n lint [shape=parallelogram, script=\"true\"]\n start -> lint -> exit\n{% else %}\n start -> exit\n{% endif %}\n}";
        let with = LoadOptions {
            inputs: [("lint".to_string(), "yes".to_string())].into(),
            goal: None,
        };
        let without = LoadOptions {
            inputs: [("lint".to_string(), "no".to_string())].into(),
            goal: None,
        };
        let a = load_in(dir.path(), src, &with);
        let b = load_in(dir.path(), src, &without);
        assert!(
            a.is_valid() && b.is_valid(),
            "{:?} {:?}",
            a.diagnostics,
            b.diagnostics
        );
        assert!(a.graph.as_ref().is_some_and(|g| g.node("lint").is_some()));
        assert!(b.graph.as_ref().is_some_and(|g| g.node("lint").is_none()));
        let missing = load_in(dir.path(), src, &LoadOptions::default());
        assert!(
            missing.diagnostics.iter().any(|d| d.rule == TEMPLATE),
            "{:?}",
            missing.diagnostics
        );
    }

    #[test]
    fn the_goal_option_replaces_the_graph_goal_in_templates() {
        let dir = tempfile::tempdir().expect("temp dir");
        let wf = load_in(
            dir.path(),
            "digraph F { graph [goal=\"old\"]; start [shape=Mdiamond]; exit [shape=Msquare]\n plan [prompt=\"do {{ goal }}\"]\n start -> plan -> exit }",
            &LoadOptions {
                goal: Some("new".into()),
                ..LoadOptions::default()
            },
        );
        assert_eq!(node_text(&wf, "plan", "prompt").as_deref(), Some("do new"));
    }

    fn of_rule<'a>(wf: &'a Workflow, rule: &str) -> Vec<&'a Diagnostic> {
        wf.diagnostics.iter().filter(|d| d.rule == rule).collect()
    }

    #[test]
    fn a_workflow_path_that_is_a_device_a_fifo_or_too_large_is_not_read() {
        let dir = tempfile::tempdir().expect("temp dir");
        let options = LoadOptions::default();
        assert!(matches!(
            Workflow::load(Path::new("/dev/zero"), &options),
            Err(ReadError::NotRegular { .. })
        ));
        let fifo = dir.path().join("flow.fabro");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        )
        .expect("mkfifo");
        assert!(matches!(
            Workflow::load(&fifo, &options),
            Err(ReadError::NotRegular { kind: "a FIFO" })
        ));
        let big = dir.path().join("big.fabro");
        let file = std::fs::File::create(&big).expect("create");
        file.set_len(MAX_WORKFLOW_BYTES + 1).expect("sparse file");
        let err = Workflow::load(&big, &options).expect_err("too large");
        assert_eq!(err.to_string(), "it is larger than the limit of 8 MiB");
        let wf = Workflow::from_bytes(
            "big.fabro",
            &vec![b' '; MAX_WORKFLOW_BYTES as usize + 1],
            dir.path(),
            &options,
        );
        assert!(
            wf.diagnostics[0]
                .message
                .contains("larger than the limit of 8 MiB"),
            "text sent as such (run.start source) is held to the same cap: {:?}",
            wf.diagnostics
        );
    }

    #[test]
    fn only_the_benchmark_entry_loads_a_workflow_past_the_usual_cap() {
        let padding = " ".repeat(MAX_WORKFLOW_BYTES as usize);
        let src = format!(
            "digraph G {{ start [shape=Mdiamond]{padding} exit [shape=Msquare]; start -> exit }}"
        );
        let options = LoadOptions::default();
        let capped = Workflow::from_bytes("big.fabro", src.as_bytes(), Path::new("."), &options);
        assert!(capped.graph.is_none(), "{:?}", capped.diagnostics);
        let wide = Workflow::from_bytes_up_to(
            "big.fabro",
            src.clone().into_bytes(),
            Path::new("."),
            &options,
            2 * MAX_WORKFLOW_BYTES,
        );
        assert!(
            wide.graph.is_some() && wide.diagnostics.is_empty(),
            "{:?}",
            wide.diagnostics
        );
        let small = Workflow::from_bytes_up_to(
            "big.fabro",
            src.into_bytes(),
            Path::new("."),
            &options,
            1024,
        );
        assert!(
            small.diagnostics[0]
                .message
                .contains("larger than the limit of 1 KiB"),
            "the message names the cap in force: {:?}",
            small.diagnostics
        );
    }

    #[test]
    fn a_reference_to_a_fifo_or_a_large_file_is_an_error_at_its_position() {
        let dir = tempfile::tempdir().expect("temp dir");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            dir.path().join("pipe.md"),
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        )
        .expect("mkfifo");
        let big = std::fs::File::create(dir.path().join("big.md")).expect("create");
        big.set_len(MAX_REFERENCED_BYTES + 1).expect("sparse file");
        let wf = load_in(
            dir.path(),
            "digraph F { graph [goal=\"@pipe.md\"]; start [shape=Mdiamond]; exit [shape=Msquare]\n plan [shape=tab, prompt=\"@big.md\"]\n start -> plan -> exit }",
            &LoadOptions::default(),
        );
        let d = of_rule(&wf, "unresolved_file_ref");
        assert_eq!(d.len(), 2, "{:?}", wf.diagnostics);
        assert!(
            d[0].message.contains("not a regular file (it is a FIFO)"),
            "{d:?}"
        );
        assert_eq!(d[0].span.map(|s| (s.line, s.column)), Some((1, 25)));
        assert!(
            d[1].message.contains("larger than the limit of 4 MiB"),
            "{d:?}"
        );
        assert_eq!(d[1].span.map(|s| (s.line, s.column)), Some((2, 26)));
    }

    #[test]
    fn references_together_are_held_to_the_reading_budget() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("p.md"), "p".repeat(3 * 1024 * 1024)).expect("write");
        let mut src = String::from("digraph F { start [shape=Mdiamond]; exit [shape=Msquare]\n");
        for i in 0..12 {
            src.push_str(&format!(
                " n{i} [shape=tab, prompt=\"@p.md\"]\n start -> n{i} -> exit\n"
            ));
        }
        src.push('}');
        let wf = load_in(dir.path(), &src, &LoadOptions::default());
        let d = of_rule(&wf, "unresolved_file_ref");
        assert_eq!(
            d.len(),
            2,
            "ten 3 MiB reads fit in 32 MiB: {:?}",
            wf.diagnostics
        );
        assert!(d[0].message.contains("passes the limit of 32 MiB"), "{d:?}");
    }

    #[test]
    fn a_template_bomb_in_a_prompt_is_a_template_error() {
        let dir = tempfile::tempdir().expect("temp dir");
        let bomb = format!(
            "{}xxxxxxxxxxxxxxxx{}",
            "{% for a in range(1000) %}".repeat(4),
            "{% endfor %}".repeat(4)
        );
        let wf = load_in(
            dir.path(),
            &format!(
                "digraph F {{ start [shape=Mdiamond]; exit [shape=Msquare]\n p [shape=tab, prompt=\"{bomb}\"]\n q [shape=tab, prompt=\"{bomb}\"]\n start -> p -> q -> exit }}"
            ),
            &LoadOptions::default(),
        );
        let d = of_rule(&wf, TEMPLATE);
        assert_eq!(
            d.len(),
            1,
            "reported once, then later templates are skipped: {:?}",
            wf.diagnostics
        );
        assert!(d[0].message.contains("too much work"), "{d:?}");
        assert_eq!(d[0].hint.as_deref(), Some(OUT_OF_FUEL_HINT));
    }

    #[test]
    fn a_structural_template_may_not_grow_the_file_past_its_cap() {
        let dir = tempfile::tempdir().expect("temp dir");
        let options = LoadOptions {
            inputs: [("n".to_string(), "9".to_string())].into(),
            goal: None,
        };
        let wf = load_in(
            dir.path(),
            "digraph F { start -> exit\n{% for i in range(inputs.n|int) %}{{ 'x' * 1000000 }}{% endfor %} }",
            &options,
        );
        let d = of_rule(&wf, TEMPLATE);
        assert_eq!(d.len(), 1, "{:?}", wf.diagnostics);
        assert!(
            d[0].message.contains("larger than the limit of 8 MiB"),
            "{d:?}"
        );
    }

    #[test]
    fn deeply_nested_template_expressions_are_refused_on_a_small_stack() {
        // MiniJinja's parser stops at 150 levels of nesting, which in a
        // debug build takes more stack than this thread has: the loader
        // refuses deep templates first. Just under its cap still parses.
        let wf = crate::lang::parser::tests::on_small_stack(|| {
            let ok = format!("{}1{}", "(".repeat(18), ")".repeat(18));
            let blocks = format!(
                "{}b{}",
                "{% if true %}".repeat(19),
                "{% endif %}".repeat(19)
            );
            let expr = format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000));
            let list = format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000));
            Workflow::from_bytes(
                "t.fabro",
                format!("digraph F {{ start [shape=Mdiamond]; exit [shape=Msquare]\n o [shape=tab, prompt=\"{{{{ {ok} }}}}\"]\n b [shape=tab, prompt=\"{blocks}\"]\n p [shape=tab, prompt=\"{{{{ {expr} }}}}\"]\n q [shape=tab, prompt=\"{{{{ {list} }}}}\"]\n start -> o -> b -> p -> q -> exit }}").as_bytes(),
                Path::new("."),
                &LoadOptions::default(),
            )
        });
        let d = of_rule(&wf, TEMPLATE);
        assert_eq!(d.len(), 2, "{:?}", wf.diagnostics);
        assert!(
            d.iter().all(|d| d.message.contains("more than 20 levels")),
            "{d:?}"
        );
        let o = wf
            .graph
            .as_ref()
            .and_then(|g| g.node("o"))
            .and_then(|n| n.attrs.text("prompt"));
        assert_eq!(o.as_deref(), Some("1"));
        let b = wf
            .graph
            .as_ref()
            .and_then(|g| g.node("b"))
            .and_then(|n| n.attrs.text("prompt"));
        assert_eq!(b.as_deref(), Some("b"));
    }

    #[test]
    fn deep_conditions_and_schemas_are_refused_or_read_on_a_small_stack() {
        // The other recursive parsers a load runs: conditions (64 levels of
        // parentheses) and JSON schemas (serde_json stops at 128 levels).
        let dir = tempfile::tempdir().expect("temp dir");
        let nested = |n: usize| {
            format!(
                "{}\"type\":\"object\"{}",
                "{\"properties\":{\"a\":".repeat(n) + "{",
                "}".repeat(2 * n + 1)
            )
        };
        std::fs::write(dir.path().join("ok.json"), nested(60)).expect("write");
        std::fs::write(dir.path().join("deep.json"), nested(5_000)).expect("write");
        let base = dir.path().to_path_buf();
        let wf = crate::lang::parser::tests::on_small_stack(move || {
            let cond = |n: usize| format!("{}outcome=succeeded{}", "(".repeat(n), ")".repeat(n));
            let src = format!(
                "digraph F {{ start [shape=Mdiamond]; exit [shape=Msquare]\n a [shape=parallelogram, script=\"true\", output_schema=\"@ok.json\"]\n b [shape=parallelogram, script=\"true\", output_schema=\"@deep.json\"]\n start -> a -> b -> exit\n a -> exit [condition=\"{}\"]\n b -> exit [condition=\"{}\"]\n}}",
                cond(64),
                cond(10_000)
            );
            Workflow::from_bytes("f.fabro", src.as_bytes(), &base, &LoadOptions::default())
        });
        let conditions = of_rule(&wf, "condition_syntax");
        assert_eq!(conditions.len(), 1, "{:?}", wf.diagnostics);
        assert!(
            conditions[0].message.contains("nest too deeply"),
            "{conditions:?}"
        );
        let schemas = of_rule(&wf, "output_schema_valid");
        assert_eq!(schemas.len(), 1, "{:?}", wf.diagnostics);
        assert!(schemas[0].message.contains("deep.json"), "{schemas:?}");
    }

    #[test]
    fn raw_blocks_keep_literal_template_syntax() {
        let dir = tempfile::tempdir().expect("temp dir");
        let wf = load_in(
            dir.path(),
            "digraph F { graph [goal=\"g\"]; start [shape=Mdiamond]; exit [shape=Msquare]\n plan [prompt=\"{% raw %}{{ goal }}{% endraw %}\"]\n start -> plan -> exit }",
            &LoadOptions::default(),
        );
        assert_eq!(
            node_text(&wf, "plan", "prompt").as_deref(),
            Some("{{ goal }}")
        );
    }
}
