//! `{{ goal }}` and `{{ inputs.NAME }}` templates (workflows/variables.mdx),
//! rendered with MiniJinja and strict undefined variables.
//!
//! Passes, as the reference describes:
//! 1. before parsing, when the source uses `inputs` inside a template tag,
//!    the whole text is rendered with the inputs and `{{ goal }}` preserved,
//!    so inputs can shape the graph's structure;
//! 2. after parsing, every string attribute is rendered with the real goal
//!    and inputs;
//! 3. (engine) a final render at run time.
//!
//! Pass 1 is skipped for sources that do not mention `inputs` in a tag, so
//! `{% raw %}` escapes survive to pass 2 and positions stay exact.
//!
//! Rendering draws on MiniJinja fuel from a budget shared by the whole load
//! ([`super::budget::TEMPLATE_FUEL`]): fuel counts instructions and the
//! bytes a template creates, so `{% for %}` loops nested four deep stop
//! with an error instead of running for hours and filling memory.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::LazyLock;

use minijinja::{Environment, UndefinedBehavior, Value};
use regex::Regex;

use super::budget::TEMPLATE_FUEL;

/// The rule id of template errors.
pub(crate) const TEMPLATE: &str = "template";

/// A template that failed to parse or render.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TemplateError {
    pub message: String,
    /// Byte range inside the template text, when MiniJinja knows it.
    pub range: Option<std::ops::Range<usize>>,
    /// 1-based line inside the template text, when known.
    pub line: Option<usize>,
    /// The load's template budget ran out (see [`TEMPLATE_FUEL`]).
    pub out_of_fuel: bool,
}

/// What to tell the user when the budget runs out.
pub(crate) const OUT_OF_FUEL_HINT: &str = "templates are for `{{ goal }}`, `{{ inputs.NAME }}` and small conditions; loops that produce this much text do not belong in a workflow";

impl TemplateError {
    fn from_minijinja(e: &minijinja::Error) -> Self {
        let out_of_fuel = e.kind() == minijinja::ErrorKind::OutOfFuel;
        let message = match (e.kind(), e.detail()) {
            (minijinja::ErrorKind::UndefinedError, _) => {
                "undefined variable in template".to_string()
            }
            _ if out_of_fuel => format!(
                "templates do too much work: rendering stopped at the limit for the whole workflow ({TEMPLATE_FUEL} units, about as many instructions or 64 bytes of text each)"
            ),
            (kind, Some(detail)) => format!("{kind}: {detail}"),
            (kind, None) => kind.to_string(),
        };
        TemplateError {
            message,
            range: e.range(),
            line: e.line(),
            out_of_fuel,
        }
    }
}

/// How deep brackets and blocks may nest in one template. MiniJinja's
/// parser stops at 150 levels, but its recursive descent spends about a
/// dozen stack frames per level, which in a debug build is more stack than
/// a worker thread has; no real template nests more than a few levels.
pub(crate) const MAX_TEMPLATE_NESTING: usize = 20;

/// Block tags that open a level closed by an `end...` tag (`set` only in
/// its block form, without `=`).
const BLOCKS: &[&str] = &[
    "if",
    "for",
    "with",
    "filter",
    "macro",
    "call",
    "block",
    "autoescape",
    "set",
];

/// How deep `text` nests as MiniJinja would parse it: inside each `{{ }}`
/// or `{% %}` tag, its brackets (string literals skipped; a `}` closes a
/// dict while one is open, as MiniJinja's lexer reads it), on top of the
/// blocks open around it. Text outside tags, comments and `{% raw %}`
/// blocks do not count: prose may hold any number of `:-(`.
fn nesting(text: &str) -> usize {
    let b = text.as_bytes();
    let (mut i, mut blocks, mut deepest) = (0usize, 0usize, 0usize);
    while i + 1 < b.len() {
        if b[i] != b'{' || !matches!(b[i + 1], b'{' | b'%' | b'#') {
            i += 1;
            continue;
        }
        let kind = b[i + 1];
        i += 2;
        if kind == b'#' {
            i = text
                .get(i..)
                .and_then(|r| r.find("#}"))
                .map_or(b.len(), |k| i + k + 2);
            continue;
        }
        let start = i;
        let mut depth = 0usize;
        while i < b.len() {
            match b[i] {
                quote @ (b'"' | b'\'') => {
                    i += 1;
                    while i < b.len() && b[i] != quote {
                        i += if b[i] == b'\\' { 2 } else { 1 };
                    }
                }
                b'(' | b'[' | b'{' => {
                    depth += 1;
                    deepest = deepest.max(blocks + depth + 1);
                }
                b')' | b']' => depth = depth.saturating_sub(1),
                b'}' if depth > 0 => depth -= 1,
                // The tag's end: `}}` for `{{`, `%}` for `{%`.
                b'}' if kind == b'{' && b.get(i + 1) == Some(&b'}') => break,
                b'%' if kind == b'%' && b.get(i + 1) == Some(&b'}') => break,
                _ => {}
            }
            i += 1;
        }
        let tag = text.get(start..i.min(b.len())).unwrap_or("");
        i += 2;
        deepest = deepest.max(blocks + 1);
        if kind != b'%' {
            continue;
        }
        let body = tag.trim_start_matches(['-', '+', ' ', '\t', '\r', '\n']);
        let word: String = body.chars().take_while(char::is_ascii_alphabetic).collect();
        if word == "raw" {
            // Literal up to `{% endraw %}`: nothing in it is parsed.
            let rest = text.get(i.min(b.len())..).unwrap_or("");
            i = rest.find("endraw").map_or(b.len(), |k| i + k);
        } else if word.starts_with("end") {
            blocks = blocks.saturating_sub(1);
        } else if BLOCKS.contains(&word.as_str()) && (word != "set" || !body.contains('=')) {
            blocks += 1;
            deepest = deepest.max(blocks);
        }
    }
    deepest
}

/// Refuses a template that nests deeper than [`MAX_TEMPLATE_NESTING`]
/// before MiniJinja's parser recurses into it.
fn check_nesting(text: &str) -> Result<(), TemplateError> {
    if nesting(text) <= MAX_TEMPLATE_NESTING {
        return Ok(());
    }
    Err(TemplateError {
        message: format!(
            "the template nests brackets and blocks more than {MAX_TEMPLATE_NESTING} levels deep"
        ),
        range: None,
        line: None,
        out_of_fuel: false,
    })
}

/// The fuel of a first try at each template: nearly all need far less, and
/// a template that fails for another reason (an undefined input) costs the
/// budget at most this much, since how much it used is not known.
const FIRST_TRY_FUEL: u64 = 1_000;

/// Renders `text` with `ctx`, taking what it uses from `fuel`.
fn render_fueled(
    env: &mut Environment<'static>,
    text: &str,
    ctx: &Value,
    fuel: &mut u64,
) -> Result<String, TemplateError> {
    check_nesting(text)?;
    let first = (*fuel).min(FIRST_TRY_FUEL);
    match try_render(env, text, ctx, first) {
        Ok((out, used)) => {
            *fuel = fuel.saturating_sub(used);
            return Ok(out);
        }
        // More fuel may do: try again with all that is left.
        Err(e) if e.kind() == minijinja::ErrorKind::OutOfFuel && first < *fuel => {}
        Err(e) => {
            *fuel = fuel.saturating_sub(first);
            return Err(TemplateError::from_minijinja(&e));
        }
    }
    let all = *fuel;
    match try_render(env, text, ctx, all) {
        Ok((out, used)) => {
            *fuel = fuel.saturating_sub(used);
            Ok(out)
        }
        Err(e) => {
            *fuel = 0;
            Err(TemplateError::from_minijinja(&e))
        }
    }
}

/// One render with `fuel` units; the output and the units used.
fn try_render(
    env: &mut Environment<'static>,
    text: &str,
    ctx: &Value,
    fuel: u64,
) -> Result<(String, u64), minijinja::Error> {
    env.set_fuel(Some(fuel));
    let template = env.template_from_str(text)?;
    let captured = template.render_captured(ctx.clone())?;
    let used = captured.state().fuel_levels().map_or(0, |(used, _)| used);
    Ok((captured.into_output(), used))
}

/// True when `text` contains template syntax and so needs rendering.
#[must_use]
pub(crate) fn has_template(text: &str) -> bool {
    // One fast scan for `{` settles almost every string.
    text.contains('{') && (text.contains("{{") || text.contains("{%") || text.contains("{#"))
}

/// True when some text taken from `source` may hold a template: the
/// source has `{{`, `{%` or `{#`, or a backslash before a line break (a
/// string that continues over the line may join a `{` on one line to a `{`
/// on the next). False means template pass 2 has nothing to render in the
/// values parsed from it. One vectorised scan: `{` and `\\` are rare in a
/// workflow.
#[must_use]
pub(crate) fn may_hold_template(source: &str) -> bool {
    let bytes = source.as_bytes();
    memchr::memchr2_iter(b'{', b'\\', bytes).any(|at| {
        matches!(
            (bytes.get(at), bytes.get(at + 1)),
            (Some(b'{'), Some(b'{' | b'%' | b'#')) | (Some(b'\\'), Some(b'\n' | b'\r'))
        )
    })
}

static USES_INPUTS: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\{[{%][^}]*\binputs\b").ok());

/// True when the source refers to `inputs` inside a template tag, which is
/// when pass 1 (structural rendering) runs.
#[must_use]
pub(crate) fn uses_inputs(source: &str) -> bool {
    // A plain substring search rules out nearly every file before the regex.
    source.contains("inputs") && USES_INPUTS.as_ref().is_some_and(|re| re.is_match(source))
}

fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    // Prompts and scripts keep their final newline, as written.
    if let Ok(syntax) = minijinja::syntax::SyntaxConfig::builder()
        .keep_trailing_newline(true)
        .build()
    {
        env.set_syntax(syntax);
    }
    env
}

fn inputs_value(inputs: &BTreeMap<String, String>) -> Value {
    Value::from(
        inputs
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(v.clone())))
            .collect::<BTreeMap<_, _>>(),
    )
}

/// Renders workflow strings with a fixed goal and inputs.
pub(crate) struct Renderer {
    env: Environment<'static>,
    context: Value,
}

impl Renderer {
    /// A renderer where `{{ goal }}` is `goal` (undefined when `None`) and
    /// `{{ inputs.* }}` reads `inputs`.
    #[must_use]
    pub fn new(goal: Option<&str>, inputs: &BTreeMap<String, String>) -> Self {
        let mut ctx = BTreeMap::new();
        ctx.insert("inputs".to_string(), inputs_value(inputs));
        if let Some(goal) = goal {
            ctx.insert("goal".to_string(), Value::from(goal.to_string()));
        }
        Renderer {
            env: environment(),
            context: Value::from(ctx),
        }
    }

    /// Renders `text`, taking the work from `fuel`; text without template
    /// syntax is returned as is, for free.
    pub fn render<'t>(
        &mut self,
        text: &'t str,
        fuel: &mut u64,
    ) -> Result<Cow<'t, str>, TemplateError> {
        if !has_template(text) {
            return Ok(Cow::Borrowed(text));
        }
        render_fueled(&mut self.env, text, &self.context, fuel).map(Cow::Owned)
    }
}

/// Pass 1: renders the whole source with the inputs, leaving `{{ goal }}`
/// in place for pass 2, taking the work from `fuel`.
pub(crate) fn render_structure(
    source: &str,
    inputs: &BTreeMap<String, String>,
    fuel: &mut u64,
) -> Result<String, TemplateError> {
    let mut ctx = BTreeMap::new();
    ctx.insert("inputs".to_string(), inputs_value(inputs));
    ctx.insert("goal".to_string(), Value::from("{{ goal }}"));
    render_fueled(&mut environment(), source, &Value::from(ctx), fuel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_template_markers_and_continued_lines_may_hold_templates() {
        assert!(!may_hold_template(
            "digraph G { a [label=\"x { y }\", re=\"^v\\d+\"] }"
        ));
        for text in [
            "a {{ goal }}",
            "{% if x %}",
            "{# note #}",
            "\"{\\\n{ goal }}\"",
        ] {
            assert!(may_hold_template(text), "{text:?}");
        }
    }

    fn inputs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn fuel() -> u64 {
        TEMPLATE_FUEL
    }

    #[test]
    fn goal_and_inputs_render() {
        let mut r = Renderer::new(Some("ship it"), &inputs(&[("lang", "rust")]));
        let mut fuel = fuel();
        assert_eq!(
            r.render("{{ goal }} in {{ inputs.lang }}", &mut fuel)
                .as_deref(),
            Ok("ship it in rust")
        );
        assert!(
            fuel < TEMPLATE_FUEL && fuel > TEMPLATE_FUEL - 100,
            "a small template costs a few units: {fuel}"
        );
    }

    #[test]
    fn nested_loops_stop_at_the_budget_with_a_clear_error() {
        let mut r = Renderer::new(Some("g"), &BTreeMap::new());
        let mut fuel = fuel();
        let bomb = "{% for a in range(1000) %}{% for b in range(1000) %}{% for c in range(1000) %}xxxxxxxxxxxxxxxx{% endfor %}{% endfor %}{% endfor %}";
        let e = r.render(bomb, &mut fuel).expect_err("out of fuel");
        assert!(e.out_of_fuel, "{e:?}");
        assert!(e.message.contains("too much work"), "{e:?}");
        assert_eq!(fuel, 0, "the budget is spent");
        let e = r
            .render("{{ goal }}", &mut fuel)
            .expect_err("nothing is left for the next template");
        assert!(e.out_of_fuel, "{e:?}");
    }

    #[test]
    fn doubling_a_string_stops_at_the_budget_before_it_fills_memory() {
        let mut r = Renderer::new(Some("g"), &BTreeMap::new());
        let mut fuel = fuel();
        let doubling = format!(
            "{{% set s = 'x' * 1000000 %}}{}{{{{ s }}}}",
            "{% set s = s ~ s %}".repeat(40)
        );
        let e = r.render(&doubling, &mut fuel).expect_err("out of fuel");
        assert!(e.out_of_fuel, "{e:?}");
    }

    #[test]
    fn nesting_counts_brackets_in_tags_and_open_blocks() {
        assert_eq!(nesting("plain text :-( :-( (((("), 0);
        assert_eq!(nesting("{{ goal }}"), 1);
        assert_eq!(nesting("{% if a %}{{ (b) }}{% endif %}"), 3);
        assert_eq!(
            nesting("{%- for x in y -%}{% if x %}{% endif %}{% endfor %}"),
            3,
            "the `endif` is read inside the `for` and the `if`"
        );
        assert_eq!(
            nesting("{{ {'a': {'b': 1}} }} then (((( prose"),
            3,
            "a dict's `}}` is not the tag's end"
        );
        assert_eq!(nesting("{{ \"}} ((\" ~ ((x)) }}"), 3, "strings are skipped");
        assert_eq!(nesting("{# ((((( #}{% raw %}{{ (((((( }}{% endraw %}"), 1);
        assert_eq!(nesting("{% set x = [1] %}{% set y %}z{% endset %}"), 2);
        let deep = format!("{{{{ {}1{} }}}}", "(".repeat(20), ")".repeat(20));
        let e = Renderer::new(None, &BTreeMap::new())
            .render(&deep, &mut fuel())
            .expect_err("too deep");
        assert!(e.message.contains("more than 20 levels"), "{e:?}");
    }

    #[test]
    fn a_failing_template_costs_at_most_its_first_try() {
        let mut r = Renderer::new(Some("g"), &BTreeMap::new());
        let mut fuel = fuel();
        for _ in 0..100 {
            assert!(r.render("{{ inputs.missing }}", &mut fuel).is_err());
        }
        assert!(fuel >= TEMPLATE_FUEL - 100 * FIRST_TRY_FUEL, "{fuel}");
        assert_eq!(r.render("{{ goal }}", &mut fuel).as_deref(), Ok("g"));
    }

    #[test]
    fn undefined_inputs_are_errors() {
        let mut r = Renderer::new(Some("g"), &inputs(&[("language", "rust")]));
        let e = r
            .render("run {{ inputs.langauge }} tests", &mut fuel())
            .expect_err("strict");
        assert!(e.message.contains("undefined"), "{e:?}");
        assert_eq!(e.range, Some(7..22), "the range covers `inputs.langauge`");
    }

    #[test]
    fn raw_blocks_escape_template_syntax() {
        let mut r = Renderer::new(Some("g"), &BTreeMap::new());
        assert_eq!(
            r.render("{% raw %}{{ goal }}{% endraw %}", &mut fuel())
                .as_deref(),
            Ok("{{ goal }}")
        );
    }

    #[test]
    fn text_without_templates_is_untouched() {
        let mut r = Renderer::new(None, &BTreeMap::new());
        assert!(matches!(
            r.render("plain ${HOME} {x}", &mut fuel()),
            Ok(Cow::Borrowed(_))
        ));
    }

    #[test]
    fn structure_pass_keeps_goal_for_later() {
        let src =
            "digraph G { a [prompt=\"{{ goal }}\"]\n{% if inputs.extra == 'yes' %}b{% endif %} }";
        let out =
            render_structure(src, &inputs(&[("extra", "yes")]), &mut fuel()).expect("renders");
        assert_eq!(out, "digraph G { a [prompt=\"{{ goal }}\"]\nb }");
        assert!(uses_inputs(src));
        assert!(!uses_inputs("digraph G { a [prompt=\"{{ goal }}\"] }"));
    }
}
