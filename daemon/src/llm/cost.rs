//! Usage and cost summed over calls: a stage's spend is the sum of its
//! calls' (the cost of one call is [`super::Completion::cost`]).

use serde::{Deserialize, Serialize};

use super::client::Completion;
use super::types::Usage;

/// Tokens and dollars spent by a number of calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
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
