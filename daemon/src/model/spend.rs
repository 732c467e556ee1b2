//! Tokens and dollars: one language-model call's usage, and spend summed
//! over calls (a stage's, a run's). The cost of one call is the llm
//! layer's (`llm::Completion::cost`); here it is only added up and shown.

use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};

/// Tokens used by one call (or summed over many). Totals include their
/// breakdowns: `cache_read` and `cache_write` are part of `input`,
/// `reasoning` is part of `output`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub reasoning: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

impl Usage {
    /// Input tokens billed at the plain input price.
    #[must_use]
    pub(crate) fn uncached_input(&self) -> u64 {
        self.input
            .saturating_sub(self.cache_read)
            .saturating_sub(self.cache_write)
    }
}

impl Add for Usage {
    type Output = Usage;
    fn add(self, other: Usage) -> Usage {
        Usage {
            input: self.input.saturating_add(other.input),
            output: self.output.saturating_add(other.output),
            reasoning: self.reasoning.saturating_add(other.reasoning),
            cache_read: self.cache_read.saturating_add(other.cache_read),
            cache_write: self.cache_write.saturating_add(other.cache_write),
        }
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        *self = *self + other;
    }
}

/// Tokens and dollars spent by a number of calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Spend {
    /// Successful calls counted.
    pub calls: u32,
    pub usage: Usage,
    /// US dollars, over the calls whose price is known.
    pub cost: f64,
    /// Calls whose model has no price in the catalog (their tokens are in
    /// `usage`, their cost is not in `cost`).
    pub unpriced_calls: u32,
}

impl Spend {
    /// Adds one call: its tokens, and its cost when the catalog prices it.
    pub(crate) fn add_call(&mut self, usage: Usage, cost: Option<f64>) {
        self.calls = self.calls.saturating_add(1);
        self.usage += usage;
        match cost {
            Some(cost) => self.cost += cost,
            None => self.unpriced_calls = self.unpriced_calls.saturating_add(1),
        }
    }

    /// Adds another spend (a sub-stage, a parallel branch).
    pub fn merge(&mut self, other: &Spend) {
        self.calls = self.calls.saturating_add(other.calls);
        self.usage += other.usage;
        self.cost += other.cost;
        self.unpriced_calls = self.unpriced_calls.saturating_add(other.unpriced_calls);
    }
}

/// A token count as people read it: `950`, `12.4k`, `1.2M`.
#[must_use]
pub fn tokens(n: u64) -> String {
    #[allow(clippy::cast_precision_loss)] // a display, to one decimal
    let x = n as f64;
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", x / 1e3),
        _ => format!("{:.1}M", x / 1e6),
    }
}

/// US dollars to the cent, or to four places below a cent: `$0.0042`
/// (nothing is `$0.00`).
#[must_use]
pub(crate) fn dollars(cost: f64) -> String {
    if cost > 0.0 && cost < 0.01 {
        format!("${cost:.4}")
    } else {
        format!("${cost:.2}")
    }
}

/// A cost that may leave calls out: `$0.05`; `$0.05 + 2 unpriced` when
/// some calls have no price (their cost is unknown, not zero); `unpriced
/// (3 calls)` when none has one.
#[must_use]
pub fn cost_text(cost: f64, unpriced_calls: u64) -> String {
    match unpriced_calls {
        0 => dollars(cost),
        n if cost == 0.0 => format!("unpriced ({n} {})", if n == 1 { "call" } else { "calls" }),
        n => format!("{} + {n} unpriced", dollars(cost)),
    }
}

/// `12.4k in / 3.2k out, $0.05` (the cost only when known).
#[must_use]
pub fn describe(usage: &Usage, cost: Option<f64>) -> String {
    let mut text = format!("{} in / {} out", tokens(usage.input), tokens(usage.output));
    if let Some(cost) = cost {
        text.push_str(", ");
        text.push_str(&dollars(cost));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_counts_read_like_the_reference_preamble() {
        assert_eq!(tokens(950), "950");
        assert_eq!(tokens(12_400), "12.4k");
        assert_eq!(tokens(1_250_000), "1.2M");
        assert_eq!(dollars(0.004_21), "$0.0042");
        assert_eq!(dollars(1.5), "$1.50");
        assert_eq!(cost_text(0.0, 0), "$0.00", "a local model costs nothing");
        assert_eq!(cost_text(1.5, 2), "$1.50 + 2 unpriced");
        assert_eq!(cost_text(0.0, 1), "unpriced (1 call)");
    }
}
