//! Secrets and permissions over the real binaries: provider keys stay out
//! of reach of commands (not in the environment of `weft` or `weftd`, whose
//! `/proc` files other processes of the user cannot open) and out of
//! everything Weft records; `[run.env]` passes and withholds variables and
//! the run says which it withheld; `WEFT_HOME` is private to the user.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use weft::store::{Home, Store};
use weft_tests::{Sandbox, binary};

/// A command that prints its parent's environment (the process that runs
/// the stages: `weft --no-daemon` or `weftd`), then its own.
const PEEK: &str = r#"digraph Peek {
  start [shape=Mdiamond]; exit [shape=Msquare]
  peek [shape=parallelogram, script="tr '\\0' '\\n' < /proc/$PPID/environ || true; echo ---; env"]
  start -> peek -> exit
}"#;

/// A key no other test or process uses, so finding it anywhere means it
/// leaked from this test's environment.
fn unique_key(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{prefix}{}x{nanos}leakcanary", std::process::id())
}

/// Every regular file under `dir` whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                pending.push(path);
            } else if meta.is_file()
                && std::fs::read(&path).is_ok_and(|bytes| {
                    bytes
                        .windows(needle.len())
                        .any(|window| window == needle.as_bytes())
                })
            {
                found.push(path);
            }
        }
    }
    found
}

/// The output the `peek` stage wrote to its log in the run directory.
fn stage_stdout(home: &Path, node: &str) -> String {
    let runs: Vec<PathBuf> = std::fs::read_dir(home.join("runs"))
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert_eq!(runs.len(), 1, "one run in {}", home.display());
    std::fs::read_to_string(runs[0].join("nodes").join(node).join("stdout.log"))
        .unwrap_or_else(|e| panic!("the stage log: {e}"))
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn weftd_pid(home: &Path) -> Option<u32> {
    std::fs::read_to_string(home.join("run/weftd.pid"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Runs PEEK with three secrets in the caller's environment (and `extra`)
/// and checks that none of them reached the command or any file Weft
/// wrote. Returns weft's stderr.
fn keys_stay_out_of_reach(args: &[&str], extra: &[(&str, &str)]) -> String {
    let sb = Sandbox::new();
    sb.write("peek.fabro", PEEK);
    let key = unique_key("sk-");
    let pat = unique_key("ghp_");
    let password = unique_key("pw");
    let out = sb
        .weft()
        .env("OPENAI_API_KEY", &key)
        .env("GH_PAT", &pat)
        .env("DATABASE_URL", format!("postgres://app:{password}@db/prod"))
        .envs(extra.iter().copied())
        .args(args)
        .arg("peek.fabro")
        .output()
        .unwrap_or_else(|e| panic!("weft: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let home = sb.path().join("home");
    let seen = stage_stdout(&home, "peek");
    // Before "---": the parent's environment, readable only with
    // CAP_SYS_PTRACE (root, usually) once the parent is not dumpable, and by
    // any command of the user before. Readable or not, it must show no key
    // (checked with the rest of `seen` below).
    let own = seen
        .split_once("---\n")
        .map_or(seen.as_str(), |(_, own)| own);
    assert!(
        own.contains("WEFT_RUN_ID="),
        "the command printed its environment: {seen}"
    );
    for secret in [&key, &pat, &password] {
        assert!(
            !seen.contains(secret.as_str()),
            "a command read a secret of the caller from its own or its parent's environment:\n{seen}"
        );
        assert!(
            !stdout.contains(secret.as_str()) && !stderr.contains(secret.as_str()),
            "weft printed a secret: {stderr}"
        );
        let leaked = files_containing(&home, secret);
        assert!(leaked.is_empty(), "the secret was recorded in {leaked:?}");
    }
    if let Some(pid) = weftd_pid(&home) {
        // Readable by root only (the daemon is not dumpable): what it shows
        // must hold no key either.
        if let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) {
            let environ = String::from_utf8_lossy(&environ);
            assert!(
                !environ.contains(&key) && !environ.contains(&pat),
                "weftd's environment holds a key"
            );
        }
    }
    stderr.into_owned()
}

#[test]
fn a_run_without_the_daemon_keeps_provider_keys_out_of_reach_of_its_commands() {
    keys_stay_out_of_reach(&["run", "--no-daemon"], &[]);
}

#[test]
fn a_run_in_an_auto_started_daemon_keeps_provider_keys_out_of_reach_of_its_commands() {
    keys_stay_out_of_reach(&["run"], &[]);
}

#[test]
fn a_stray_secrets_descriptor_variable_is_ignored_and_keys_are_still_removed() {
    // Descriptor 0 is the terminal or a pipe, not Weft's memory file: it
    // must not be read, and the keys must still leave the environment.
    let stderr = keys_stay_out_of_reach(&["run", "--no-daemon"], &[("WEFT_SECRETS_FD", "0")]);
    assert!(
        stderr.contains("ignoring WEFT_SECRETS_FD"),
        "the stray variable is reported: {stderr}"
    );
}

#[test]
fn a_provider_key_still_reaches_the_model_when_weft_runs_without_the_daemon() {
    use weft_fakellm::{FakeLlm, Reply};
    let fake = FakeLlm::start();
    let key = unique_key("sk-");
    fake.script(
        &key,
        [Reply::Turn {
            text: Some("Looks good.".into()),
            tool_calls: Vec::new(),
            usage: None,
            finish: None,
        }],
    );
    let sb = Sandbox::new();
    sb.write(
        "ask.fabro",
        r#"digraph Ask { start [shape=Mdiamond]; exit [shape=Msquare]
           ask [shape=tab, prompt="Ready?"]
           start -> ask -> exit }"#,
    );
    let out = sb
        .weft()
        .env("OPENAI_API_KEY", &key)
        .env("OPENAI_BASE_URL", format!("{}/v1", fake.url()))
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("GEMINI_API_KEY")
        .args(["run", "--no-daemon", "ask.fabro", "--model", "gpt-5.2"])
        .output()
        .unwrap_or_else(|e| panic!("weft: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let sent = fake.requests(&key);
    assert_eq!(sent.len(), 1, "the model was called once: {stderr}");
    assert_eq!(
        sent[0].header("authorization"),
        Some(format!("Bearer {key}").as_str()),
        "the key held in memory was used"
    );
    let leaked = files_containing(&sb.path().join("home"), &key);
    assert!(leaked.is_empty(), "the key was recorded in {leaked:?}");
}

/// Runs `weft ARGS` in `sb` as an unprivileged user (root drops to
/// nobody; anyone else runs as themselves) and returns its output.
fn run_unprivileged(sb: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = if is_root() {
        // nobody must own the sandbox to write its home there.
        for path in [sb.path().to_path_buf(), sb.path().join("home")]
            .into_iter()
            .chain(
                std::fs::read_dir(sb.path())
                    .into_iter()
                    .flatten()
                    .flatten()
                    .map(|e| e.path()),
            )
        {
            std::os::unix::fs::chown(&path, Some(65534), Some(65534))
                .unwrap_or_else(|e| panic!("chown {}: {e}", path.display()));
        }
        let mut cmd = Command::new("setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(binary("weft"));
        cmd
    } else {
        Command::new(binary("weft"))
    };
    cmd.current_dir(sb.path())
        .env("WEFT_HOME", sb.path().join("home"))
        .env("NO_COLOR", "1")
        .envs(env.iter().copied())
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("weft: {e}"))
}

/// A command that tries to read its parent's `/proc` files.
const PRY: &str = r#"digraph Pry {
  start [shape=Mdiamond]; exit [shape=Msquare]
  pry [shape=parallelogram, script="for f in environ maps; do if cat /proc/$PPID/$f >/dev/null 2>&1; then echo $f-readable; else echo $f-denied; fi; done"]
  start -> pry -> exit
}"#;

fn parent_proc_files_are_denied(args: &[&str]) {
    let sb = Sandbox::new();
    sb.write("pry.fabro", PRY);
    let key = unique_key("sk-");
    let mut all: Vec<&str> = args.to_vec();
    all.push("pry.fabro");
    let out = run_unprivileged(&sb, &all, &[("OPENAI_API_KEY", &key)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let seen = stage_stdout(&sb.path().join("home"), "pry");
    assert_eq!(
        seen, "environ-denied\nmaps-denied\n",
        "a command of the same user cannot open its parent's /proc files"
    );
}

#[test]
fn a_run_without_the_daemon_is_not_dumpable_by_its_commands() {
    parent_proc_files_are_denied(&["run", "--no-daemon"]);
}

#[test]
fn the_daemon_is_not_dumpable_by_its_commands() {
    parent_proc_files_are_denied(&["run"]);
}

#[test]
fn run_env_passes_and_withholds_variables_and_the_run_says_which_it_withheld() {
    let sb = Sandbox::new();
    sb.write(
        "show.fabro",
        r#"digraph Show {
          start [shape=Mdiamond]; exit [shape=Msquare]
          show [shape=parallelogram, script="echo gh=${GH_PAT:-unset} foo=${FOO_MODE:-unset} key=${OPENAI_API_KEY:-unset} path=${PATH:+set}"]
          start -> show -> exit
        }"#,
    );
    sb.write(
        "run.toml",
        "_version = 1\n[workflow]\ngraph = \"show.fabro\"\n\n[run.env]\npass = [\"GH_PAT\"]\ndeny = [\"FOO_*\"]\n",
    );
    let pat = format!("ghp_{}", "a1B2c3D4e5".repeat(4));
    let key = unique_key("sk-");
    let out = sb
        .weft()
        .env("GH_PAT", &pat)
        .env("FOO_MODE", "fast")
        .env("OPENAI_API_KEY", &key)
        .args(["run", "run.toml", "--json"])
        .output()
        .unwrap_or_else(|e| panic!("weft: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let withheld = stderr
        .lines()
        .find(|l| l.contains("withheld from commands:"))
        .unwrap_or_else(|| panic!("the run names what it withheld: {stderr}"));
    assert!(
        withheld.contains("FOO_MODE") && withheld.contains("OPENAI_API_KEY"),
        "{withheld}"
    );
    assert!(
        !withheld.contains("GH_PAT"),
        "GH_PAT was passed: {withheld}"
    );
    assert!(!withheld.contains(&key), "names only, never values");

    let home = sb.path().join("home");
    assert_eq!(
        stage_stdout(&home, "show"),
        format!("gh={pat} foo=unset key=unset path=set\n"),
        "the passed token reached the command; the denied and secret ones did not"
    );

    let conclusion: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let run_id = conclusion["run_id"].as_str().unwrap_or_default();
    let store = Store::open_read_only(&Home::at(&home)).unwrap_or_else(|e| panic!("{e}"));
    let events = store
        .events(run_id, 0, None)
        .unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<Value> = events
        .iter()
        .filter(|e| e.kind.name() == "run.env_withheld")
        .map(|e| e.kind.properties()["names"].clone())
        .collect();
    assert_eq!(
        names,
        [serde_json::json!(["FOO_MODE", "OPENAI_API_KEY"])],
        "one run.env_withheld event with the names"
    );
    let output: String = events
        .iter()
        .filter(|e| e.kind.name() == "command.output")
        .map(|e| {
            e.kind.properties()["text"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect();
    assert_eq!(
        output, "gh=[REDACTED] foo=unset key=unset path=set\n",
        "the recorded output has the token redacted"
    );
    let run = store.find_run(run_id).unwrap_or_else(|e| panic!("{e}"));
    let stored: Vec<String> = run.options["env"]
        .as_array()
        .map(|vars| {
            vars.iter()
                .filter_map(|v| v[0].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    assert!(
        stored.iter().any(|n| n == "PATH"),
        "the environment is stored: {stored:?}"
    );
    for name in ["GH_PAT", "FOO_MODE", "OPENAI_API_KEY"] {
        assert!(
            !stored.iter().any(|n| n == name),
            "{name} is not stored: {stored:?}"
        );
    }
    assert_eq!(run.options["env_policy"]["pass"][0], "GH_PAT");
    drop(store);
    // Only the stage's own log in the run directory has the token, as the
    // command printed it.
    let leaked = files_containing(&home, &pat);
    assert_eq!(
        leaked.len(),
        1,
        "the token is in the stage's stdout.log only: {leaked:?}"
    );
    assert!(leaked[0].ends_with("nodes/show/stdout.log"), "{leaked:?}");
}

#[test]
fn a_bad_run_env_pattern_is_refused_before_the_run_starts() {
    let sb = Sandbox::new();
    sb.write(
        "wf.fabro",
        "digraph W { start [shape=Mdiamond]; exit [shape=Msquare]; start -> exit }",
    );
    sb.write(
        "run.toml",
        "[workflow]\ngraph = \"wf.fabro\"\n[run.env]\ndeny = [\"FOO BAR\"]\n",
    );
    let run = sb.run(&["run", "--no-daemon", "run.toml"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("[run.env] deny") && run.stderr.contains("FOO BAR"),
        "{}",
        run.stderr
    );
    assert!(
        !sb.path().join("home/weft.db").exists(),
        "nothing was recorded"
    );
}

/// The mode bits of `path` (without the file type).
fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o7777
}

/// Every path under `dir` (itself included) that group or others may use.
fn open_to_others(dir: &Path) -> Vec<(PathBuf, u32)> {
    let mut open = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(path) = pending.pop() {
        let mode = mode(&path);
        if mode & 0o077 != 0 {
            open.push((path.clone(), mode));
        }
        if path.is_dir() && !path.is_symlink() {
            for entry in std::fs::read_dir(&path).into_iter().flatten().flatten() {
                pending.push(entry.path());
            }
        }
    }
    open
}

#[test]
fn a_new_home_and_everything_weft_writes_in_it_are_private_to_the_user() {
    let sb = Sandbox::new();
    let home = sb.path().join("home");
    // A home that does not exist yet: Weft creates it.
    std::fs::remove_dir(&home).unwrap_or_else(|e| panic!("{e}"));
    sb.write(
        "wf.fabro",
        r#"digraph W { start [shape=Mdiamond]; exit [shape=Msquare]
           build [shape=parallelogram, script="echo output; echo errors >&2"]
           start -> build -> exit }"#,
    );
    // Through the daemon, which keeps the database open: the WAL and
    // shared-memory files exist while the test looks.
    let run = sb.run(&["run", "wf.fabro"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        !run.stderr.contains("notice"),
        "a new home needs no notice: {}",
        run.stderr
    );
    for file in [
        "weft.db",
        "weft.db-wal",
        "weft.db-shm",
        "run/weftd.log",
        "run/weftd.sock",
    ] {
        assert!(home.join(file).exists(), "{file} exists");
    }
    assert_eq!(mode(&home), 0o700, "the home");
    let open = open_to_others(&home);
    assert!(open.is_empty(), "readable by other users: {open:?}");
}

#[test]
fn an_existing_home_open_to_others_is_tightened_with_a_notice() {
    let sb = Sandbox::new();
    let home = sb.path().join("home");
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("{e}"));
    sb.write(
        "wf.fabro",
        "digraph W { start [shape=Mdiamond]; exit [shape=Msquare]; start -> exit }",
    );
    let run = sb.run(&["run", "--no-daemon", "wf.fabro"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(mode(&home), 0o700, "tightened");
    let notice = run
        .stderr
        .lines()
        .find(|l| l.contains("notice:"))
        .unwrap_or_else(|| panic!("a notice says so: {}", run.stderr));
    assert!(
        notice.contains(&home.display().to_string()) && notice.contains("0755"),
        "{notice}"
    );
    let again = sb.run(&["run", "--no-daemon", "wf.fabro"]);
    assert!(!again.stderr.contains("notice:"), "once: {}", again.stderr);
}
