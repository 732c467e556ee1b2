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

use super::OpenArgs;
use super::exit::{self, CliError, CliResult, EXIT_OK};
use crate::model::DeepLink;
use crate::model::link::node_and_visit;

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
    if DeepLink::is_link(target) {
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
        let link = DeepLink::question(run, question.trim()).map_err(CliError::Usage)?;
        check_question(&store, run, question.trim())?;
        Ok(link)
    } else if let Some(stage) = &args.stage {
        // Read as a link's stage segment is, so `+1` or `@` without a
        // visit are refused here as they are there.
        let (node, visit) = node_and_visit(stage).map_err(|e| {
            CliError::usage(format!(
                "`{stage}`: {e} (a node id holding `@` needs its visit: NODE@VISIT)"
            ))
        })?;
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

/// That the run asked the question `question`: a link to a question it
/// never asked would open the run at nothing.
fn check_question(store: &crate::store::Store, run: &str, question: &str) -> Result<(), CliError> {
    let asked = store
        .question(question)
        .map_err(|e| CliError::usage(format!("cannot read the run's questions: {e}")))?;
    match asked {
        Some(q) if q.run_id == run => Ok(()),
        _ => Err(CliError::usage(format!(
            "run {run} has no question `{question}` (`weft questions` lists them)"
        ))),
    }
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
    let app = desktop_app(link)?;
    crate::server::start_desktop_app(&app, link)
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
