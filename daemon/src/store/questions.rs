//! The `questions` table: the questions human gates ask (and external
//! agents' permission requests put to a person), and their answers.

use std::collections::BTreeMap;

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSqlOutput, ValueRef};
use rusqlite::{OptionalExtension, ToSql, params};
use serde::{Deserialize, Serialize};

use super::sql::{from_json, to_json};
use super::{Result, Store, StoreError, timestamp};
use crate::model::PermissionAsk;

/// Where a human gate's question stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum QuestionStatus {
    /// Asked, waiting for an answer.
    Pending,
    Answered,
    /// The gate's timeout passed; its default (if any) was taken.
    TimedOut,
    /// The run stopped while the question was open.
    Interrupted,
}

impl QuestionStatus {
    /// The snake_case name used in the database (`pending`, `timed_out`, ...).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            QuestionStatus::Pending => "pending",
            QuestionStatus::Answered => "answered",
            QuestionStatus::TimedOut => "timed_out",
            QuestionStatus::Interrupted => "interrupted",
        }
    }

    /// Reads a name written by [`QuestionStatus::as_str`].
    #[must_use]
    pub fn parse(text: &str) -> Option<QuestionStatus> {
        [
            QuestionStatus::Pending,
            QuestionStatus::Answered,
            QuestionStatus::TimedOut,
            QuestionStatus::Interrupted,
        ]
        .into_iter()
        .find(|status| status.as_str() == text)
    }
}

impl ToSql for QuestionStatus {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.as_str()))
    }
}

impl FromSql for QuestionStatus {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<QuestionStatus> {
        let text = value.as_str()?;
        QuestionStatus::parse(text)
            .ok_or_else(|| FromSqlError::Other(format!("unknown question status `{text}`").into()))
    }
}

/// A human gate's question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct QuestionRecord {
    pub id: String,
    pub run_id: String,
    pub node_id: String,
    pub visit: u32,
    pub text: String,
    pub options: Vec<String>,
    pub freeform: bool,
    pub status: QuestionStatus,
    pub answer: Option<serde_json::Value>,
    pub asked_at: String,
    pub answered_at: Option<String>,
    /// The external agent's request when this is a permission question
    /// (`acp.permissions="ask"`); absent for a human gate's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission: Option<PermissionAsk>,
}

/// The `questions` columns in the order [`QuestionRow::read`] expects.
const QUESTION_COLUMNS: &str = "id, run_id, node_id, visit, text, options, freeform, status, \
     answer, asked_at, answered_at, permission";

impl Store {
    /// Records a human gate's question. Fails if the id exists.
    pub fn insert_question(&mut self, q: &QuestionRecord) -> Result<()> {
        let answer = q
            .answer
            .as_ref()
            .map(|a| to_json(a, || format!("answer to question {}", q.id)))
            .transpose()?;
        let permission = q
            .permission
            .as_ref()
            .map(|p| to_json(p, || format!("permission request of question {}", q.id)))
            .transpose()?;
        self.conn
            .prepare_cached(&format!(
                "INSERT INTO questions ({QUESTION_COLUMNS}) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"
            ))?
            .execute(params![
                q.id,
                q.run_id,
                q.node_id,
                q.visit,
                q.text,
                to_json(&q.options, || format!("options of question {}", q.id))?,
                q.freeform,
                q.status,
                answer,
                q.asked_at,
                q.answered_at,
                permission,
            ])?;
        Ok(())
    }

    /// Closes question `id` with `status` and `answer`, stamping
    /// `answered_at`. [`StoreError::QuestionNotFound`] if there is no such
    /// question.
    pub(crate) fn answer_question(
        &mut self,
        id: &str,
        status: QuestionStatus,
        answer: Option<&serde_json::Value>,
    ) -> Result<()> {
        let answer = answer
            .map(|a| to_json(a, || format!("answer to question {id}")))
            .transpose()?;
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE questions SET status = ?2, answer = ?3, answered_at = ?4 WHERE id = ?1",
            )?
            .execute(params![id, status, answer, timestamp()])?;
        if changed == 0 {
            return Err(StoreError::QuestionNotFound(id.to_string()));
        }
        Ok(())
    }

    /// The question with this id, if any.
    pub fn question(&self, id: &str) -> Result<Option<QuestionRecord>> {
        let row = self
            .conn
            .prepare_cached(&format!(
                "SELECT {QUESTION_COLUMNS} FROM questions WHERE id = ?1"
            ))?
            .query_row([id], QuestionRow::read)
            .optional()?;
        row.map(QuestionRow::into_record).transpose()
    }

    /// Questions of one run (or of all runs), oldest first; only the
    /// pending ones if `pending_only`.
    pub fn questions(
        &self,
        run_id: Option<&str>,
        pending_only: bool,
    ) -> Result<Vec<QuestionRecord>> {
        let rows = self
            .conn
            .prepare_cached(&format!(
                "SELECT {QUESTION_COLUMNS} FROM questions \
                 WHERE (?1 IS NULL OR run_id = ?1) AND (NOT ?2 OR status = 'pending') \
                 ORDER BY asked_at, id"
            ))?
            .query_map(params![run_id, pending_only], QuestionRow::read)?
            .collect::<rusqlite::Result<Vec<QuestionRow>>>()?;
        rows.into_iter().map(QuestionRow::into_record).collect()
    }

    /// The oldest `limit` pending questions of every run, and how many are
    /// pending in all (the app's tray).
    pub(crate) fn pending_questions(&self, limit: u32) -> Result<(Vec<QuestionRecord>, u64)> {
        let rows = self
            .conn
            .prepare_cached(&format!(
                "SELECT {QUESTION_COLUMNS} FROM questions WHERE status = 'pending' \
                 ORDER BY asked_at, id LIMIT ?1"
            ))?
            .query_map([limit], QuestionRow::read)?
            .collect::<rusqlite::Result<Vec<QuestionRow>>>()?;
        let total: i64 = self
            .conn
            .prepare_cached("SELECT count(*) FROM questions WHERE status = 'pending'")?
            .query_row([], |row| row.get(0))?;
        let records = rows
            .into_iter()
            .map(QuestionRow::into_record)
            .collect::<Result<Vec<_>>>()?;
        Ok((records, u64::try_from(total).unwrap_or(0)))
    }

    /// How many questions are pending for each of `run_ids` (the badges of
    /// a page of the run list); runs without any are absent. One indexed
    /// count per run.
    pub(crate) fn pending_question_counts(
        &self,
        run_ids: &[&str],
    ) -> Result<BTreeMap<String, u32>> {
        let mut pending = self.conn.prepare_cached(
            "SELECT count(*) FROM questions WHERE run_id = ?1 AND status = 'pending'",
        )?;
        let mut counts = BTreeMap::new();
        for run_id in run_ids {
            let open: u32 = pending.query_row([run_id], |row| row.get(0))?;
            if open > 0 {
                counts.insert((*run_id).to_string(), open);
            }
        }
        Ok(counts)
    }
}

/// A `questions` row as stored.
struct QuestionRow {
    record: QuestionRecord,
    options: String,
    answer: Option<String>,
    permission: Option<String>,
}

impl QuestionRow {
    fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<QuestionRow> {
        Ok(QuestionRow {
            record: QuestionRecord {
                id: row.get(0)?,
                run_id: row.get(1)?,
                node_id: row.get(2)?,
                visit: row.get(3)?,
                text: row.get(4)?,
                options: Vec::new(),
                freeform: row.get(6)?,
                status: row.get(7)?,
                answer: None,
                asked_at: row.get(9)?,
                answered_at: row.get(10)?,
                permission: None,
            },
            options: row.get(5)?,
            answer: row.get(8)?,
            permission: row.get(11)?,
        })
    }

    fn into_record(self) -> Result<QuestionRecord> {
        let mut record = self.record;
        let id = record.id.clone();
        record.options = from_json(&self.options, || format!("options of question {id}"))?;
        if let Some(text) = self.answer {
            record.answer = Some(from_json(&text, || format!("answer to question {id}"))?);
        }
        if let Some(text) = self.permission {
            record.permission = Some(from_json(&text, || {
                format!("permission request of question {id}")
            })?);
        }
        Ok(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixtures::{home, new_run};

    #[test]
    fn questions_round_trip_and_answers_close_them() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        store
            .create_run(&new_run("R1", "wf", "g", "2026-01-01T00:00:00.000Z"))
            .expect("create");
        store
            .create_run(&new_run("R2", "wf", "g", "2026-01-01T00:00:00.000Z"))
            .expect("create");
        let question = |id: &str, run: &str, asked_at: &str| QuestionRecord {
            id: id.into(),
            run_id: run.into(),
            node_id: "approve".into(),
            visit: 1,
            text: "Ship it?".into(),
            options: vec!["[Y] Yes".into(), "[N] No".into()],
            freeform: false,
            status: QuestionStatus::Pending,
            answer: None,
            asked_at: asked_at.into(),
            answered_at: None,
            permission: None,
        };
        let q1 = question("Q1", "R1", "2026-01-01T00:00:01.000Z");
        let q2 = question("Q2", "R2", "2026-01-01T00:00:02.000Z");
        store.insert_question(&q1).expect("insert");
        store.insert_question(&q2).expect("insert");
        assert_eq!(
            store.questions(None, false).expect("all"),
            [q1.clone(), q2.clone()]
        );
        assert_eq!(
            store.questions(Some("R2"), true).expect("R2"),
            std::slice::from_ref(&q2)
        );

        let answer = serde_json::json!({"selected": "Yes"});
        store
            .answer_question("Q1", QuestionStatus::Answered, Some(&answer))
            .expect("answer");
        assert_eq!(store.questions(None, true).expect("pending"), [q2]);
        let answered = store.questions(Some("R1"), false).expect("R1");
        assert_eq!(answered[0].status, QuestionStatus::Answered);
        assert_eq!(answered[0].answer, Some(answer));
        assert!(answered[0].answered_at.is_some());

        store
            .answer_question("Q2", QuestionStatus::TimedOut, None)
            .expect("time out");
        let timed_out = store.questions(Some("R2"), false).expect("R2");
        assert_eq!(
            (timed_out[0].status, &timed_out[0].answer),
            (QuestionStatus::TimedOut, &None)
        );
        assert_eq!(
            store
                .answer_question("Q9", QuestionStatus::Answered, None)
                .expect_err("missing")
                .code(),
            "question.not_found"
        );
    }

    fn permission_question(id: &str, run: &str) -> QuestionRecord {
        QuestionRecord {
            id: id.into(),
            run_id: run.into(),
            node_id: "work".into(),
            visit: 1,
            text: "claude asks permission: Edit notes.md".into(),
            options: vec!["Allow once".into(), "Always allow".into(), "Reject".into()],
            freeform: false,
            status: QuestionStatus::Pending,
            answer: None,
            asked_at: "2026-01-01T00:00:03.000Z".into(),
            answered_at: None,
            permission: Some(PermissionAsk {
                agent: "claude".into(),
                tool_kind: "edit".into(),
                title: "Edit notes.md".into(),
                locations: vec!["/work/notes.md".into()],
                command: None,
                input: Some("{\n  \"file_path\": \"/work/notes.md\"\n}".into()),
                options: [
                    ("Allow once", "allow_once"),
                    ("Always allow", "allow_always"),
                    ("Reject", "reject_once"),
                ]
                .into_iter()
                .map(|(label, kind)| crate::model::PermissionChoice {
                    label: label.into(),
                    kind: kind.into(),
                })
                .collect(),
            }),
        }
    }

    #[test]
    fn a_permission_question_keeps_the_agent_s_request() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        store
            .create_run(&new_run("R1", "wf", "g", "2026-01-01T00:00:00.000Z"))
            .expect("create");
        let asked = permission_question("Q1", "R1");
        store.insert_question(&asked).expect("insert");
        assert_eq!(store.question("Q1").expect("read"), Some(asked.clone()));
        store
            .answer_question(
                "Q1",
                QuestionStatus::Answered,
                Some(&serde_json::json!({"choice": "Reject"})),
            )
            .expect("answer");
        let answered = store.question("Q1").expect("read").expect("there");
        assert_eq!(answered.permission, asked.permission, "kept once answered");
        // On the wire a gate's question has no `permission` key at all.
        let json = serde_json::to_value(&asked).expect("json");
        assert_eq!(json["permission"]["options"][2]["kind"], "reject_once");
        let mut gate = asked;
        gate.permission = None;
        let json = serde_json::to_value(&gate).expect("json");
        assert!(json.get("permission").is_none(), "{json}");
        let back: QuestionRecord = serde_json::from_value(json).expect("reads");
        assert_eq!(back, gate);
    }

    /// A database written before questions kept permission requests opens,
    /// migrates, reads its questions as gates' and takes new ones.
    #[test]
    fn a_database_from_before_permission_questions_opens_and_keeps_its_questions() {
        let (_temp, home) = home();
        let path = home.db_path();
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        let conn = rusqlite::Connection::open(&path).expect("raw open");
        for sql in &crate::store::migrations::MIGRATIONS[..5] {
            conn.execute_batch(sql).expect("old schema");
        }
        conn.pragma_update(None, "user_version", 5)
            .expect("version");
        conn.execute_batch(
            "INSERT INTO runs (id, workflow_name, status, run_dir, work_dir, created_at) \
             VALUES ('R1', 'wf', 'blocked', '/home/runs/R1', '/work', '2026-01-01T00:00:00.000Z');
             INSERT INTO questions (id, run_id, node_id, visit, text, options, freeform, status, asked_at) \
             VALUES ('Q0', 'R1', 'approve', 1, 'Ship it?', '[\"Yes\",\"No\"]', 0, 'pending', \
                     '2026-01-01T00:00:01.000Z');",
        )
        .expect("old rows");
        drop(conn);

        let mut store = Store::open(&home).expect("migrates");
        let old = store.question("Q0").expect("read").expect("kept");
        assert_eq!(
            (old.text.as_str(), old.options.len(), old.permission),
            ("Ship it?", 2, None)
        );
        let asked = permission_question("Q1", "R1");
        store.insert_question(&asked).expect("insert");
        assert_eq!(
            store.questions(Some("R1"), true).expect("pending").len(),
            2,
            "both pending"
        );
        assert_eq!(store.question("Q1").expect("read"), Some(asked));
    }
}
