//! Usage and cost summed over calls: a stage's spend is the sum of its
//! calls' (the cost of one call is [`super::Completion::cost`]).

use serde::{Deserialize, Serialize};

use super::client::Completion;
use super::types::Usage;

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
    /// Adds one call.
    pub fn add(&mut self, completion: &Completion) {
        self.calls = self.calls.saturating_add(1);
        self.usage += completion.response.usage;
        match completion.cost {
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

/// US dollars to the cent, or to four places below a cent: `$0.0042`.
#[must_use]
pub fn dollars(cost: f64) -> String {
    if cost < 0.01 {
        format!("${cost:.4}")
    } else {
        format!("${cost:.2}")
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
    }
}
