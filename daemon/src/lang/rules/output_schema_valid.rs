//! `output_schema_valid`: a node's `output_schema` is the word `routing` or
//! `@path` to a readable JSON file holding a valid JSON Schema (error;
//! agents/outputs.mdx). A missing file is `unresolved_file_ref`'s to report.
//! On a node other than an agent, prompt or command it has no effect
//! (warning).

use rustc_hash::FxHashSet;

use super::{Cx, closest};
use crate::lang::Handler;
use crate::lang::attrs::Attr;
use crate::lang::diagnostic::Diagnostic;
use crate::lang::graph::Node;

const RULE: &str = "output_schema_valid";

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    // Node defaults put one written value on many nodes: check it once.
    let mut seen = FxHashSet::default();
    for (_, node) in cx.nodes_with("output_schema") {
        let Some(attr) = node.attrs.get("output_schema") else {
            continue;
        };
        if !matches!(
            node.handler,
            Handler::Agent | Handler::Prompt | Handler::Command
        ) {
            out.push(
                Diagnostic::warning(
                    RULE,
                    format!(
                        "`output_schema` has no effect on {} node `{}`",
                        node.handler.name(),
                        node.id
                    ),
                )
                .at(attr.key_span)
                .on_node(&node.id)
                .with_hint("remove it; only agent, prompt and command nodes validate their output"),
            );
            continue;
        }
        if !seen.insert(attr.value_span.start) {
            continue;
        }
        if let Some((message, hint)) = problem(cx, node, attr) {
            out.push(
                Diagnostic::error(RULE, message)
                    .at(attr.value_span)
                    .on_node(&node.id)
                    .with_hint(hint),
            );
        }
    }
}

/// What is wrong with the value, as a message and a hint.
fn problem(cx: &Cx<'_>, node: &Node, attr: &Attr) -> Option<(String, String)> {
    let text = attr.value.as_text();
    let text = text.trim();
    if text == "routing" {
        return None;
    }
    if !text.starts_with('@') {
        let hint = if closest(text, ["routing"]).is_some() {
            "did you mean `routing`?".to_string()
        } else {
            format!("write `@{text}` to load a schema file, or `routing` for the routing schema")
        };
        return Some((
            format!("`output_schema` must be `routing` or `@path.json`, found `{text}`"),
            hint,
        ));
    }
    let schema_hint = "fix the file so it holds one JSON Schema object".to_string();
    // The loader records every `@` path; a missing one is reported there.
    let Some(file_ref) = cx
        .file_refs
        .iter()
        .find(|r| r.node.as_deref() == Some(node.id.as_ref()) && attr.key == r.key.as_str())
    else {
        return Some((
            "`output_schema` names no file".into(),
            "write `@path/to/schema.json`".into(),
        ));
    };
    if file_ref.error.is_some() {
        return None;
    }
    // The loader checked where the file is, its type and its size.
    let json = match crate::limits::read_text_capped(
        &file_ref.path,
        crate::limits::MAX_REFERENCED_BYTES,
    ) {
        Ok(json) => json,
        Err(e) => return Some((format!("`{text}` cannot be read: {e}"), schema_hint)),
    };
    let schema: serde_json::Value = match serde_json::from_str(&json) {
        Ok(schema) => schema,
        Err(e) => return Some((format!("`{text}` is not valid JSON: {e}"), schema_hint)),
    };
    let e = jsonschema::validator_for(&schema).err()?;
    let at = e.instance_path();
    let place = if at.is_empty() {
        String::new()
    } else {
        format!(" (at `{}`)", at.as_str())
    };
    Some((
        format!("`{text}` is not a valid JSON Schema: {e}{place}"),
        schema_hint,
    ))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::lang::diagnostic::Diagnostic;
    use crate::lang::rules::test_support::{of_rule, wrap};
    use crate::lang::workflow::{LoadOptions, Workflow};

    const RULE: &str = super::RULE;

    /// Loads a workflow whose `audit` node uses `schema` from `dir`.
    fn load_with_schema(dir: &Path, schema: &str) -> Vec<Diagnostic> {
        std::fs::write(dir.join("audit.json"), schema).unwrap();
        let src = wrap(
            "  audit [shape=tab, prompt=\"x\", output_schema=\"@audit.json\"]\n  start -> audit -> exit",
        );
        let path = dir.join("flow.fabro");
        std::fs::write(&path, src).unwrap();
        let wf = Workflow::load(&path, &LoadOptions::default()).unwrap();
        wf.diagnostics
            .into_iter()
            .filter(|d| d.rule == RULE)
            .collect()
    }

    #[test]
    fn a_schema_that_is_not_json_reports_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let d = load_with_schema(dir.path(), "{\n  \"type\": \"object\",\n  oops\n}\n");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].is_error());
        assert_eq!(d[0].node_id.as_deref(), Some("audit"));
        assert_eq!(d[0].span.map(|s| s.line), Some(4));
        assert!(
            d[0].message.contains("is not valid JSON") && d[0].message.contains("line 3"),
            "{d:?}"
        );
    }

    #[test]
    fn json_that_is_not_a_schema_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let d = load_with_schema(dir.path(), r#"{"type": "objekt"}"#);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].message.contains("is not a valid JSON Schema"), "{d:?}");
    }

    #[test]
    fn a_valid_schema_file_is_quiet() {
        let dir = tempfile::tempdir().unwrap();
        let schema =
            r#"{"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}"#;
        assert!(load_with_schema(dir.path(), schema).is_empty());
    }

    #[test]
    fn a_missing_file_is_left_to_unresolved_file_ref() {
        let src = wrap(
            "  audit [prompt=\"x\", output_schema=\"@nowhere.json\"]\n  start -> audit -> exit",
        );
        assert!(of_rule(&src, RULE).is_empty());
        assert_eq!(of_rule(&src, "unresolved_file_ref").len(), 1);
    }

    #[test]
    fn a_bare_path_or_misspelt_routing_is_an_error() {
        let src = wrap(concat!(
            "  a [prompt=\"x\", output_schema=\"schema.json\"]\n",
            "  b [prompt=\"y\", output_schema=routng]\n",
            "  start -> a -> b -> exit",
        ));
        let d = of_rule(&src, RULE);
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(
            d[0].hint
                .as_deref()
                .unwrap()
                .starts_with("write `@schema.json`"),
            "{d:?}"
        );
        assert_eq!(d[1].hint.as_deref(), Some("did you mean `routing`?"));
    }

    #[test]
    fn routing_on_a_non_llm_node_is_a_warning() {
        let src = wrap(concat!(
            "  gate [shape=hexagon, output_schema=routing]\n",
            "  run [shape=parallelogram, script=\"true\", output_schema=routing]\n",
            "  start -> gate -> run -> exit",
        ));
        let d = of_rule(&src, RULE);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(!d[0].is_error());
        assert_eq!(d[0].node_id.as_deref(), Some("gate"));
    }
}
