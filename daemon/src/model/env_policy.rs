//! `[run.env]`: the run configuration's policy over which variables
//! commands inherit, as stored with a run and sent over the wire. Applying
//! it to an environment is the engine's (`exec::environment`).

use serde::{Deserialize, Serialize};

/// Most patterns in each of `pass` and `deny`.
pub(crate) const MAX_ENV_PATTERNS: usize = 256;

/// Longest pattern, in bytes.
pub(crate) const MAX_ENV_PATTERN_BYTES: usize = 256;

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
    pub(crate) fn denies(&self, name: &str) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

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

    fn policy(pass: &[&str], deny: &[&str]) -> EnvPolicy {
        EnvPolicy {
            pass: pass.iter().map(|s| (*s).to_string()).collect(),
            deny: deny.iter().map(|s| (*s).to_string()).collect(),
        }
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
