//! Which environment variables and values are secrets: the one rule that
//! decides what commands never inherit, what Weft never stores, and what
//! it redacts from recorded output.
//!
//! A variable is a secret when its *name* says so (`OPENAI_API_KEY`,
//! `GH_PAT`, `DB_PASSWORD_OLD`) or its *value* looks like a credential (an
//! `sk-…` key, a `ghp_…` token, a URL with `user:password@`). The rules are
//! documented in docs/engine.md ("Secrets"); keep the two in step.

use std::sync::LazyLock;

use regex::Regex;

/// Last words of a name that make it a secret (`*_TOKEN`, `*_KEY`, ...).
const SECRET_WORDS: &[&str] = &[
    "SECRET",
    "SECRETS",
    "TOKEN",
    "TOKENS",
    "PASSWORD",
    "PASSWORDS",
    "PASSWD",
    "PASS",
    "PASSPHRASE",
    "APIKEY",
    "KEY",
    "KEYS",
    "PAT",
    "CREDENTIAL",
    "CREDENTIALS",
    "CREDS",
    "AUTH",
    "COOKIE",
    "DSN",
];

/// Last words that make a name a secret only after another word: `PWD`
/// alone is the working directory, `MYSQL_PWD` a password.
const SECRET_WORDS_AFTER_A_PREFIX: &[&str] = &["PWD"];

/// Whole names of well-known secrets that the word rule misses.
const SECRET_NAMES: &[&str] = &[
    "PGPASSWORD",
    "SSHPASS",
    "SECRET_KEY_BASE",
    "DOCKER_AUTH_CONFIG",
];

/// Trailing words that qualify a secret without changing what it is:
/// `API_KEY_OLD`, `GITHUB_TOKEN_2`, `DB_PASSWORD_PROD` are still secrets.
/// Numbers and `V2`-style versions count too.
const QUALIFIERS: &[&str] = &[
    "OLD",
    "NEW",
    "PREV",
    "PREVIOUS",
    "NEXT",
    "BACKUP",
    "BAK",
    "ALT",
    "TMP",
    "TEMP",
    "ORIG",
    "ORIGINAL",
    "LEGACY",
    "CURRENT",
    "CUR",
    "PRIMARY",
    "SECONDARY",
    "FALLBACK",
    "ROTATED",
    "DEV",
    "PROD",
    "TEST",
    "STAGING",
];

fn is_qualifier(word: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    QUALIFIERS.contains(&word) || digits(word) || word.strip_prefix('V').is_some_and(digits)
}

/// Whether the name of an environment variable says it holds a secret.
///
/// The name is split into words at `_`, `-` and `.` and compared ignoring
/// ASCII case. Trailing qualifiers (`OLD`, `NEW`, `PREV`, `BACKUP`, `2`,
/// `V2`, `PROD`, ...) are set aside; then the name is a secret when its last
/// word is one of `SECRET(S)`, `TOKEN(S)`, `PASSWORD(S)`, `PASSWD`, `PASS`,
/// `PASSPHRASE`, `APIKEY`, `KEY(S)`, `PAT`, `CREDENTIAL(S)`, `CREDS`,
/// `AUTH`, `COOKIE` or `DSN`, or it is `PWD` after another word
/// (`MYSQL_PWD`, not `PWD`), or the whole name is `PGPASSWORD`, `SSHPASS`,
/// `SECRET_KEY_BASE` or `DOCKER_AUTH_CONFIG`.
///
/// So `OPENAI_API_KEY`, `OPENAI_KEY`, `GH_PAT`, `ANTHROPIC_API_KEY_OLD` and
/// `AWS_SECRET_ACCESS_KEY` are secrets, while `AWS_ACCESS_KEY_ID`,
/// `TOKENIZERS_PARALLELISM`, `KEYBOARD`, `SECRETS_DIR` and `PWD` are not:
/// whole words, not substrings, keep ordinary variables working.
#[must_use]
pub(crate) fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if SECRET_NAMES.contains(&upper.as_str()) {
        return true;
    }
    let mut words: Vec<&str> = upper
        .split(['_', '-', '.'])
        .filter(|w| !w.is_empty())
        .collect();
    while words.last().is_some_and(|w| is_qualifier(w)) {
        words.pop();
    }
    match words.as_slice() {
        [] => false,
        [.., last] if SECRET_WORDS.contains(last) => true,
        [_, .., last] => SECRET_WORDS_AFTER_A_PREFIX.contains(last),
        [_] => false,
    }
}

/// Credential formats recognised in values and in recorded text. Each
/// alternative is anchored on a distinctive prefix, so scanning output for
/// them is a fast literal search.
/// `None` only if the pattern failed to compile, which a test rules out.
static SECRET_VALUE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    let pattern = [
        // OpenAI, Anthropic and look-alikes: sk-..., sk-proj-..., sk-ant-...
        r"(?-u:\b)sk-[A-Za-z0-9_-]{20,}",
        // GitHub personal, OAuth, user, server and refresh tokens.
        r"(?-u:\b)gh[pousr]_[A-Za-z0-9]{30,}",
        r"(?-u:\b)github_pat_[A-Za-z0-9_]{30,}",
        // GitLab personal access tokens.
        r"(?-u:\b)glpat-[A-Za-z0-9_-]{20,}",
        // AWS access key ids (long-term and temporary).
        r"(?-u:\b)(?:AKIA|ASIA)[0-9A-Z]{16}(?-u:\b)",
        // Slack bot, user, app and refresh tokens.
        r"(?-u:\b)xox[abposr]-[A-Za-z0-9-]{10,}",
        // Google API keys.
        r"(?-u:\b)AIza[0-9A-Za-z_-]{35}",
        // Stripe secret and restricted keys.
        r"(?-u:\b)(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",
        // JSON Web Tokens (bearer credentials).
        r"(?-u:\b)eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        // PEM private keys (the header is enough to withhold the value).
        r"-----BEGIN[A-Z ]*PRIVATE KEY-----",
    ]
    .join("|");
    Regex::new(&pattern).ok()
});

/// A URL with a password in its user info: `scheme://user:password@host`.
/// Capture 1 is everything up to the password, capture 2 the password.
static URL_PASSWORD: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"((?-u:\b)[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@]*:)([^\s/@]+)@").ok());

/// Whether a value looks like a credential: it contains an API key or token
/// in a well-known format (`sk-…`, `ghp_…`, `github_pat_…`, `glpat-…`,
/// `AKIA…`, `xox?-…`, `AIza…`, Stripe `sk_live_…`, a JWT, a PEM private
/// key) or a URL with a password (`postgres://user:pw@host/db`).
#[must_use]
pub(crate) fn is_secret_value(value: &str) -> bool {
    let matches = |re: &Option<Regex>| re.as_ref().is_some_and(|re| re.is_match(value));
    matches(&SECRET_VALUE) || matches(&URL_PASSWORD)
}

/// Whether the variable `name=value` is a secret, by its name or its value.
#[must_use]
pub(crate) fn is_secret(name: &str, value: &str) -> bool {
    is_secret_name(name) || is_secret_value(value)
}

/// The credential patterns of [`is_secret_value`], for the redactor.
pub(super) fn value_pattern() -> Option<&'static Regex> {
    SECRET_VALUE.as_ref()
}

/// The URL-password pattern of [`is_secret_value`], for the redactor.
pub(super) fn url_password_pattern() -> Option<&'static Regex> {
    URL_PASSWORD.as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_value_patterns_compile() {
        assert!(SECRET_VALUE.is_some(), "the credential patterns compile");
        assert!(URL_PASSWORD.is_some(), "the URL-password pattern compiles");
    }

    #[test]
    fn secret_names_are_recognised_by_their_last_words() {
        for name in [
            "API_KEY",
            "OPENAI_API_KEY",
            "anthropic_api_key",
            "OPENAI_KEY",
            "GH_PAT",
            "GITHUB_TOKEN",
            "TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "CLIENT_SECRET",
            "SECRET",
            "DB_PASSWORD",
            "PASSWORD",
            "SMTP_PASSWD",
            "SMTP_PASS",
            "MYSQL_PWD",
            "STRIPE_SECRET_KEY",
            "DEPLOY_PRIVATE_KEY",
            "MAPS_APIKEY",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "AZURE_CREDENTIAL",
            "REGISTRY_CREDS",
            "NPM_CONFIG__AUTH",
            "SENTRY_DSN",
            "GPG_PASSPHRASE",
            "PGPASSWORD",
            "SSHPASS",
            "SECRET_KEY_BASE",
        ] {
            assert!(is_secret_name(name), "{name} is a secret");
        }
    }

    #[test]
    fn qualifiers_after_a_secret_word_keep_it_a_secret() {
        for name in [
            "OPENAI_API_KEY_OLD",
            "ANTHROPIC_API_KEY_NEW",
            "GITHUB_TOKEN_2",
            "GITHUB_TOKEN_V2",
            "DB_PASSWORD_PROD",
            "API_KEY_OLD_BACKUP",
            "gh-pat-prev",
        ] {
            assert!(is_secret_name(name), "{name} is a secret");
        }
    }

    #[test]
    fn ordinary_names_are_not_secrets() {
        for name in [
            "PATH",
            "HOME",
            "PWD",
            "OLDPWD",
            "TOKENIZERS_PARALLELISM",
            "AWS_ACCESS_KEY_ID",
            "AWS_SHARED_CREDENTIALS_FILE",
            "GITHUB_TOKEN_FILE",
            "SSH_AUTH_SOCK",
            "KEYBOARD",
            "NOTOKEN",
            "SECRETS_DIR",
            "PASSWORD_STORE_DIR",
            "XAUTHORITY",
            "DATABASE_URL",
            "PORT_2",
            "NEW",
            "V2",
            "",
            "_",
        ] {
            assert!(!is_secret_name(name), "{name} is not a secret");
        }
    }

    #[test]
    fn credential_shaped_values_are_secrets() {
        for value in [
            "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
            "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
            "glpat-abcdefghijklmnopqrst",
            "AKIAIOSFODNN7EXAMPLE",
            "xoxb-1234567890-abcdefghij",
            "AIzaSyA-abcdefghijklmnopqrstuvwxyz012345",
            "sk_live_abcdefghijklmnop1234",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk=",
            "postgres://app:hunter2@db.internal:5432/prod",
            "redis://:s3cr3t@cache:6379/0",
            "Authorization uses https://bot:tok123@example.com/repo.git here",
        ] {
            assert!(is_secret_value(value), "{value} looks like a secret");
        }
    }

    #[test]
    fn ordinary_values_are_not_secrets() {
        for value in [
            "/usr/local/bin:/usr/bin",
            "en_US.UTF-8",
            "postgres://db.internal:5432/prod",
            "https://user@example.com/repo.git",
            "http://localhost:8080/path@v2",
            "task-runner",
            "sk-short",
            "AKIA",
            "",
        ] {
            assert!(!is_secret_value(value), "{value} is not a secret");
        }
    }

    #[test]
    fn a_variable_is_secret_by_name_or_by_value() {
        assert!(is_secret("OPENAI_API_KEY", ""));
        assert!(is_secret("DATABASE_URL", "postgres://app:hunter2@db/prod"));
        assert!(is_secret(
            "MY_SETTING",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
        ));
        assert!(!is_secret("DATABASE_URL", "postgres://db/prod"));
    }
}
