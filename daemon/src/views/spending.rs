//! The Spending screen's read model, which `weft cost` prints as well: both
//! call [`Views::spending`], so the CLI and the app agree on every figure.

use std::time::SystemTime;

use super::Views;
use crate::store::{Result, Spending, SpendingQuery, StoreError, no_spending};

impl Views {
    /// Language-model spending of the stages finished in `query`'s window
    /// (of one run when it names one): totals, and per day, model, run and
    /// stage. Nothing recorded yet is empty spending, not an error (but a
    /// bad `since` is, and a `run` is not found).
    pub fn spending(&self, query: &SpendingQuery) -> Result<Spending> {
        self.spending_at(query, SystemTime::now())
    }

    /// [`Views::spending`] with spans (`7d`) counted back from `now`.
    pub fn spending_at(&self, query: &SpendingQuery, now: SystemTime) -> Result<Spending> {
        let Some(store) = &self.store else {
            if let Some(run) = &query.run {
                return Err(StoreError::RunNotFound(run.trim().to_string()));
            }
            return no_spending(query.since.as_deref(), now);
        };
        let _tx = store.snapshot()?;
        let run = match query.run.as_deref() {
            Some(wanted) => Some(store.find_run(wanted)?.id),
            None => None,
        };
        store.spending(query.since.as_deref(), run.as_deref(), query.limit, now)
    }
}
