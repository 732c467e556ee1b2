//! Run retrospectives: one row per run (the latest retro replaces an
//! earlier one), holding the whole retro as JSON and the columns the
//! retros list shows, so the list and a run's retro work without the run
//! directory.

use rusqlite::{OptionalExtension, params};

use super::{Result, Store};
use crate::model::{Retro, RetroSummary, RunStatus, Smoothness};

/// At most this many retros in one list, newest first.
pub const MAX_RETROS_LISTED: u32 = 1000;

impl Store {
    /// Records `retro` for its run, replacing any earlier one.
    pub fn save_retro(&mut self, retro: &Retro) -> Result<()> {
        let json = serde_json::to_string(retro)
            .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
        let duration = retro
            .totals
            .duration_ms
            .map(|d| i64::try_from(d).unwrap_or(i64::MAX));
        self.conn
            .prepare_cached(
                "INSERT OR REPLACE INTO retros \
                 (run_id, created_at, smoothness, friction_count, duration_ms, cost, tokens, error, retro) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?
            .execute(params![
                retro.run_id,
                retro.created_at,
                retro.smoothness().map(Smoothness::as_str),
                i64::try_from(retro.friction_count()).unwrap_or(i64::MAX),
                duration,
                retro.totals.cost,
                i64::try_from(retro.totals.tokens).unwrap_or(i64::MAX),
                retro.error,
                json,
            ])?;
        Ok(())
    }

    /// The retro of run `run_id`, if one was made. A row whose JSON no
    /// longer parses (written by hand) reads as none.
    pub fn retro(&self, run_id: &str) -> Result<Option<Retro>> {
        let text: Option<String> = self
            .conn
            .prepare_cached("SELECT retro FROM retros WHERE run_id = ?1")?
            .query_row(params![run_id], |row| row.get(0))
            .optional()?;
        Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
    }

    /// The retros of every run, newest first, at most `limit`
    /// (capped at [`MAX_RETROS_LISTED`]).
    pub fn retros(&self, limit: u32) -> Result<Vec<RetroSummary>> {
        let mut statement = self.conn.prepare_cached(
            "SELECT r.run_id, runs.workflow_name, runs.status, r.created_at, r.smoothness, \
                    r.friction_count, r.duration_ms, r.cost, r.tokens, r.error \
             FROM retros r JOIN runs ON runs.id = r.run_id \
             ORDER BY r.created_at DESC, r.run_id LIMIT ?1",
        )?;
        let rows = statement.query_map(params![limit.min(MAX_RETROS_LISTED)], |row| {
            let status: String = row.get(2)?;
            let smoothness: Option<String> = row.get(4)?;
            let friction: i64 = row.get(5)?;
            let duration: Option<i64> = row.get(6)?;
            let tokens: i64 = row.get(8)?;
            Ok(RetroSummary {
                run_id: row.get(0)?,
                workflow_name: row.get(1)?,
                run_status: RunStatus::parse(&status).unwrap_or(RunStatus::Failed),
                created_at: row.get(3)?,
                smoothness: smoothness
                    .and_then(|s| serde_json::from_value(serde_json::Value::String(s)).ok()),
                friction_count: u32::try_from(friction.max(0)).unwrap_or(u32::MAX),
                duration_ms: duration.and_then(|d| u64::try_from(d).ok()),
                cost: row.get(7)?,
                tokens: u64::try_from(tokens.max(0)).unwrap_or(0),
                error: row.get(9)?,
            })
        })?;
        Ok(rows.collect::<std::result::Result<Vec<_>, _>>()?)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]
    use super::super::fixtures::{home, new_run};
    use super::*;
    use crate::model::retro::{Narrative, RetroTotals};

    fn retro(run_id: &str, created_at: &str, narrative: Option<Narrative>) -> Retro {
        Retro {
            run_id: run_id.into(),
            workflow_name: "build".into(),
            run_status: RunStatus::Succeeded,
            created_at: created_at.into(),
            stages: Vec::new(),
            totals: RetroTotals {
                duration_ms: Some(1_500),
                cost: 0.25,
                tokens: 900,
                ..RetroTotals::default()
            },
            error: narrative.is_none().then(|| "no model".to_string()),
            narrative,
            llm: None,
        }
    }

    #[test]
    fn a_retro_reads_back_whole_and_lists_newest_first_with_its_rating_and_friction() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("store");
        for (id, at) in [
            ("01A", "2026-12-01T00:00:00.000Z"),
            ("01B", "2026-12-02T00:00:00.000Z"),
        ] {
            store
                .create_run(&new_run(id, "build", "g", at))
                .expect("run");
            store
                .set_status(id, RunStatus::Succeeded, None)
                .expect("ended");
        }
        let narrative: Narrative = serde_json::from_value(serde_json::json!({
            "smoothness": "bumpy", "intent": "i", "outcome": "o", "learnings": [],
            "friction_points": [{"kind": "retry", "description": "d"}, {"kind": "timeout", "description": "t"}],
            "open_items": []
        }))
        .expect("narrative");
        let first = retro("01A", "2026-12-01T01:00:00.000Z", Some(narrative));
        store.save_retro(&first).expect("saved");
        store
            .save_retro(&retro("01B", "2026-12-02T01:00:00.000Z", None))
            .expect("saved");
        assert_eq!(store.retro("01A").expect("read"), Some(first.clone()));
        assert_eq!(store.retro("01C").expect("read"), None);

        let listed = store.retros(10).expect("list");
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].run_id, "01B", "newest first");
        assert_eq!(listed[0].smoothness, None);
        assert_eq!(listed[0].error.as_deref(), Some("no model"));
        assert_eq!(listed[1], RetroSummary::of(&first));
        assert_eq!(listed[1].friction_count, 2);

        // A new retro of the same run replaces the old one.
        store
            .save_retro(&retro("01A", "2026-12-03T00:00:00.000Z", None))
            .expect("saved");
        let listed = store.retros(10).expect("list");
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].run_id, "01A");
    }
}
