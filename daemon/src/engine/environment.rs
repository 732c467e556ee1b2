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

use serde::{Deserialize, Serialize};

use crate::secrets::{is_internal, is_secret};

/// Most patterns in each of `pass` and `deny`.
pub const MAX_ENV_PATTERNS: usize = 256;

/// Longest pattern, in bytes.
pub const MAX_ENV_PATTERN_BYTES: usize = 256;

/// `[run.env]` of a run configuration: which variables commands get despite
/// looking like secrets (`pass`), and which they do not get although they
/// do not (`deny`). Each entry is a variable name, matched exactly (case
/// matters), or a pattern where `*` stands for any run of characters
/// (`"AWS_*"`, `"*_TOKEN"`, `"*"`). `pass` wins over `deny`, so
/// `deny = ["*"]` with `pass = ["PATH", "HOME"]` gives commands exactly
/// those two.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct EnvPolicy {
    /// Passed to commands even when they look like secrets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass: Vec<String>,
    /// Withheld from commands even when they do not look like secrets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
}

impl EnvPolicy {
    /// True when neither list has an entry (only the secret rules apply).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.pass.is_empty() && self.deny.is_empty()
    }

    /// Checks every pattern: at most [`MAX_ENV_PATTERNS`] per list, each
    /// non-empty, at most [`MAX_ENV_PATTERN_BYTES`] long, made of letters,
    /// digits, `_`, `.`, `-` and `*`.
    ///
    /// # Errors
    /// A message naming the list and the first bad entry.
    pub fn check(&self) -> Result<(), String> {
        for (list, patterns) in [("pass", &self.pass), ("deny", &self.deny)] {
            if patterns.len() > MAX_ENV_PATTERNS {
                return Err(format!(
                    "[run.env] {list} has {} entries; at most {MAX_ENV_PATTERNS} are allowed",
                    patterns.len()
                ));
            }
            for pattern in patterns {
                let valid = !pattern.is_empty()
                    && pattern.len() <= MAX_ENV_PATTERN_BYTES
                    && pattern.bytes().all(|b| {
                        b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b'*')
                    });
                if !valid {
                    return Err(format!(
                        "[run.env] {list}: `{pattern}` is not a variable name or pattern \
                         (letters, digits, `_`, `.`, `-`, and `*` for any characters)"
                    ));
                }
            }
        }
        Ok(())
    }

    /// Whether `name` matches a `pass` pattern.
    #[must_use]
    pub fn passes(&self, name: &str) -> bool {
        self.pass.iter().any(|p| wildcard_match(p, name))
    }

    /// Whether `name` matches a `deny` pattern.
    #[must_use]
    pub fn denies(&self, name: &str) -> bool {
        self.deny.iter().any(|p| wildcard_match(p, name))
    }
}

/// Whether `name` matches `pattern`, where `*` matches any run of
/// characters (none included). Linear in practice: the classic
/// backtrack-to-the-last-star walk, never recursive.
fn wildcard_match(pattern: &str, name: &str) -> bool {
    let (p, n) = (pattern.as_bytes(), name.as_bytes());
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ni));
            pi += 1;
        } else if pi < p.len() && p[pi] == n[ni] {
            pi += 1;
            ni += 1;
        } else if let Some((star_pi, star_ni)) = star {
            pi = star_pi + 1;
            ni = star_ni + 1;
            star = Some((star_pi, star_ni + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|b| *b == b'*')
}

/// The environment commands get, and the names of what was left out.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct StageEnv {
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
pub fn stage_env(env: &[(String, String)], policy: &EnvPolicy) -> StageEnv {
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
pub fn storable(vars: &[(String, String)]) -> Vec<(String, String)> {
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
pub fn resumed_env(
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
    fn wildcards_match_any_run_of_characters() {
        for (pattern, name) in [
            ("GH_TOKEN", "GH_TOKEN"),
            ("*", "ANYTHING"),
            ("AWS_*", "AWS_REGION"),
            ("*_TOKEN", "GH_TOKEN"),
            ("*TOKEN*", "TOKEN"),
            ("A*B*C", "AxxBxxBxxC"),
        ] {
            assert!(wildcard_match(pattern, name), "{pattern} matches {name}");
        }
        for (pattern, name) in [
            ("GH_TOKEN", "gh_token"),
            ("AWS_*", "MY_AWS_REGION"),
            ("*_TOKEN", "TOKEN"),
            ("A*B*C", "AxxBxxBxxD"),
            ("FOO", "FOOBAR"),
        ] {
            assert!(
                !wildcard_match(pattern, name),
                "{pattern} does not match {name}"
            );
        }
    }

    #[test]
    fn a_hostile_pattern_is_matched_in_linear_time() {
        let pattern = "*a".repeat(100);
        let name = "a".repeat(10_000) + "b";
        // Exponential backtracking would never finish; this takes microseconds.
        assert!(!wildcard_match(&pattern, &name));
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

    #[test]
    fn bad_patterns_are_refused_with_the_list_named() {
        assert!(policy(&["GH_TOKEN", "AWS_*"], &["*"]).check().is_ok());
        let err = policy(&[], &["FOO BAR"]).check().expect_err("a space");
        assert!(err.contains("deny") && err.contains("FOO BAR"), "{err}");
        let err = policy(&[""], &[]).check().expect_err("empty");
        assert!(err.contains("pass"), "{err}");
        let many: Vec<&str> = vec!["A"; MAX_ENV_PATTERNS + 1];
        assert!(policy(&many, &[]).check().is_err());
    }
}
