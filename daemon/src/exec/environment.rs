//! What commands inherit: the environment a run was started with, without
//! the variables that look like secrets ([`crate::secrets::is_secret`]),
//! adjusted by the run's `[run.env]` policy (`pass`, `deny`). Also what of
//! it is stored with the run, and what a resumed run's commands get.
//!
//! The rules are listed in docs/engine.md ("Secrets"), in this order:
//! 1. Weft's own plumbing (`WEFT_SECRETS_FD`) never reaches a command.
//! 2. A variable matching a `pass` pattern is passed, secret or not.
//! 3. A variable matching a `deny` pattern is withheld.
//! 4. A variable that looks like a secret, by name or value, is withheld.
//! 5. Everything else is passed.

use std::collections::BTreeMap;

use crate::model::EnvPolicy;
use crate::secrets::{is_internal, is_secret};

/// The environment commands get, and the names of what was left out.
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct StageEnv {
    /// Sorted by name.
    pub vars: Vec<(String, String)>,
    /// Withheld variables' names, sorted (secrets and `deny` matches).
    pub withheld: Vec<String>,
}

impl std::fmt::Debug for StageEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Names only: passed variables may hold secrets.
        f.debug_struct("StageEnv")
            .field(
                "vars",
                &self.vars.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .field("withheld", &self.withheld)
            .finish()
    }
}

/// Splits `env` into what commands get and what they do not, by the rules
/// of this module. A name given twice keeps its last value.
#[must_use]
pub(crate) fn stage_env(env: &[(String, String)], policy: &EnvPolicy) -> StageEnv {
    let unique: BTreeMap<&str, &str> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut out = StageEnv::default();
    for (name, value) in unique {
        if is_internal(name) {
            continue;
        }
        let passed = policy.passes(name) || !(policy.denies(name) || is_secret(name, value));
        if passed {
            out.vars.push((name.to_string(), value.to_string()));
        } else {
            out.withheld.push(name.to_string());
        }
    }
    out
}

/// What of a command environment may be stored with the run: everything
/// that does not look like a secret (a passed token is not stored; a
/// resume takes it from whoever resumes).
#[must_use]
pub(crate) fn storable(vars: &[(String, String)]) -> Vec<(String, String)> {
    vars.iter()
        .filter(|(k, v)| !is_secret(k, v))
        .cloned()
        .collect()
}

/// The environment of a resumed run's commands: the stored one (filtered
/// again, in case the rules grew since), plus the `pass` variables that
/// were not stored because they look like secrets, from `live` (the
/// environment of whoever resumes).
#[must_use]
pub(crate) fn resumed_env(
    stored: &[(String, String)],
    live: &[(String, String)],
    policy: &EnvPolicy,
) -> Vec<(String, String)> {
    let mut vars: BTreeMap<String, String> = stage_env(stored, policy).vars.into_iter().collect();
    for (name, value) in live {
        if policy.passes(name) && is_secret(name, value) && !is_internal(name) {
            vars.insert(name.clone(), value.clone());
        }
    }
    vars.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect()
    }

    fn policy(pass: &[&str], deny: &[&str]) -> EnvPolicy {
        EnvPolicy {
            pass: pass.iter().map(|s| (*s).to_string()).collect(),
            deny: deny.iter().map(|s| (*s).to_string()).collect(),
        }
    }

    #[test]
    fn secrets_are_withheld_and_named() {
        let split = stage_env(
            &env(&[
                ("PATH", "/bin"),
                ("OPENAI_API_KEY", "sk-1"),
                ("GH_PAT", "x"),
                ("DATABASE_URL", "postgres://u:pw@db/x"),
                ("EDITOR", "vi"),
                ("WEFT_SECRETS_FD", "3"),
            ]),
            &EnvPolicy::default(),
        );
        assert_eq!(split.vars, env(&[("EDITOR", "vi"), ("PATH", "/bin")]));
        assert_eq!(
            split.withheld,
            ["DATABASE_URL", "GH_PAT", "OPENAI_API_KEY"],
            "withheld names are reported, plumbing is not"
        );
    }

    #[test]
    fn pass_gives_a_secret_to_commands_and_deny_withholds_an_ordinary_variable() {
        let split = stage_env(
            &env(&[
                ("GH_TOKEN", "ghp_abc"),
                ("OPENAI_API_KEY", "sk-1"),
                ("FOO_MODE", "fast"),
                ("PATH", "/bin"),
            ]),
            &policy(&["GH_TOKEN"], &["FOO_*"]),
        );
        assert_eq!(
            split.vars,
            env(&[("GH_TOKEN", "ghp_abc"), ("PATH", "/bin")])
        );
        assert_eq!(split.withheld, ["FOO_MODE", "OPENAI_API_KEY"]);
    }

    #[test]
    fn pass_wins_over_deny() {
        let split = stage_env(
            &env(&[("PATH", "/bin"), ("HOME", "/h"), ("EDITOR", "vi")]),
            &policy(&["PATH", "HOME"], &["*"]),
        );
        assert_eq!(split.vars, env(&[("HOME", "/h"), ("PATH", "/bin")]));
        assert_eq!(split.withheld, ["EDITOR"]);
    }

    #[test]
    fn passed_secrets_are_not_stored_and_come_back_from_the_resumer() {
        let policy = policy(&["GH_TOKEN"], &[]);
        let start = stage_env(&env(&[("GH_TOKEN", "t1"), ("PATH", "/bin")]), &policy);
        let stored = storable(&start.vars);
        assert_eq!(stored, env(&[("PATH", "/bin")]), "the token is not stored");
        let resumed = resumed_env(
            &stored,
            &env(&[
                ("GH_TOKEN", "t2"),
                ("PATH", "/other"),
                ("OPENAI_API_KEY", "k"),
            ]),
            &policy,
        );
        assert_eq!(
            resumed,
            env(&[("GH_TOKEN", "t2"), ("PATH", "/bin")]),
            "the stored environment, plus the passed token of whoever resumes"
        );
    }

    #[test]
    fn a_stored_environment_is_filtered_again_on_resume() {
        // Recorded by an older Weft that did not know GH_PAT.
        let stored = env(&[("GH_PAT", "x"), ("PATH", "/bin")]);
        assert_eq!(
            resumed_env(&stored, &[], &EnvPolicy::default()),
            env(&[("PATH", "/bin")])
        );
    }
}
