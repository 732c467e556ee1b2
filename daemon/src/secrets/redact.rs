//! Taking secret values out of text before Weft records it.

use std::borrow::Cow;

use regex::Regex;
use serde_json::Value;

use super::pattern::{is_secret, url_password_pattern, value_pattern};

/// What a redacted secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Values of secret variables shorter than this are not searched for by
/// value (a `DB_PASSWORD=postgres` would otherwise blank out every mention
/// of postgres); credential-shaped text is redacted whatever its length.
pub(crate) const MIN_KNOWN_SECRET_CHARS: usize = 12;

/// At most this many secret values are searched for by value; real
/// environments have a handful.
pub(crate) const MAX_KNOWN_SECRETS: usize = 256;

/// Replaces secrets in text with [`REDACTED`]: the values of the secret
/// variables it was built from, credential-shaped text (`sk-…`, `ghp_…`,
/// `AKIA…`, ...) and the password of a URL (`postgres://app:[REDACTED]@db`).
/// Cheap to clone.
#[derive(Clone, Default)]
pub struct Redactor {
    /// The known secret values, longest first, as one alternation.
    known: Option<std::sync::Arc<Regex>>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the values.
        f.debug_struct("Redactor")
            .field("knows_values", &self.known.is_some())
            .finish()
    }
}

impl Redactor {
    /// A redactor for the secrets of `env` (the variables
    /// [`super::is_secret`] flags, by value when at least
    /// [`MIN_KNOWN_SECRET_CHARS`] long and not a path) plus the credential
    /// patterns.
    #[must_use]
    pub fn new(env: &[(String, String)]) -> Redactor {
        let mut values: Vec<&str> = env
            .iter()
            .filter(|(k, v)| is_secret(k, v))
            .map(|(_, v)| v.as_str())
            .filter(|v| v.chars().count() >= MIN_KNOWN_SECRET_CHARS && !v.starts_with('/'))
            .collect();
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        values.truncate(MAX_KNOWN_SECRETS);
        if values.is_empty() {
            return Redactor::default();
        }
        let pattern = values
            .iter()
            .map(|v| regex::escape(v))
            .collect::<Vec<_>>()
            .join("|");
        Redactor {
            known: Regex::new(&pattern).ok().map(std::sync::Arc::new),
        }
    }

    /// `text` with every secret replaced; borrowed when there was none.
    #[must_use]
    pub fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        if let Some(known) = &self.known
            && let Cow::Owned(replaced) = known.replace_all(&out, REDACTED)
        {
            out = Cow::Owned(replaced);
        }
        if let Some(pattern) = value_pattern()
            && let Cow::Owned(replaced) = pattern.replace_all(&out, REDACTED)
        {
            out = Cow::Owned(replaced);
        }
        if let Some(pattern) = url_password_pattern()
            && let Cow::Owned(replaced) = pattern.replace_all(&out, format!("${{1}}{REDACTED}@"))
        {
            out = Cow::Owned(replaced);
        }
        out
    }

    /// Redacts every string in `value` (object keys stay as they are).
    /// Returns whether anything changed.
    pub fn json(&self, value: &mut Value) -> bool {
        match value {
            Value::String(s) => match self.text(s) {
                Cow::Borrowed(_) => false,
                Cow::Owned(redacted) => {
                    *s = redacted;
                    true
                }
            },
            // Every item is visited (no short-circuit): all are redacted.
            Value::Array(items) => items
                .iter_mut()
                .map(|item| self.json(item))
                .fold(false, |changed, item| changed | item),
            Value::Object(map) => map
                .values_mut()
                .map(|item| self.json(item))
                .fold(false, |changed, item| changed | item),
            Value::Null | Value::Bool(_) | Value::Number(_) => false,
        }
    }

    /// Redacts a string in place; returns whether it changed.
    pub fn string(&self, s: &mut String) -> bool {
        match self.text(s) {
            Cow::Borrowed(_) => false,
            Cow::Owned(redacted) => {
                *s = redacted;
                true
            }
        }
    }
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

    #[test]
    fn values_of_secret_variables_are_redacted() {
        let redactor = Redactor::new(&env(&[
            ("MY_SERVICE_TOKEN", "plain-looking-value-1234"),
            ("EDITOR", "plain-looking-editor-name"),
        ]));
        assert_eq!(
            redactor.text("token=plain-looking-value-1234 editor=plain-looking-editor-name"),
            "token=[REDACTED] editor=plain-looking-editor-name"
        );
    }

    #[test]
    fn short_values_and_paths_are_not_searched_for() {
        let redactor = Redactor::new(&env(&[
            ("DB_PASSWORD", "postgres"),
            ("GOOGLE_APPLICATION_CREDENTIALS", "/home/me/gcloud/key.json"),
        ]));
        let text = "connected to postgres with /home/me/gcloud/key.json";
        assert_eq!(redactor.text(text), text);
    }

    #[test]
    fn credential_shaped_text_is_redacted_without_knowing_it() {
        let redactor = Redactor::default();
        assert_eq!(
            redactor.text("key: sk-proj-abcdefghijklmnopqrstuvwxyz0123 ok"),
            "key: [REDACTED] ok"
        );
        assert_eq!(
            redactor.text("gh ghp_abcdefghijklmnopqrstuvwxyz0123456789\n"),
            "gh [REDACTED]\n"
        );
        assert_eq!(
            redactor.text("DATABASE_URL=postgres://app:hunter2@db:5432/prod"),
            "DATABASE_URL=postgres://app:[REDACTED]@db:5432/prod"
        );
    }

    #[test]
    fn text_without_secrets_is_borrowed() {
        let redactor = Redactor::new(&env(&[("OPENAI_API_KEY", "sk-abcdefghijklmnopqrstuvwx")]));
        assert!(matches!(
            redactor.text("nothing to see here"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn json_strings_are_redacted_at_any_depth() {
        let redactor = Redactor::new(&env(&[("VAULT_TOKEN", "hvs.abcdefghijklmnop")]));
        let mut value = serde_json::json!({
            "out": ["fine", {"deep": "token hvs.abcdefghijklmnop"}],
            "hvs.abcdefghijklmnop": 1,
        });
        assert!(redactor.json(&mut value));
        assert_eq!(value["out"][1]["deep"], "token [REDACTED]");
        assert!(!redactor.json(&mut value), "nothing left to redact");
    }

    #[test]
    fn the_debug_output_shows_no_value() {
        let redactor = Redactor::new(&env(&[("OPENAI_API_KEY", "sk-abcdefghijklmnopqrstuvwx")]));
        assert!(!format!("{redactor:?}").contains("sk-"));
    }
}
