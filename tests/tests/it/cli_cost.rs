//! `weft cost`: spending over runs made against the fake provider, and the
//! acceptance rule that the CLI and the app (the read model its Spending
//! view calls) agree on every figure.

use serde_json::Value;
use weft::store::{Home, SpendingQuery};
use weft::views::Views;
use weft_fakellm::{FakeLlm, Reply, Usage};
use weft_tests::Sandbox;

/// Scripts one answer spending `input` and `output` tokens for `key`.
fn answer(fake: &FakeLlm, key: &str, input: u64, output: u64) {
    fake.script(
        key,
        [Reply::Turn {
            text: Some("Looks fine.".into()),
            tool_calls: Vec::new(),
            usage: Some(Usage {
                input,
                output,
                ..Usage::default()
            }),
            finish: None,
        }],
    );
}

/// Runs `review.fabro` here (no daemon) with `model`, against the fake
/// provider under `key`.
fn review(sb: &Sandbox, fake: &FakeLlm, key: &str, model: &str) {
    let out = sb
        .weft()
        .env("OPENAI_API_KEY", key)
        .env("OPENAI_BASE_URL", format!("{}/v1", fake.url()))
        .args([
            "run",
            "--no-daemon",
            "review.fabro",
            "--provider",
            "openai",
            "--model",
            model,
        ])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Two runs: one on a catalog model (priced), one on a model the catalog
/// does not know (unpriced).
fn two_runs() -> (Sandbox, FakeLlm) {
    let fake = FakeLlm::start();
    let sb = Sandbox::new();
    sb.write(
        "review.fabro",
        r#"digraph Review { graph [goal="Check the release"]
           start [shape=Mdiamond]; exit [shape=Msquare]
           review [shape=tab, prompt="Anything to fix?"]
           start -> review -> exit }"#,
    );
    let key = format!("sk-cost-{}", std::process::id());
    answer(&fake, &key, 12_400, 3_200);
    review(&sb, &fake, &key, "gpt-5.2");
    answer(&fake, &key, 1_000, 100);
    review(&sb, &fake, &key, "house-model-7b");
    (sb, fake)
}

#[test]
fn weft_cost_sums_priced_and_unpriced_calls_per_model_and_run() {
    let (sb, _fake) = two_runs();
    let out = sb.run(&["cost", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let spending = json(&out.stdout);
    let total = &spending["total"];
    assert_eq!(total["stages"], 2);
    assert_eq!(total["calls"], 2);
    assert_eq!(total["input_tokens"], 13_400);
    assert_eq!(total["output_tokens"], 3_300);
    assert_eq!(
        total["unpriced_calls"], 1,
        "the unknown model's call: {total}"
    );
    assert!(total["cost"].as_f64().is_some_and(|c| c > 0.0), "{total}");
    assert_eq!(spending["runs_total"], 2);
    let models: Vec<&str> = spending["models"]
        .as_array()
        .map(|m| m.iter().filter_map(|m| m["model"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(models, ["gpt-5.2", "house-model-7b"], "priced first");
    assert_eq!(
        spending["days"].as_array().map(Vec::len),
        Some(1),
        "both ran today"
    );

    let table = sb.run(&["cost", "--by", "model"]);
    assert_eq!(table.code, 0, "{table:?}");
    assert!(table.stdout.contains("house-model-7b"), "{}", table.stdout);
    assert!(
        table.stdout.contains("unpriced (1 call)"),
        "{}",
        table.stdout
    );
    assert!(table.stdout.contains("TOTAL"), "{}", table.stdout);
    assert!(table.stdout.contains("+ 1 unpriced"), "{}", table.stdout);

    let ps = sb.run(&["ps", "--no-daemon"]);
    assert!(ps.stdout.contains("unpriced (1 call)"), "{}", ps.stdout);

    let one = json(&sb.run(&["cost", "--json", "--run", "last"]).stdout);
    assert_eq!(one["total"]["calls"], 1);
    assert_eq!(
        one["total"]["unpriced_calls"], 1,
        "the last run used the unknown model"
    );

    let bad = sb.run(&["cost", "--since", "last tuesday"]);
    assert_eq!(bad.code, 2, "{bad:?}");
    assert!(
        bad.stderr.contains("`last tuesday` is not a start"),
        "{}",
        bad.stderr
    );
    let unknown = sb.run(&["cost", "--run", "zzzz"]);
    assert_eq!(unknown.code, 2, "{unknown:?}");
}

#[test]
fn weft_cost_and_the_apps_spending_view_agree_on_every_figure() {
    let (sb, _fake) = two_runs();
    let home = Home::at(sb.path().join("home"));
    let views = Views::open(&home).unwrap_or_else(|e| panic!("{e}"));
    // A window by date, so both read the same instant whenever they run.
    let since = "2000-01-01";
    let cli = json(&sb.run(&["cost", "--json", "--since", since]).stdout);
    let app = views
        .spending(&SpendingQuery {
            since: Some(since.into()),
            run: None,
            limit: Some(100),
        })
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        cli,
        serde_json::to_value(&app).unwrap_or_else(|e| panic!("{e}"))
    );
    let cli = json(&sb.run(&["cost", "--json", "--all"]).stdout);
    let app = views
        .spending(&SpendingQuery {
            limit: Some(100),
            ..SpendingQuery::default()
        })
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        cli,
        serde_json::to_value(&app).unwrap_or_else(|e| panic!("{e}"))
    );
    assert_eq!(cli["runs"].as_array().map(Vec::len), Some(2));
}

#[test]
fn weft_cost_before_any_run_is_empty_but_still_checks_its_window() {
    let sb = Sandbox::new();
    let out = sb.run(&["cost", "--json", "--since", "2026-12-01"]);
    assert_eq!(out.code, 0, "{out:?}");
    let spending = json(&out.stdout);
    assert_eq!(spending["total"]["calls"], 0);
    assert!(
        spending["since"].is_string(),
        "the window is resolved: {spending}"
    );
    let table = sb.run(&["cost"]);
    assert_eq!(table.code, 0, "{table:?}");
    assert!(
        table.stdout.contains("no language-model calls"),
        "{}",
        table.stdout
    );
    assert_eq!(sb.run(&["cost", "--since", "soon"]).code, 2);
    assert_eq!(sb.run(&["cost", "--run", "01ABC"]).code, 2);
}
