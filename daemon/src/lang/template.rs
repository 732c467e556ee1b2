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

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::LazyLock;

use minijinja::{Environment, UndefinedBehavior, Value};
use regex::Regex;

/// The rule id of template errors.
pub const TEMPLATE: &str = "template";

/// A template that failed to parse or render.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateError {
    pub message: String,
    /// Byte range inside the template text, when MiniJinja knows it.
    pub range: Option<std::ops::Range<usize>>,
    /// 1-based line inside the template text, when known.
    pub line: Option<usize>,
}

impl TemplateError {
    fn from_minijinja(e: &minijinja::Error) -> Self {
        let message = match (e.kind(), e.detail()) {
            (minijinja::ErrorKind::UndefinedError, _) => {
                "undefined variable in template".to_string()
            }
            (kind, Some(detail)) => format!("{kind}: {detail}"),
            (kind, None) => kind.to_string(),
        };
        TemplateError {
            message,
            range: e.range(),
            line: e.line(),
        }
    }
}

/// True when `text` contains template syntax and so needs rendering.
#[must_use]
pub fn has_template(text: &str) -> bool {
    // One fast scan for `{` settles almost every string.
    text.contains('{') && (text.contains("{{") || text.contains("{%") || text.contains("{#"))
}

static USES_INPUTS: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\{[{%][^}]*\binputs\b").ok());

/// True when the source refers to `inputs` inside a template tag, which is
/// when pass 1 (structural rendering) runs.
#[must_use]
pub fn uses_inputs(source: &str) -> bool {
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
pub struct Renderer {
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

    /// Renders `text`; text without template syntax is returned as is.
    pub fn render<'t>(&self, text: &'t str) -> Result<Cow<'t, str>, TemplateError> {
        if !has_template(text) {
            return Ok(Cow::Borrowed(text));
        }
        self.env
            .render_str(text, self.context.clone())
            .map(Cow::Owned)
            .map_err(|e| TemplateError::from_minijinja(&e))
    }
}

/// Pass 1: renders the whole source with the inputs, leaving `{{ goal }}`
/// in place for pass 2.
pub fn render_structure(
    source: &str,
    inputs: &BTreeMap<String, String>,
) -> Result<String, TemplateError> {
    let mut ctx = BTreeMap::new();
    ctx.insert("inputs".to_string(), inputs_value(inputs));
    ctx.insert("goal".to_string(), Value::from("{{ goal }}"));
    environment()
        .render_str(source, Value::from(ctx))
        .map_err(|e| TemplateError::from_minijinja(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn goal_and_inputs_render() {
        let r = Renderer::new(Some("ship it"), &inputs(&[("lang", "rust")]));
        assert_eq!(
            r.render("{{ goal }} in {{ inputs.lang }}").as_deref(),
            Ok("ship it in rust")
        );
    }

    #[test]
    fn undefined_inputs_are_errors() {
        let r = Renderer::new(Some("g"), &inputs(&[("language", "rust")]));
        let e = r
            .render("run {{ inputs.langauge }} tests")
            .expect_err("strict");
        assert!(e.message.contains("undefined"), "{e:?}");
        assert_eq!(e.range, Some(7..22), "the range covers `inputs.langauge`");
    }

    #[test]
    fn raw_blocks_escape_template_syntax() {
        let r = Renderer::new(Some("g"), &BTreeMap::new());
        assert_eq!(
            r.render("{% raw %}{{ goal }}{% endraw %}").as_deref(),
            Ok("{{ goal }}")
        );
    }

    #[test]
    fn text_without_templates_is_untouched() {
        let r = Renderer::new(None, &BTreeMap::new());
        assert!(matches!(
            r.render("plain ${HOME} {x}"),
            Ok(Cow::Borrowed(_))
        ));
    }

    #[test]
    fn structure_pass_keeps_goal_for_later() {
        let src =
            "digraph G { a [prompt=\"{{ goal }}\"]\n{% if inputs.extra == 'yes' %}b{% endif %} }";
        let out = render_structure(src, &inputs(&[("extra", "yes")])).expect("renders");
        assert_eq!(out, "digraph G { a [prompt=\"{{ goal }}\"]\nb }");
        assert!(uses_inputs(src));
        assert!(!uses_inputs("digraph G { a [prompt=\"{{ goal }}\"] }"));
    }
}
