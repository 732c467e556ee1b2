//! What `weft` says about itself: `--help`, `weft man`, `weft
//! completions`, and counts printed with the right plural.

use weft_tests::Sandbox;

#[test]
fn help_names_weft_home_the_settings_and_the_docs() {
    let help = Sandbox::new().run(&["--help"]);
    assert_eq!(help.code, 0, "{help:?}");
    for needle in [
        "WEFT_HOME",
        "settings.toml",
        "docs/cli.md",
        "last~N",
        "NO_COLOR",
    ] {
        assert!(help.stdout.contains(needle), "{needle}: {}", help.stdout);
    }
}

#[test]
fn man_prints_a_roff_page_for_weft_and_each_command() {
    let sb = Sandbox::new();
    let page = sb.run(&["man"]);
    assert_eq!(page.code, 0, "{page:?}");
    assert!(page.stdout.contains(".TH weft 1"), "{}", page.stdout);
    let run = sb.run(&["man", "run"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains(".TH weft-run 1"), "{}", run.stdout);
    assert!(
        run.stdout.contains("auto\\-approve"),
        "the options are listed"
    );
    let unknown = sb.run(&["man", "nope"]);
    assert_eq!(unknown.code, 2);
    assert!(
        unknown.stderr.contains("validate, graph, run"),
        "{}",
        unknown.stderr
    );
}

#[test]
fn completions_are_generated_for_each_shell() {
    let sb = Sandbox::new();
    for (shell, marker) in [
        ("bash", "complete -F _weft"),
        ("zsh", "#compdef weft"),
        ("fish", "complete -c weft"),
    ] {
        let script = sb.run(&["completions", shell]);
        assert_eq!(script.code, 0, "{shell}: {script:?}");
        assert!(script.stdout.contains(marker), "{shell}: {}", script.stdout);
        assert!(
            script.stdout.contains("resume"),
            "{shell} completes commands"
        );
    }
    assert_eq!(sb.run(&["completions", "cmd.exe"]).code, 2);
}

#[test]
fn counts_of_one_are_singular() {
    let sb = Sandbox::new();
    sb.write(
        "one.fabro",
        "digraph One { start [shape=Mdiamond]; exit [shape=Msquare]; start -> exit }",
    );
    let checked = sb.run(&["validate", "one.fabro"]);
    assert_eq!(checked.code, 0, "{checked:?}");
    assert!(
        checked.stdout.contains("(2 nodes, 1 edge)"),
        "{}",
        checked.stdout
    );
}

#[test]
fn handlers_lists_every_handler_with_its_shape_type_names_and_attributes() {
    let sb = Sandbox::new();
    let text = sb.run(&["handlers"]);
    assert_eq!(text.code, 0, "{text:?}");
    assert!(
        text.stdout
            .contains("human  (shape=hexagon)\n  asks a person to choose"),
        "{}",
        text.stdout
    );
    let json = sb.run(&["handlers", "--json"]);
    assert_eq!(json.code, 0, "{json:?}");
    let v = weft_tests::json(&json.stdout);
    let handlers = v["handlers"].as_array().expect("a list of handlers");
    assert_eq!(handlers.len(), 11);
    let agent = handlers
        .iter()
        .find(|h| h["name"] == "agent")
        .expect("the agent handler");
    assert_eq!(agent["shape"], "box");
    assert!(
        agent["types"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t == "codergen")),
        "{agent}"
    );
    assert!(
        v["stage_attributes"]
            .as_array()
            .is_some_and(|a| a.iter().any(|a| a == "goal_gate")),
        "{v}"
    );
}
