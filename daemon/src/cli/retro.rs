//! `weft retro RUN`: a run's retrospective (docs/engine.md, "Retros") from
//! the store, as text or JSON; `--generate` makes one now, in this process
//! (the run has ended, so nothing of the daemon's is needed), with the
//! run's model choice unless `--model`/`--provider` say otherwise.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::RetroArgs;
use super::exit::{CliError, CliResult};
use crate::model::{ModelChoice, Retro, RunStatus};
use crate::store::Store;
use crate::util::duration::elapsed;

/// `weft retro`.
pub fn run(args: &RetroArgs) -> CliResult {
    let retro = if args.generate {
        generate(args)?
    } else {
        let (store, record) = super::open_run(&args.run)?;
        let found = store.retro(&record.id).map_err(|e| {
            CliError::Usage(format!("cannot read the retro of run {}: {e}", record.id))
        })?;
        found.ok_or_else(|| {
            CliError::Usage(format!(
                "run {} has no retro (enable them with `[run] retros = true`, `--retro` or settings.toml's `retros = true`; `weft retro {} --generate` makes one now)",
                record.id, record.id
            ))
        })?
    };
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        serde_json::to_string_pretty(&retro)
            .map_err(std::io::Error::other)
            .and_then(|text| writeln!(out, "{text}"))
    } else {
        out.write_all(human(&retro).as_bytes())
    };
    super::output_done(written)
}

/// Makes the retro of an ended run now and records it.
fn generate(args: &RetroArgs) -> Result<Retro, CliError> {
    // This process calls the model: keys stay out of its environment, as
    // for `weft run --no-daemon`.
    crate::secrets::protect_process("weft");
    let (_, record) = super::open_run(&args.run)?;
    if matches!(
        record.status,
        RunStatus::Queued | RunStatus::Running | RunStatus::Blocked
    ) {
        return Err(CliError::Usage(format!(
            "run {} is {}; a retro is made once it has ended",
            record.id, record.status
        )));
    }
    let home = super::home()?;
    let store = Store::open(&home)
        .map_err(|e| CliError::Usage(format!("cannot open the run store: {e}")))?;
    let mut choice: ModelChoice = record
        .options
        .get("model")
        .cloned()
        .and_then(|m| serde_json::from_value(m).ok())
        .unwrap_or_default();
    if args.model.is_some() {
        choice.model.clone_from(&args.model);
    }
    if args.provider.is_some() {
        choice.provider.clone_from(&args.provider);
    }
    let timeout = crate::engine::retro::RetroSettings::load(&home.settings_path())
        .and_then(|s| s.timeout())
        .map_err(CliError::Usage)?;
    let models = crate::engine::models::Models::new(choice, None, home.settings_path());
    let store = Arc::new(Mutex::new(store));
    super::block_on(async {
        crate::engine::retro::make(&store, &record.id, &models, timeout)
            .await
            .map(|_| std::process::ExitCode::SUCCESS)
            .map_err(|e| CliError::Usage(format!("cannot record the retro: {e}")))
    })?;
    let retro = crate::util::lock::lock(&store)
        .retro(&record.id)
        .map_err(|e| CliError::Usage(format!("cannot read the retro back: {e}")))?;
    retro.ok_or_else(|| CliError::Usage("the retro was not recorded".into()))
}

/// The retro as people read it.
fn human(retro: &Retro) -> String {
    let mut text = format!(
        "Retro of run {} ({}), {}\n",
        retro.run_id, retro.workflow_name, retro.run_status
    );
    match &retro.narrative {
        Some(n) => {
            text.push_str(&format!("Rating:   {}\n", n.smoothness.as_str()));
            text.push_str(&format!("Intent:   {}\n", n.intent));
            text.push_str(&format!("Outcome:  {}\n", n.outcome));
            if !n.learnings.is_empty() {
                text.push_str("\nLearnings:\n");
                for l in &n.learnings {
                    text.push_str(&format!("  [{}] {}\n", l.category, l.text));
                }
            }
            if !n.friction_points.is_empty() {
                text.push_str("\nFriction:\n");
                for f in &n.friction_points {
                    let at = f
                        .stage
                        .as_deref()
                        .map(|s| format!(" (stage {s})"))
                        .unwrap_or_default();
                    text.push_str(&format!("  [{}] {}{at}\n", f.kind, f.description));
                }
            }
            if !n.open_items.is_empty() {
                text.push_str("\nOpen items:\n");
                for o in &n.open_items {
                    text.push_str(&format!("  [{}] {}\n", o.kind, o.description));
                }
            }
        }
        None => text.push_str(&format!(
            "Rating:   none ({})\n",
            retro.error.as_deref().unwrap_or("no narrative")
        )),
    }
    let t = &retro.totals;
    text.push_str(&format!(
        "\nTotals: {}, {} stage(s) completed, {} failed, {} retr{}, {} tokens, ${:.4}, {} file(s) touched\n",
        t.duration_ms
            .map_or_else(|| "duration unknown".to_string(), |ms| elapsed(Duration::from_millis(ms))),
        t.stages_completed,
        t.stages_failed,
        t.retries,
        if t.retries == 1 { "y" } else { "ies" },
        t.tokens,
        t.cost,
        t.files_touched.len()
    ));
    if !retro.stages.is_empty() {
        let width = retro
            .stages
            .iter()
            .map(|s| s.node_id.len() + 1 + s.visit.to_string().len())
            .max()
            .unwrap_or(5)
            .clamp(5, 40);
        text.push_str(&format!(
            "\n{:<width$}  {:<20}  {:>9}  {:>8}  {:>8}  {:>9}  FILES\n",
            "STAGE", "STATUS", "DURATION", "ATTEMPTS", "TOKENS", "COST"
        ));
        for s in &retro.stages {
            let name = format!("{}@{}", s.node_id, s.visit);
            text.push_str(&format!(
                "{:<width$}  {:<20}  {:>9}  {:>8}  {:>8}  {:>9}  {}\n",
                crate::util::text::truncate(&name, width),
                s.status,
                s.duration_ms
                    .map_or_else(|| "-".to_string(), |ms| elapsed(Duration::from_millis(ms))),
                s.attempts,
                s.tokens,
                format!("${:.4}", s.cost),
                s.files_touched.len()
            ));
            if let Some(reason) = &s.failure_reason {
                text.push_str(&format!(
                    "{:<width$}  failure: {}\n",
                    "",
                    crate::util::text::one_line(reason, 100)
                ));
            }
        }
    }
    text
}
