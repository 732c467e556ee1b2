//! `weft open RUN [--stage NODE[@VISIT]] [--tab TAB] [--bar TAB]
//! [--question QID] [--print] [--json]`, or `weft open weft://…`: builds
//! the deep link to a place in the desktop app ([`DeepLink`]) and starts
//! the app with it, as a gate notification's click does. An app already
//! open for the home takes the link over and shows it.
//!
//! RUN is resolved in the run store as other commands resolve it (id,
//! unique prefix, `last`, `last~N`), so the link always holds the full id.
//! The app is the one settings.toml's `app` names, else `weft-desktop`
//! beside `weft`.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::OpenArgs;
use super::exit::{self, CliError, CliResult, EXIT_OK};
use crate::model::DeepLink;
use crate::model::link::SCHEME;

/// `weft open`.
pub fn run(args: &OpenArgs) -> CliResult {
    let link = link_for(args)?;
    if !args.print {
        start_app(&link)?;
    }
    if args.json {
        println!("{}", serde_json::json!({ "link": link.url() }));
    } else {
        println!("{}", link.url());
    }
    exit::code(EXIT_OK)
}

/// The link `args` name: a `weft://` link as given (checked), or one built
/// from RUN and the flags.
fn link_for(args: &OpenArgs) -> Result<DeepLink, CliError> {
    let target = args.target.trim();
    let is_link = target
        .get(..SCHEME.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(SCHEME));
    if is_link {
        if args.stage.is_some() || args.tab.is_some() || args.bar.is_some() {
            return Err(CliError::usage(
                "a weft:// link names its place itself; --stage, --tab and --bar go with RUN",
            ));
        }
        if args.question.is_some() {
            return Err(CliError::usage(
                "a weft:// link names its place itself; --question goes with RUN",
            ));
        }
        return DeepLink::parse(target)
            .map_err(|e| CliError::usage(format!("not a Weft link: {e}")));
    }
    let (store, record) = super::open_run(target)?;
    let run = record.id.as_str();
    let built = if let Some(question) = &args.question {
        DeepLink::question(run, question.trim())
    } else if let Some(stage) = &args.stage {
        let (node, visit) = match stage.rsplit_once('@') {
            Some((node, visit)) => {
                let visit = visit
                    .parse::<u32>()
                    .ok()
                    .filter(|v| *v >= 1)
                    .ok_or_else(|| {
                        CliError::usage(format!(
                            "`{stage}`: the visit after `@` is a number from 1 (NODE@VISIT)"
                        ))
                    })?;
                (node, Some(visit))
            }
            None => (stage.as_str(), None),
        };
        // A tab belongs to one visit: without one, the latest recorded.
        let visit = match (visit, &args.tab) {
            (None, Some(_)) => Some(latest_visit(&store, run, node)?),
            (visit, _) => visit,
        };
        DeepLink::stage(run, node, visit, args.tab.as_deref())
    } else if let Some(bar) = &args.bar {
        DeepLink::run_bar(run, bar)
    } else {
        DeepLink::run(run)
    };
    built.map_err(CliError::Usage)
}

/// The newest recorded visit of `node` in the run.
fn latest_visit(store: &crate::store::Store, run: &str, node: &str) -> Result<u32, CliError> {
    let stages = store
        .stages(run)
        .map_err(|e| CliError::usage(format!("cannot read the run's stages: {e}")))?;
    stages
        .iter()
        .filter(|s| s.node_id == node)
        .map(|s| s.visit)
        .max()
        .ok_or_else(|| {
            CliError::usage(format!(
                "run {run} has no visit of `{node}` yet; a tab needs one (--stage {node}@VISIT)"
            ))
        })
}

/// Starts the desktop app with `link` as its one argument, detached: in its
/// own process group, without this terminal, not waited for.
fn start_app(link: &DeepLink) -> Result<(), CliError> {
    use std::os::unix::process::CommandExt;
    let app = desktop_app(link)?;
    Command::new(&app)
        .arg(link.url())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map(drop)
        .map_err(|e| {
            CliError::usage(format!(
                "cannot start the app {}: {e}\n  the link: {}",
                app.display(),
                link.url()
            ))
        })
}

/// The app settings.toml names, else `weft-desktop` beside `weft`; an
/// error saying how to set it (and giving the link) when there is none.
fn desktop_app(link: &DeepLink) -> Result<PathBuf, CliError> {
    let home = super::home()?;
    let settings = crate::server::Settings::load(&home).map_err(CliError::Usage)?;
    let how = format!(
        "set `app = \"/path/to/weft-desktop\"` in {}, or open the link yourself:\n  {}",
        home.settings_path().display(),
        link.url()
    );
    match settings.desktop_app() {
        Some(app) if app.is_file() => Ok(app),
        Some(app) => Err(CliError::usage(format!(
            "the desktop app {} (settings.toml `app`) does not exist; {how}",
            app.display()
        ))),
        None => Err(CliError::usage(format!(
            "the desktop app (weft-desktop) is not installed beside weft; {how}"
        ))),
    }
}
