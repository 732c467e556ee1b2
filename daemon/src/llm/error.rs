//! Why a model call failed, classified the way execution/failures.mdx does:
//! what is retried against the same provider, what may fail over to another,
//! and which failure class a stage gets.
//!
//! Messages never contain an API key: provider error bodies are redacted
//! before they become an [`LlmError`] (see `transport.rs`).

use std::time::Duration;

/// A failed model call.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    #[error(
        "no API key for provider `{provider}`: set {env_var} in the shell that runs weft (or `api_key` under [providers.{provider}] in settings.toml)"
    )]
    MissingKey { provider: String, env_var: String },
    #[error(
        "unknown provider `{provider}`: use anthropic, openai, gemini, kimi, zai, minimax, inception, or one named under [providers.NAME] in settings.toml"
    )]
    UnknownProvider { provider: String },
    #[error("{provider} rate limit{}: {message}", retry_after_note(.retry_after))]
    RateLimited {
        provider: String,
        retry_after: Option<Duration>,
        message: String,
    },
    #[error("{provider} quota exhausted: {message}")]
    QuotaExceeded { provider: String, message: String },
    #[error("{provider} server error (HTTP {status}): {message}")]
    Server {
        provider: String,
        status: u16,
        message: String,
    },
    #[error("cannot reach {provider}: {message}")]
    Network { provider: String, message: String },
    #[error("{provider} stream broke before the reply was complete: {message}")]
    BrokenStream { provider: String, message: String },
    #[error("{provider} did not answer within {}", crate::util::duration::setting(*.after))]
    Timeout { provider: String, after: Duration },
    #[error("{provider} rejected the API key (HTTP {status}): {message}")]
    Auth {
        provider: String,
        status: u16,
        message: String,
    },
    #[error("{provider} rejected the request (HTTP {status}): {message}")]
    BadRequest {
        provider: String,
        status: u16,
        message: String,
    },
    #[error("the conversation is longer than the model's context window ({provider}): {message}")]
    ContextLength { provider: String, message: String },
    #[error("{provider}: not found (is the model name right?): {message}")]
    NotFound { provider: String, message: String },
    #[error("{provider} sent a reply Weft cannot read: {message}")]
    InvalidResponse { provider: String, message: String },
    #[error("{0}")]
    Config(String),
}

fn retry_after_note(retry_after: &Option<Duration>) -> String {
    retry_after.map_or_else(String::new, |d| {
        format!(" (retry after {})", crate::util::duration::setting(d))
    })
}

/// The failure classes of execution/failures.mdx that model calls produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureClass {
    /// Likely to pass on retry: rate limits, 5xx, timeouts, network.
    TransientInfra,
    /// Retrying will not help: auth, bad requests, configuration.
    Deterministic,
    /// A limit was reached: context length, quota.
    BudgetExhausted,
}

impl FailureClass {
    /// The name used in `failure_class` conditions.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            FailureClass::TransientInfra => "transient_infra",
            FailureClass::Deterministic => "deterministic",
            FailureClass::BudgetExhausted => "budget_exhausted",
        }
    }
}

impl LlmError {
    /// A stable, machine-readable code.
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            LlmError::MissingKey { .. } => "llm.missing_key",
            LlmError::UnknownProvider { .. } => "llm.unknown_provider",
            LlmError::RateLimited { .. } => "llm.rate_limited",
            LlmError::QuotaExceeded { .. } => "llm.quota_exceeded",
            LlmError::Server { .. } => "llm.server",
            LlmError::Network { .. } => "llm.network",
            LlmError::BrokenStream { .. } => "llm.broken_stream",
            LlmError::Timeout { .. } => "llm.timeout",
            LlmError::Auth { .. } => "llm.auth",
            LlmError::BadRequest { .. } => "llm.bad_request",
            LlmError::ContextLength { .. } => "llm.context_length",
            LlmError::NotFound { .. } => "llm.not_found",
            LlmError::InvalidResponse { .. } => "llm.invalid_response",
            LlmError::Config(_) => "llm.config",
        }
    }

    /// Whether the same call may succeed if sent again to the same provider
    /// (failures.mdx, "LLM retries"): rate limits, 5xx, network errors,
    /// timeouts and broken streams.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            LlmError::RateLimited { .. }
                | LlmError::Server { .. }
                | LlmError::Network { .. }
                | LlmError::BrokenStream { .. }
                | LlmError::Timeout { .. }
        )
    }

    /// Whether another provider may succeed where this one failed
    /// (failures.mdx, "What triggers failover"): everything retryable, plus
    /// quota exhaustion.
    #[must_use]
    pub(crate) fn is_failover_eligible(&self) -> bool {
        self.is_retryable() || matches!(self, LlmError::QuotaExceeded { .. })
    }

    /// The wait the provider asked for (`Retry-After`), if any.
    #[must_use]
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::RateLimited { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The failure class a stage that ends with this error gets.
    #[must_use]
    pub fn failure_class(&self) -> FailureClass {
        match self {
            LlmError::RateLimited { .. }
            | LlmError::Server { .. }
            | LlmError::Network { .. }
            | LlmError::BrokenStream { .. }
            | LlmError::Timeout { .. } => FailureClass::TransientInfra,
            LlmError::QuotaExceeded { .. } | LlmError::ContextLength { .. } => {
                FailureClass::BudgetExhausted
            }
            LlmError::MissingKey { .. }
            | LlmError::UnknownProvider { .. }
            | LlmError::Auth { .. }
            | LlmError::BadRequest { .. }
            | LlmError::NotFound { .. }
            | LlmError::InvalidResponse { .. }
            | LlmError::Config(_) => FailureClass::Deterministic,
        }
    }

    /// The provider the error came from, when there is one.
    #[must_use]
    pub fn provider(&self) -> Option<&str> {
        match self {
            LlmError::MissingKey { provider, .. }
            | LlmError::UnknownProvider { provider }
            | LlmError::RateLimited { provider, .. }
            | LlmError::QuotaExceeded { provider, .. }
            | LlmError::Server { provider, .. }
            | LlmError::Network { provider, .. }
            | LlmError::BrokenStream { provider, .. }
            | LlmError::Timeout { provider, .. }
            | LlmError::Auth { provider, .. }
            | LlmError::BadRequest { provider, .. }
            | LlmError::ContextLength { provider, .. }
            | LlmError::NotFound { provider, .. }
            | LlmError::InvalidResponse { provider, .. } => Some(provider),
            LlmError::Config(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> String {
        "anthropic".to_string()
    }

    #[test]
    fn transient_errors_retry_and_fail_over_permanent_ones_do_neither() {
        let transient = [
            LlmError::RateLimited {
                provider: p(),
                retry_after: None,
                message: String::new(),
            },
            LlmError::Server {
                provider: p(),
                status: 503,
                message: String::new(),
            },
            LlmError::Network {
                provider: p(),
                message: String::new(),
            },
            LlmError::BrokenStream {
                provider: p(),
                message: String::new(),
            },
            LlmError::Timeout {
                provider: p(),
                after: Duration::from_secs(1),
            },
        ];
        for e in &transient {
            assert!(e.is_retryable(), "{} is transient", e.code());
            assert!(e.is_failover_eligible(), "{} may fail over", e.code());
            assert_eq!(e.failure_class(), FailureClass::TransientInfra);
        }
        let quota = LlmError::QuotaExceeded {
            provider: p(),
            message: String::new(),
        };
        assert!(!quota.is_retryable(), "the quota will not reset on retry");
        assert!(
            quota.is_failover_eligible(),
            "another provider has its own quota"
        );
        let permanent = [
            LlmError::Auth {
                provider: p(),
                status: 401,
                message: String::new(),
            },
            LlmError::BadRequest {
                provider: p(),
                status: 400,
                message: String::new(),
            },
            LlmError::ContextLength {
                provider: p(),
                message: String::new(),
            },
        ];
        for e in &permanent {
            assert!(
                !e.is_retryable() && !e.is_failover_eligible(),
                "{}",
                e.code()
            );
        }
    }

    #[test]
    fn messages_name_the_provider_and_the_fix() {
        let e = LlmError::MissingKey {
            provider: "openai".into(),
            env_var: "OPENAI_API_KEY".into(),
        };
        assert!(e.to_string().contains("OPENAI_API_KEY"));
        let e = LlmError::RateLimited {
            provider: "openai".into(),
            retry_after: Some(Duration::from_secs(2)),
            message: "slow down".into(),
        };
        assert_eq!(
            e.to_string(),
            "openai rate limit (retry after 2s): slow down"
        );
        assert_eq!(e.retry_after(), Some(Duration::from_secs(2)));
    }
}
