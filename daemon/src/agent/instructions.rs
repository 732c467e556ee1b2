//! Project instruction files (agents/prompts.mdx, "Project docs"): the
//! `AGENTS.md`-style files a repository keeps for coding agents, found from
//! the repository root down to the work dir and put into the system prompt.

use std::path::{Path, PathBuf};

use super::profile::Profile;

/// The most bytes of instruction files a system prompt carries; files past
/// it are cut (with a note) or left out.
pub(crate) const INSTRUCTIONS_BUDGET: usize = 32 * 1024;

/// How many directories up from the work dir a repository root is looked
/// for (a bound on a walk over a hostile tree).
const MAX_ASCENT: usize = 64;

/// One file found, as it goes into the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InstructionFile {
    /// The path as shown to the model: relative to the repository root.
    pub shown: String,
    pub text: String,
}

impl Profile {
    /// The instruction file names this profile reads, in the order they
    /// are read within one directory.
    #[must_use]
    pub fn instruction_files(self) -> &'static [&'static str] {
        match self {
            Profile::Anthropic => &["AGENTS.md", "CLAUDE.md"],
            Profile::OpenAi => &["AGENTS.md", ".codex/instructions.md"],
            Profile::Gemini => &["AGENTS.md", "GEMINI.md"],
            Profile::OpenAiCompatible => &["AGENTS.md"],
        }
    }
}

/// The repository root above `dir`: the first of `dir` and its parents
/// holding `.git` (a directory, or a file for worktrees); `None` outside a
/// repository.
pub(crate) fn repository_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .take(MAX_ASCENT)
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The instruction files for `profile` from the repository root down to
/// `work_dir` (root first), or in `work_dir` alone outside a repository,
/// within [`INSTRUCTIONS_BUDGET`] bytes in all. Unreadable, non-regular or
/// oversized files are skipped: instructions are a help, never a reason to
/// fail.
pub(crate) fn discover(work_dir: &Path, profile: Profile) -> Vec<InstructionFile> {
    let work_dir = work_dir
        .canonicalize()
        .unwrap_or_else(|_| work_dir.to_path_buf());
    let root = repository_root(&work_dir).unwrap_or_else(|| work_dir.clone());
    // Root first: the directories from the root down to the work dir.
    let mut dirs: Vec<&Path> = work_dir
        .ancestors()
        .take_while(|d| d.starts_with(&root))
        .collect();
    dirs.reverse();

    let mut files = Vec::new();
    let mut left = INSTRUCTIONS_BUDGET;
    for dir in dirs {
        for name in profile.instruction_files() {
            if left == 0 {
                return files;
            }
            let path = dir.join(name);
            // Read at most one byte past the budget left: the rest is cut anyway.
            let cap = u64::try_from(left).unwrap_or(u64::MAX).saturating_add(1);
            let Some(bytes) = read_prefix(&path, cap) else {
                continue;
            };
            let text = String::from_utf8_lossy(&bytes).into_owned();
            if text.trim().is_empty() {
                continue;
            }
            let shown = path
                .strip_prefix(&root)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            let text = if text.len() > left {
                let mut end = left;
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                format!(
                    "{}\n[... cut: project instructions are limited to {} KB in all]",
                    &text[..end],
                    INSTRUCTIONS_BUDGET / 1024
                )
            } else {
                text
            };
            left = left.saturating_sub(text.len());
            files.push(InstructionFile { shown, text });
        }
    }
    files
}

/// The first `cap` bytes of the regular file at `path`; `None` when it is
/// missing, not a regular file, or unreadable.
fn read_prefix(path: &Path, cap: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let file = crate::limits::open_regular(path).ok()?;
    let mut bytes = Vec::new();
    file.take(cap).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_read_from_the_repository_root_down_to_the_work_dir() {
        let repo = tempfile::tempdir().expect("temp");
        let root = repo.path();
        std::fs::create_dir_all(root.join(".git")).expect("git");
        std::fs::create_dir_all(root.join("crates/app")).expect("dirs");
        std::fs::write(root.join("AGENTS.md"), "root agents").expect("w");
        std::fs::write(root.join("crates/CLAUDE.md"), "crates claude").expect("w");
        std::fs::write(root.join("crates/app/AGENTS.md"), "app agents").expect("w");
        std::fs::write(root.join("crates/app/GEMINI.md"), "app gemini").expect("w");
        let found = discover(&root.join("crates/app"), Profile::Anthropic);
        let shown: Vec<_> = found.iter().map(|f| f.shown.as_str()).collect();
        assert_eq!(
            shown,
            ["AGENTS.md", "crates/CLAUDE.md", "crates/app/AGENTS.md"]
        );
        assert_eq!(found[1].text, "crates claude");
        let gemini = discover(&root.join("crates/app"), Profile::Gemini);
        assert!(gemini.iter().any(|f| f.shown == "crates/app/GEMINI.md"));
        assert!(!gemini.iter().any(|f| f.shown.ends_with("CLAUDE.md")));
    }

    #[test]
    fn outside_a_repository_only_the_work_dir_is_read() {
        let outer = tempfile::tempdir().expect("temp");
        std::fs::create_dir_all(outer.path().join("work")).expect("dir");
        std::fs::write(outer.path().join("AGENTS.md"), "parent").expect("w");
        std::fs::write(outer.path().join("work/AGENTS.md"), "work").expect("w");
        let found = discover(&outer.path().join("work"), Profile::OpenAiCompatible);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].text, "work");
    }

    #[test]
    fn the_budget_cuts_later_files() {
        let repo = tempfile::tempdir().expect("temp");
        let root = repo.path();
        std::fs::create_dir_all(root.join(".git")).expect("git");
        std::fs::create_dir_all(root.join("sub")).expect("dir");
        std::fs::write(root.join("AGENTS.md"), "a".repeat(30 * 1024)).expect("w");
        std::fs::write(root.join("sub/AGENTS.md"), "b".repeat(10 * 1024)).expect("w");
        std::fs::write(root.join("sub/CLAUDE.md"), "never read").expect("w");
        let found = discover(&root.join("sub"), Profile::Anthropic);
        assert_eq!(
            found.len(),
            2,
            "{:?}",
            found.iter().map(|f| &f.shown).collect::<Vec<_>>()
        );
        assert!(
            found[1]
                .text
                .contains("cut: project instructions are limited to 32 KB")
        );
        assert_eq!(found[1].text.matches('b').count(), 2 * 1024);
    }

    #[test]
    fn a_fifo_or_directory_named_like_an_instruction_file_is_skipped() {
        let dir = tempfile::tempdir().expect("temp");
        std::fs::create_dir(dir.path().join("AGENTS.md")).expect("dir");
        let fifo = dir.path().join("CLAUDE.md");
        let status = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !status.is_ok_and(|s| s.success()) {
            return;
        }
        assert!(discover(dir.path(), Profile::Anthropic).is_empty());
    }
}
