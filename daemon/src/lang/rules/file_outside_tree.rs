//! `file_outside_tree` (error): a file a workflow names (`@prompt.md`,
//! `goal="@..."`, `output_schema`, a child workflow, an import) lies outside
//! the workflow's tree — its git work tree, or outside a repository its own
//! directory — or is a kernel file under `/proc`, `/sys` or `/dev`. The
//! loader refuses to read it (see `lang/files.rs` for why); this rule
//! reports the refusal. Imports are reported by the import pass under this
//! same id.

use super::Cx;
use crate::lang::diagnostic::Diagnostic;
use crate::lang::files::FILE_OUTSIDE_TREE;

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    for file_ref in cx
        .file_refs
        .iter()
        .filter(|r| r.refused && r.key != "import")
    {
        let owner = match &file_ref.node {
            Some(id) => format!("{} of `{id}`", file_ref.key),
            None => format!("graph {}", file_ref.key),
        };
        let reason = file_ref
            .error
            .as_deref()
            .unwrap_or("it is outside the workflow's tree");
        let mut d = Diagnostic::error(
            FILE_OUTSIDE_TREE,
            format!("`{}` ({owner}) is not read: {reason}", file_ref.written),
        )
        .at(file_ref.span);
        if let Some(hint) = &file_ref.hint {
            d = d.with_hint(hint.clone());
        }
        if let Some(id) = &file_ref.node {
            d = d.on_node(id);
        }
        out.push(d);
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::lang::diagnostic::Diagnostic;
    use crate::lang::workflow::{LoadOptions, Workflow};

    fn load(dir: &Path, src: &str) -> Workflow {
        let path = dir.join("flow.fabro");
        std::fs::write(&path, src).expect("write");
        Workflow::load(&path, &LoadOptions::default()).expect("load")
    }

    fn of_rule<'a>(wf: &'a Workflow, rule: &str) -> Vec<&'a Diagnostic> {
        wf.diagnostics.iter().filter(|d| d.rule == rule).collect()
    }

    #[test]
    fn the_process_environment_is_never_read_into_the_goal() {
        let dir = tempfile::tempdir().expect("temp dir");
        let wf = load(
            dir.path(),
            "digraph T {\n  graph [goal=\"@/proc/self/environ\"]\n  start -> exit\n}\n",
        );
        let d = of_rule(&wf, "file_outside_tree");
        assert_eq!(d.len(), 1, "{:?}", wf.diagnostics);
        assert!(d[0].is_error());
        assert_eq!(d[0].span.map(|s| (s.line, s.column)), Some((2, 15)));
        assert!(d[0].message.contains("/proc/self/environ"), "{d:?}");
        let goal = wf
            .graph
            .as_ref()
            .and_then(|g| g.attrs.text("goal"))
            .map(std::borrow::Cow::into_owned);
        assert_eq!(
            goal.as_deref(),
            Some("@/proc/self/environ"),
            "the reference is left as written, never replaced by the file"
        );
        assert!(
            of_rule(&wf, "unresolved_file_ref").is_empty(),
            "reported once, under its own rule: {:?}",
            wf.diagnostics
        );
    }

    #[test]
    fn prompts_and_schemas_outside_the_workflows_directory_are_refused() {
        let outer = tempfile::tempdir().expect("temp dir");
        let flows = outer.path().join("flows");
        std::fs::create_dir(&flows).expect("mkdir");
        std::fs::write(outer.path().join("secret.md"), "secret").expect("write");
        std::fs::write(outer.path().join("schema.json"), "{}").expect("write");
        let home_file = std::env::var_os("HOME").map(|h| Path::new(&h).join(".bashrc"));
        let wf = load(
            &flows,
            "digraph T {\n  start -> plan -> exit\n  plan [shape=tab, prompt=\"@../secret.md\", output_schema=\"@../schema.json\"]\n  note [shape=tab, prompt=\"@~/.bashrc\"]\n  start -> note -> exit\n}\n",
        );
        let d = of_rule(&wf, "file_outside_tree");
        let expected = if home_file.is_some_and(|f| f.exists()) {
            3
        } else {
            2
        };
        assert_eq!(d.len(), expected, "{:?}", wf.diagnostics);
        assert!(
            d.iter().all(|d| d
                .hint
                .as_deref()
                .is_some_and(|h| h.contains("copy the file into the tree"))),
            "{d:?}"
        );
        let prompt = wf
            .graph
            .as_ref()
            .and_then(|g| g.node("plan"))
            .and_then(|n| n.attrs.text("prompt"))
            .map(std::borrow::Cow::into_owned);
        assert_eq!(prompt.as_deref(), Some("@../secret.md"));
    }

    #[test]
    fn files_anywhere_in_the_git_work_tree_are_read() {
        let repo = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(repo.path().join(".git")).expect("mkdir");
        std::fs::create_dir_all(repo.path().join("flows")).expect("mkdir");
        std::fs::create_dir_all(repo.path().join("prompts")).expect("mkdir");
        std::fs::write(repo.path().join("prompts/plan.md"), "Plan.").expect("write");
        let wf = load(
            &repo.path().join("flows"),
            "digraph T {\n  start -> plan -> exit\n  plan [shape=tab, prompt=\"@../prompts/plan.md\"]\n}\n",
        );
        assert!(wf.is_valid(), "{:?}", wf.diagnostics);
    }
}
