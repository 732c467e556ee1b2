//! The `events` table: each run's event log, numbered from 1 without gaps
//! (`runs.last_seq` holds the last number), and checkpoints saved with
//! events but without a stage.

use rusqlite::{Connection, TransactionBehavior, params};

use super::runs::{last_seq, set_checkpoint, set_last_seq};
use super::sql::{U64, from_json, to_json};
use super::{Result, Store, StoreError, timestamp};
use crate::model::{Event, EventKind};

/// The `events` columns in the order [`EventRow::read`] expects.
const EVENT_COLUMNS: &str = "seq, ts, event, node_id, visit, properties";

impl Store {
    /// Like [`Store::commit_stage`] without a stage: stores `checkpoint` and
    /// appends `events` in one transaction (for jumps that complete no
    /// stage).
    pub(crate) fn save_checkpoint(
        &mut self,
        run_id: &str,
        checkpoint: &str,
        events: &[(EventKind, Option<(&str, u32)>)],
    ) -> Result<Vec<Event>> {
        let now = timestamp();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let events = insert_events(&tx, run_id, &now, events)?;
        set_checkpoint(&tx, run_id, checkpoint, &events)?;
        tx.commit()?;
        Ok(events)
    }

    /// Appends one event (see [`Store::append_events`]).
    pub(crate) fn append_event(
        &mut self,
        run_id: &str,
        kind: &EventKind,
        node: Option<(&str, u32)>,
    ) -> Result<Event> {
        let now = timestamp();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let seq = last_seq(&tx, run_id)? + 1;
        let event = insert_event(&tx, run_id, seq, &now, kind, node)?;
        set_last_seq(&tx, run_id, seq)?;
        tx.commit()?;
        Ok(event)
    }

    /// Appends `events` in one transaction, numbered after the run's last
    /// event: sequence numbers are 1-based and gap-free across calls. All
    /// share one timestamp, the time they were recorded. Returns the events
    /// as stored.
    pub fn append_events(
        &mut self,
        run_id: &str,
        events: &[(EventKind, Option<(&str, u32)>)],
    ) -> Result<Vec<Event>> {
        let now = timestamp();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let stored = insert_events(&tx, run_id, &now, events)?;
        if let Some(last) = stored.last() {
            set_last_seq(&tx, run_id, last.seq)?;
        }
        tx.commit()?;
        Ok(stored)
    }

    /// The run's events with `seq > after_seq`, ascending, at most `limit`.
    /// An `after_seq` beyond every stored seq (even beyond SQLite's integer
    /// range) gives an empty list. A stored event that no longer parses is a
    /// [`StoreError::Json`] naming its run and seq.
    pub fn events(&self, run_id: &str, after_seq: u64, limit: Option<u32>) -> Result<Vec<Event>> {
        let limit = limit.map_or(-1, i64::from);
        // Seqs are stored as SQLite integers: nothing lies beyond i64::MAX.
        let after_seq = U64(after_seq.min(i64::MAX.unsigned_abs()));
        let rows = self
            .conn
            .prepare_cached(&format!(
                "SELECT {EVENT_COLUMNS} FROM events WHERE run_id = ?1 AND seq > ?2 \
                 ORDER BY seq LIMIT ?3"
            ))?
            .query_map(params![run_id, after_seq, limit], EventRow::read)?
            .collect::<rusqlite::Result<Vec<EventRow>>>()?;
        rows.into_iter().map(|row| row.into_event(run_id)).collect()
    }

    /// The run's events named `name` (e.g. `checkpoint.saved`), ascending.
    pub(crate) fn events_named(&self, run_id: &str, name: &str) -> Result<Vec<Event>> {
        let rows = self
            .conn
            .prepare_cached(&format!(
                "SELECT {EVENT_COLUMNS} FROM events WHERE run_id = ?1 AND event = ?2 \
                 ORDER BY seq"
            ))?
            .query_map(params![run_id, name], EventRow::read)?
            .collect::<rusqlite::Result<Vec<EventRow>>>()?;
        rows.into_iter().map(|row| row.into_event(run_id)).collect()
    }
}

/// Inserts `events` after the run's last seq (inside the caller's
/// transaction, which must also update `runs.last_seq`).
pub(super) fn insert_events(
    conn: &Connection,
    run_id: &str,
    ts: &str,
    events: &[(EventKind, Option<(&str, u32)>)],
) -> Result<Vec<Event>> {
    if events.is_empty() {
        return Ok(Vec::new());
    }
    let mut seq = last_seq(conn, run_id)?;
    let mut stored = Vec::with_capacity(events.len());
    for (kind, node) in events {
        seq += 1;
        stored.push(insert_event(conn, run_id, seq, ts, kind, *node)?);
    }
    Ok(stored)
}

/// Inserts one event row and returns the event.
fn insert_event(
    conn: &Connection,
    run_id: &str,
    seq: u64,
    ts: &str,
    kind: &EventKind,
    node: Option<(&str, u32)>,
) -> Result<Event> {
    let properties = to_json(&kind.properties(), || {
        format!("event {seq} of run {run_id}")
    })?;
    conn.prepare_cached(
        "INSERT INTO events (run_id, seq, ts, event, node_id, visit, properties) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        run_id,
        U64(seq),
        ts,
        kind.name(),
        node.map(|(id, _)| id),
        node.map(|(_, visit)| visit),
        properties,
    ])?;
    Ok(Event {
        seq,
        ts: ts.to_string(),
        run_id: run_id.to_string(),
        node_id: node.map(|(id, _)| id.to_string()),
        visit: node.map(|(_, visit)| visit),
        kind: kind.clone(),
    })
}

/// An `events` row as stored.
struct EventRow {
    seq: u64,
    ts: String,
    event: String,
    node_id: Option<String>,
    visit: Option<u32>,
    properties: String,
}

impl EventRow {
    fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<EventRow> {
        Ok(EventRow {
            seq: row.get::<_, U64>(0)?.0,
            ts: row.get(1)?,
            event: row.get(2)?,
            node_id: row.get(3)?,
            visit: row.get(4)?,
            properties: row.get(5)?,
        })
    }

    /// Rebuilds the typed event; a row that does not parse (edited by hand,
    /// or written by a build with other event types) is an error naming it.
    fn into_event(self, run_id: &str) -> Result<Event> {
        let seq = self.seq;
        let what = || format!("event {seq} ({}) of run {run_id}", self.event);
        let properties: serde_json::Value = from_json(&self.properties, what)?;
        let kind =
            EventKind::from_parts(&self.event, properties).map_err(|source| StoreError::Json {
                what: what(),
                source,
            })?;
        Ok(Event {
            seq,
            ts: self.ts,
            run_id: run_id.to_string(),
            node_id: self.node_id,
            visit: self.visit,
            kind,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixtures::{home, new_run, notice, seqs};

    #[test]
    fn appended_events_get_gap_free_increasing_seqs_across_calls() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        store
            .create_run(&new_run("R1", "wf", "g", "2026-01-01T00:00:00.000Z"))
            .expect("create");
        let first = store
            .append_event("R1", &notice(0), None)
            .expect("append one");
        assert_eq!(first.seq, 1);
        let batch = store
            .append_events(
                "R1",
                &[
                    (notice(1), None),
                    (
                        EventKind::StageStarted {
                            handler: "command".into(),
                            attempt: 1,
                            branch: None,
                        },
                        Some(("build", 2)),
                    ),
                    (notice(3), None),
                ],
            )
            .expect("append batch");
        assert_eq!(seqs(&batch), [2, 3, 4]);
        assert!(store.append_events("R1", &[]).expect("empty").is_empty());
        let next = store.append_event("R1", &notice(5), None).expect("append");
        assert_eq!(next.seq, 5);

        let mut written = vec![first];
        written.extend(batch);
        written.push(next);
        let read = store.events("R1", 0, None).expect("read");
        assert_eq!(read, written, "events read back equal what was written");
        assert_eq!(read[2].node_id.as_deref(), Some("build"));
        assert_eq!(read[2].visit, Some(2));
        assert_eq!(seqs(&store.events("R1", 2, Some(2)).expect("page")), [3, 4]);
        assert_eq!(
            store.events_named("R1", "stage.started").expect("named"),
            vec![written[2].clone()]
        );
        assert_eq!(store.run("R1").expect("read").expect("run").last_seq, 5);
        assert_eq!(
            store
                .append_event("nope", &notice(0), None)
                .expect_err("no run")
                .code(),
            "run.not_found"
        );
    }

    #[test]
    fn an_event_row_that_does_not_parse_is_an_error_naming_it() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        store
            .create_run(&new_run("R1", "wf", "g", "2026-01-01T00:00:00.000Z"))
            .expect("create");
        store.append_event("R1", &notice(1), None).expect("append");
        store
            .conn
            .execute("UPDATE events SET event = 'no.such.event'", [])
            .expect("corrupt");
        let error = store.events("R1", 0, None).expect_err("does not parse");
        assert_eq!(error.code(), "store.json");
        let message = error.to_string();
        assert!(
            message.contains("event 1") && message.contains("R1"),
            "{message}"
        );
    }

    #[test]
    fn events_after_a_seq_beyond_any_are_none_not_an_error() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        store
            .create_run(&new_run("R", "ship", "goal", "2026-01-01T00:00:00.000Z"))
            .expect("create");
        store.append_event("R", &notice(1), None).expect("append");
        for after in [1, 2, i64::MAX.unsigned_abs(), u64::MAX] {
            assert_eq!(
                store.events("R", after, None).expect("no conversion error"),
                Vec::new(),
                "after {after}"
            );
        }
    }
}
