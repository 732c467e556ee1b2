//! `unresolved_file_ref` (error): every file a workflow names (`@prompt.md`,
//! `output_schema="@schema.json"`, `stack.child_workflow`) must be readable.
//! The loader resolves them; this rule reports the ones it could not read
//! (reference/dot-language.mdx, "Prompt file references"). An unreadable
//! `import` is the import pass's `import_not_found` instead.

use super::Cx;
use crate::lang::diagnostic::Diagnostic;
use crate::lang::workflow::FileRef;

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    // An unreadable `import` is `import_not_found`, reported by the loader.
    // A refused file (outside the tree) is `file_outside_tree`.
    for file_ref in cx
        .file_refs
        .iter()
        .filter(|r| r.key != "import" && !r.refused)
    {
        let Some(reason) = &file_ref.error else {
            continue;
        };
        let owner = match &file_ref.node {
            Some(id) => format!("{} of `{id}`", file_ref.key),
            None => format!("graph {}", file_ref.key),
        };
        let mut d = Diagnostic::error(
            "unresolved_file_ref",
            format!(
                "`{}` ({owner}) cannot be read: {reason}",
                as_written(cx, file_ref)
            ),
        )
        .at(file_ref.span)
        .with_hint(file_ref.hint.clone().unwrap_or_else(|| {
            format!(
                "paths are relative to the workflow file's directory; this one resolves to `{}`",
                file_ref.path.display()
            )
        }));
        if let Some(id) = &file_ref.node {
            d = d.on_node(id);
        }
        out.push(d);
    }
}

/// The reference as the file spells it: with its `@` when it had one.
fn as_written(cx: &Cx<'_>, file_ref: &FileRef) -> String {
    let attrs = match &file_ref.node {
        Some(id) => cx.graph.node(id).map(|n| &n.attrs),
        None => Some(&cx.graph.attrs),
    };
    let has_at = attrs
        .and_then(|a| a.text(&file_ref.key))
        .is_some_and(|t| t.trim_start().starts_with('@'));
    if has_at {
        format!("@{}", file_ref.written)
    } else {
        file_ref.written.clone()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::lang::diagnostic::Diagnostic;
    use crate::lang::workflow::{LoadOptions, Workflow};

    fn load(dir: &Path, src: &str) -> Vec<Diagnostic> {
        let path = dir.join("flow.fabro");
        std::fs::write(&path, src).unwrap();
        let wf = Workflow::load(&path, &LoadOptions::default()).unwrap();
        wf.diagnostics
            .into_iter()
            .filter(|d| d.rule == "unresolved_file_ref")
            .collect()
    }

    #[test]
    fn a_missing_prompt_file_is_an_error_naming_the_resolved_path() {
        let dir = tempfile::tempdir().unwrap();
        let src = "digraph T {\n  start -> plan -> exit\n  plan [prompt=\"@prompts/plan.md\"]\n}\n";
        let d = load(dir.path(), src);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].is_error());
        assert_eq!(
            d[0].message,
            "`@prompts/plan.md` (prompt of `plan`) cannot be read: no such file"
        );
        assert_eq!(d[0].node_id.as_deref(), Some("plan"));
        assert_eq!(d[0].span.map(|s| (s.line, s.column)), Some((3, 16)));
        let resolved = dir.path().join("prompts/plan.md");
        assert!(
            d[0].hint
                .as_deref()
                .unwrap()
                .contains(&resolved.display().to_string()),
            "{d:?}"
        );
    }

    #[test]
    fn a_missing_child_workflow_is_shown_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let src = "digraph T {\n  start -> sub -> exit\n  sub [shape=house, stack.child_workflow=\"child.fabro\"]\n}\n";
        let d = load(dir.path(), src);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(
            d[0].message
                .starts_with("`child.fabro` (stack.child_workflow of `sub`)"),
            "{d:?}"
        );
    }

    #[test]
    fn a_missing_goal_file_is_reported_on_the_graph() {
        let dir = tempfile::tempdir().unwrap();
        let d = load(
            dir.path(),
            "digraph T {\n  goal=\"@goal.md\"\n  start -> exit\n}\n",
        );
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].message.contains("(graph goal)"), "{d:?}");
        assert_eq!(d[0].node_id, None);
    }

    #[test]
    fn files_that_exist_are_quiet() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("prompts")).unwrap();
        std::fs::write(dir.path().join("prompts/plan.md"), "Plan it.").unwrap();
        let src = "digraph T {\n  start -> plan -> exit\n  plan [prompt=\"@prompts/plan.md\"]\n}\n";
        assert!(load(dir.path(), src).is_empty());
    }
}
