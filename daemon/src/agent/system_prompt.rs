//! The system prompt of a session (agents/prompts.mdx, "System prompt"):
//! the profile's identity and working rules, an `<environment>` block, a
//! paragraph per tool offered, and the project's instruction files. Built
//! once, on the session's first message.

use std::fmt::Write as _;
use std::path::Path;

use super::instructions::{InstructionFile, repository_root};
use super::profile::Profile;
use super::tools::Tool;

/// What the `<environment>` block says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Environment {
    pub work_dir: String,
    pub git_repository: bool,
    /// The checked-out branch, or `detached at <sha>`; `None` outside a
    /// repository or when HEAD cannot be read.
    pub git_branch: Option<String>,
    pub platform: &'static str,
    pub os_version: String,
    /// `YYYY-MM-DD`, UTC.
    pub date: String,
    pub model: String,
}

/// Largest `HEAD` file read (a ref name or a hash; anything longer is not a
/// HEAD).
const MAX_HEAD_BYTES: u64 = 4096;

impl Environment {
    /// The environment of a session working in `work_dir` with `model`.
    pub(crate) fn detect(work_dir: &Path, model: &str) -> Environment {
        let root = repository_root(work_dir);
        Environment {
            work_dir: work_dir.display().to_string(),
            git_repository: root.is_some(),
            git_branch: root.as_deref().and_then(git_branch),
            platform: std::env::consts::OS,
            os_version: os_version(),
            date: humantime::format_rfc3339(std::time::SystemTime::now())
                .to_string()
                .chars()
                .take(10)
                .collect(),
            model: model.to_string(),
        }
    }

    fn render(&self, out: &mut String) {
        out.push_str("<environment>\n");
        let _ = writeln!(out, "Working directory: {}", self.work_dir);
        let _ = writeln!(out, "Is git repository: {}", self.git_repository);
        if let Some(branch) = &self.git_branch {
            let _ = writeln!(out, "Git branch: {branch}");
        }
        let _ = writeln!(out, "Platform: {}", self.platform);
        let _ = writeln!(out, "OS version: {}", self.os_version);
        let _ = writeln!(out, "Today's date: {}", self.date);
        let _ = writeln!(out, "Model: {}", self.model);
        out.push_str("</environment>\n");
    }
}

/// The branch `root/.git/HEAD` names, read without running git. A worktree's
/// `.git` is a file `gitdir: PATH`; its HEAD is in that directory.
fn git_branch(root: &Path) -> Option<String> {
    let dot_git = root.join(".git");
    let git_dir = if dot_git.is_file() {
        let text = read_small(&dot_git)?;
        let target = text.trim().strip_prefix("gitdir:")?.trim().to_string();
        let target = Path::new(&target);
        if target.is_absolute() {
            target.to_path_buf()
        } else {
            root.join(target)
        }
    } else {
        dot_git
    };
    let head = read_small(&git_dir.join("HEAD"))?;
    let head = head.trim();
    if let Some(reference) = head.strip_prefix("ref:") {
        let reference = reference.trim();
        Some(
            reference
                .strip_prefix("refs/heads/")
                .unwrap_or(reference)
                .to_string(),
        )
    } else if head.len() >= 7 && head.chars().all(|c| c.is_ascii_hexdigit()) {
        Some(format!("detached at {}", &head[..7]))
    } else {
        None
    }
}

fn read_small(path: &Path) -> Option<String> {
    crate::limits::read_text_capped(path, MAX_HEAD_BYTES).ok()
}

/// The kernel's release (`Linux 6.1.0`), or the platform alone.
fn os_version() -> String {
    let name = match std::env::consts::OS {
        "linux" => "Linux",
        "macos" => "Darwin",
        other => other,
    };
    match read_small(Path::new("/proc/sys/kernel/osrelease")) {
        Some(release) if !release.trim().is_empty() => format!("{name} {}", release.trim()),
        _ => name.to_string(),
    }
}

/// Who the agent is, per profile. Original prose: each family gets the same
/// rules in words its models follow well.
fn identity(profile: Profile) -> &'static str {
    match profile {
        Profile::Anthropic => {
            "You are a coding agent working inside Weft, a runner for software workflows. \
             You carry out one stage of a workflow: a task on a code base, given in the \
             user's message. Work autonomously with the tools provided until the task is \
             done, then reply with a short account of what you did. Nobody is watching \
             the session live, so do not ask questions you could answer by looking."
        }
        Profile::OpenAi => {
            "You are a coding agent run by Weft, a workflow runner. Your task is one stage \
             of a workflow, described in the user's message. Use the tools to inspect and \
             change the repository, verify your work, and finish with a concise summary. \
             Keep going until the task is fully handled; do not stop to ask for \
             confirmation."
        }
        Profile::Gemini => {
            "You are a software engineering agent inside Weft, a workflow runner. You are \
             given one task from a workflow in the user's message. Investigate the code \
             with your tools, make the changes the task needs, check them, and end your \
             turn with a brief report. Act on your own: the session runs unattended."
        }
        Profile::OpenAiCompatible => {
            "You are a coding agent inside Weft, a workflow runner. Do the task in the \
             user's message using the tools provided. Call tools to read, search and \
             change files; when the task is done, answer with a short summary and no tool \
             calls."
        }
    }
}

/// How to work, for every profile.
const WORKING_RULES: &str = "\
# How to work

- Read before you change: look at the files a task concerns and follow the \
conventions you find there.
- Keep changes small and to the point. Do not refactor, rename or add \
features the task does not ask for.
- Prefer editing existing files to creating new ones.
- When a step fails, read the error and try a different approach rather \
than repeating the same call.
- Check your work when you can (build, tests) before you report.
- Your final message is the stage's result: say what changed and anything \
left undone. Follow any output format the task asks for exactly.
";

/// A paragraph of guidance per tool.
fn guidance(tool: Tool) -> &'static str {
    match tool {
        Tool::ReadFile => {
            "Reads a file with line numbers. Read a file before you change it (writes to \
             files you have not read are refused). Page through large files with offset \
             and limit."
        }
        Tool::ReadManyFiles => {
            "Reads several files in one call; use it to take in a handful of related files \
             at once."
        }
        Tool::ListDir => "Lists a directory's entries; use it to find your way around.",
        Tool::Grep => {
            "Searches file contents with a regular expression, honouring .gitignore. Use it \
             instead of running grep or rg in the shell. Files it finds count as read."
        }
        Tool::Glob => {
            "Finds files by name pattern (`src/**/*.rs`). Use it instead of find or ls in \
             the shell."
        }
        Tool::WriteFile => {
            "Creates a file, or replaces one whole. For changes to an existing file prefer \
             the editing tool."
        }
        Tool::EditFile => {
            "Replaces an exact piece of text in a file. old_string must match the file \
             exactly, whitespace included, and only once (or set replace_all); add \
             surrounding lines to make it unique."
        }
        Tool::ApplyPatch => {
            "Applies a patch in the v4a format (*** Begin Patch / *** Update File: ... / \
             *** End Patch) to add, update, delete or move files. Give enough context lines \
             for each hunk to be found."
        }
        Tool::Shell => {
            "Runs a command with /bin/bash in the working directory: builds, tests, git. Do \
             not use it to read, search or edit files when a tool does that. Long commands \
             need timeout_ms; output is cut when very long."
        }
        Tool::WebFetch => "Fetches an http(s) page as Markdown.",
        Tool::WebSearch => "Searches the web; returns titles, links and snippets.",
    }
}

/// The whole system prompt.
pub(crate) fn build(
    profile: Profile,
    environment: &Environment,
    tools: &[Tool],
    instructions: &[InstructionFile],
) -> String {
    let mut out = String::new();
    out.push_str(identity(profile));
    out.push_str("\n\n");
    environment.render(&mut out);
    out.push('\n');
    out.push_str(WORKING_RULES);
    if !tools.is_empty() {
        out.push_str("\n# Tools\n\nPaths are relative to the working directory; tools cannot reach outside it.\n");
        for tool in tools {
            let _ = write!(out, "\n## {}\n{}\n", tool.name(), guidance(*tool));
        }
    }
    if !instructions.is_empty() {
        out.push_str(
            "\n# Project instructions\n\nThe repository's own instructions for agents, from \
             its root down to the working directory; later files are more specific.\n",
        );
        for file in instructions {
            let _ = write!(
                out,
                "\n<instructions file=\"{}\">\n{}",
                file.shown, file.text
            );
            if !file.text.ends_with('\n') {
                out.push('\n');
            }
            out.push_str("</instructions>\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn environment() -> Environment {
        Environment {
            work_dir: "/w".into(),
            git_repository: true,
            git_branch: Some("main".into()),
            platform: "linux",
            os_version: "Linux 6.1".into(),
            date: "2026-12-03".into(),
            model: "m".into(),
        }
    }

    #[test]
    fn the_prompt_has_environment_tools_and_instructions_in_order() {
        let files = [InstructionFile {
            shown: "AGENTS.md".into(),
            text: "Use tabs.".into(),
        }];
        let prompt = build(
            Profile::OpenAi,
            &environment(),
            &[Tool::ReadFile, Tool::ApplyPatch],
            &files,
        );
        let env = prompt.find("<environment>").expect("environment");
        let tools = prompt.find("## apply_patch").expect("tool guidance");
        let docs = prompt.find("Use tabs.").expect("instructions");
        assert!(env < tools && tools < docs, "{prompt}");
        assert!(prompt.contains("Git branch: main\n"));
        assert!(prompt.contains("Today's date: 2026-12-03\n"));
        assert!(!prompt.contains("## edit_file"), "only the tools offered");
    }

    #[test]
    fn the_branch_is_read_from_head_and_from_a_worktree_gitdir() {
        let repo = tempfile::tempdir().expect("temp");
        std::fs::create_dir(repo.path().join(".git")).expect("dir");
        std::fs::write(repo.path().join(".git/HEAD"), "ref: refs/heads/feature/x\n").expect("w");
        assert_eq!(git_branch(repo.path()).as_deref(), Some("feature/x"));
        std::fs::write(repo.path().join(".git/HEAD"), "0123456789abcdef0123\n").expect("w");
        assert_eq!(
            git_branch(repo.path()).as_deref(),
            Some("detached at 0123456")
        );

        let worktree = tempfile::tempdir().expect("temp");
        let gitdir = repo.path().join(".git/worktrees/wt");
        std::fs::create_dir_all(&gitdir).expect("dir");
        std::fs::write(gitdir.join("HEAD"), "ref: refs/heads/a-loop\n").expect("w");
        std::fs::write(
            worktree.path().join(".git"),
            format!("gitdir: {}\n", gitdir.display()),
        )
        .expect("w");
        assert_eq!(git_branch(worktree.path()).as_deref(), Some("a-loop"));
        let env = Environment::detect(worktree.path(), "m");
        assert!(env.git_repository);
    }
}
