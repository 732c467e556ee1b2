//! `weft apply RUN [--to BRANCH] [--patch] [--force]`: brings a
//! checkpointed run's result into the user's checkout. It reads the run
//! store and the run directory and works on the repository itself, so it
//! needs no daemon; the rules are [`crate::engine::apply`]'s.

use super::ApplyArgs;
use super::exit::{self, CliError, CliResult, EXIT_OK};
use crate::engine::apply::{ApplyOptions, RunApplied, apply_run};
use crate::git::Applied;

/// `weft apply`.
pub fn run(args: &ApplyArgs) -> CliResult {
    let (_store, record) = super::open_run(&args.run)?;
    let options = ApplyOptions {
        to: args.to.clone(),
        patch: args.patch,
        force: args.force,
    };
    let done = apply_run(&record, &options).map_err(|e| CliError::Refused(e.message))?;
    if args.json {
        let json = serde_json::to_string(&done)
            .map_err(|e| CliError::usage(format!("cannot encode the result: {e}")))?;
        println!("{json}");
    } else {
        println!("{}", describe(&done));
    }
    exit::code(EXIT_OK)
}

/// One line saying what was done.
fn describe(done: &RunApplied) -> String {
    let id = &done.run_id;
    let short = |sha: &str| sha.chars().take(12).collect::<String>();
    let tree = |updated: bool| {
        if updated {
            "; the working tree is updated"
        } else {
            " (not checked out: only the branch moved)"
        }
    };
    match &done.applied {
        Applied::UpToDate { branch, sha } => format!(
            "{branch} has run {id}'s work already (at {}): nothing to do",
            short(sha)
        ),
        Applied::FastForwarded {
            branch,
            from,
            to,
            worktree_updated,
        } => format!(
            "fast-forwarded {branch} from {} to {} ({}){}",
            short(from),
            short(to),
            done.run_branch,
            tree(*worktree_updated)
        ),
        Applied::Merged {
            branch,
            commit,
            worktree_updated,
            ..
        } => format!(
            "merged {} into {branch} as {}{}",
            done.run_branch,
            short(commit),
            tree(*worktree_updated)
        ),
        Applied::Patched { files } if files.is_empty() => {
            format!("run {id} changed no files: nothing to apply")
        }
        Applied::Patched { files } => format!(
            "applied run {id}'s final.patch to {}: {} changed, nothing committed (`git diff` \
             and `git status` show them)",
            done.repo.display(),
            super::report::count(files.len() as u64, "file", "files")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(applied: Applied) -> RunApplied {
        RunApplied {
            run_id: "01RUN".into(),
            run_branch: "weft/run/01RUN".into(),
            repo: "/src/shop".into(),
            applied,
        }
    }

    #[test]
    fn each_outcome_reads_as_one_line_saying_what_moved() {
        let sha = |c: char| c.to_string().repeat(40);
        assert_eq!(
            describe(&done(Applied::FastForwarded {
                branch: "main".into(),
                from: sha('a'),
                to: sha('b'),
                worktree_updated: true,
            })),
            "fast-forwarded main from aaaaaaaaaaaa to bbbbbbbbbbbb (weft/run/01RUN); \
             the working tree is updated"
        );
        assert_eq!(
            describe(&done(Applied::Merged {
                branch: "feature".into(),
                from: sha('a'),
                commit: sha('c'),
                worktree_updated: false,
            })),
            "merged weft/run/01RUN into feature as cccccccccccc (not checked out: only the \
             branch moved)"
        );
        assert_eq!(
            describe(&done(Applied::Patched {
                files: vec!["a".into(), "b".into()]
            })),
            "applied run 01RUN's final.patch to /src/shop: 2 files changed, nothing committed \
             (`git diff` and `git status` show them)"
        );
        assert_eq!(
            describe(&done(Applied::Patched { files: vec![] })),
            "run 01RUN changed no files: nothing to apply"
        );
    }

    #[test]
    fn the_json_names_the_action_beside_the_run() {
        let json = serde_json::to_value(done(Applied::UpToDate {
            branch: "main".into(),
            sha: "abc".into(),
        }))
        .expect("json");
        assert_eq!(
            json,
            serde_json::json!({"run_id":"01RUN","run_branch":"weft/run/01RUN","repo":"/src/shop",
                "action":"up_to_date","branch":"main","sha":"abc"})
        );
    }
}
