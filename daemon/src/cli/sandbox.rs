//! `weft sandbox check [--image IMAGE] [--json]`: whether the Docker engine
//! sandboxed runs would use answers, which one it is, and whether it has
//! the image — asked before a run needs it, with the reason when not.

use serde_json::json;

use super::exit::{self, CliResult, EXIT_INVALID, EXIT_OK};
use super::{SandboxArgs, SandboxCommand};
use crate::sandbox::docker::{Engine, EngineInfo, SandboxError};

pub fn run(args: &SandboxArgs) -> CliResult {
    match &args.command {
        SandboxCommand::Check { image, json } => super::block_on(async {
            let report = check(image.as_deref()).await;
            print_report(&report, *json);
            exit::code(if report.ok() { EXIT_OK } else { EXIT_INVALID })
        }),
    }
}

/// What the check found.
struct Report {
    host: String,
    engine: Result<EngineInfo, SandboxError>,
    /// The image asked about, and whether the engine has it (`Err` when
    /// the engine could not be asked).
    image: Option<(String, Result<bool, SandboxError>)>,
}

impl Report {
    fn ok(&self) -> bool {
        self.engine.is_ok()
            && self
                .image
                .as_ref()
                .is_none_or(|(_, has)| matches!(has, Ok(true)))
    }
}

async fn check(image: Option<&str>) -> Report {
    let engine = match Engine::connect() {
        Ok(engine) => engine,
        Err(e) => {
            return Report {
                host: docker_host(),
                engine: Err(e),
                image: image.map(|i| (i.to_string(), Ok(false))),
            };
        }
    };
    let host = engine.host().to_string();
    let info = match engine.ping().await {
        Ok(()) => engine.describe().await,
        Err(e) => Err(e),
    };
    let image = match (&info, image) {
        (Ok(_), Some(name)) => Some((name.to_string(), engine.has_image(name).await)),
        (Err(_), Some(name)) => Some((name.to_string(), Ok(false))),
        (_, None) => None,
    };
    Report {
        host,
        engine: info,
        image,
    }
}

/// `DOCKER_HOST` as the engine would read it, for a report on an address
/// that could not even be used.
fn docker_host() -> String {
    std::env::var("DOCKER_HOST").unwrap_or_default()
}

fn print_report(report: &Report, as_json: bool) {
    if as_json {
        let (image, image_present, image_error) = match &report.image {
            // Not asked when the engine did not answer.
            Some((name, _)) if report.engine.is_err() => (Some(name.clone()), None, None),
            Some((name, Ok(has))) => (Some(name.clone()), Some(*has), None),
            Some((name, Err(e))) => (Some(name.clone()), None, Some(e.to_string())),
            None => (None, None, None),
        };
        let out = json!({
            "host": report.host,
            "reachable": report.engine.is_ok(),
            "engine": report.engine.as_ref().ok(),
            "error": report.engine.as_ref().err().map(ToString::to_string).or(image_error),
            "image": image,
            "image_present": image_present,
            "ok": report.ok(),
        });
        println!("{out}");
        return;
    }
    match &report.engine {
        Ok(info) => println!(
            "engine: {} {} (API {}) at {}",
            info.name, info.version, info.api_version, report.host
        ),
        Err(e) => eprintln!("error: {e}"),
    }
    match (&report.engine, &report.image) {
        (Ok(_), Some((name, Ok(true)))) => println!("image: {name} is there"),
        (Ok(_), Some((name, Ok(false)))) => eprintln!(
            "error: image {name} not found on the engine at {} (DOCKER_HOST); build or pull it there first",
            report.host
        ),
        (Ok(_), Some((_, Err(e)))) => eprintln!("error: {e}"),
        _ => {}
    }
}
