//! `[run.sandbox]` read into a container's [`Settings`]: every value
//! checked, with a message naming the key, before a run is recorded.

use std::path::PathBuf;

use super::{Mount, Network, Settings};
#[cfg(test)]
use crate::model::sandbox::DEFAULT_IMAGE;
use crate::model::sandbox::{Provider, SandboxConfig};

/// Longest image name, engine address, user or mount entry, in bytes.
const MAX_TEXT: usize = 1024;

/// Most extra mounts.
const MAX_MOUNTS: usize = 64;

/// The container's settings from a `docker` configuration; `Ok(None)` for
/// the local provider.
///
/// # Errors
/// A message naming the first bad key: an empty or overlong image, a
/// memory size that does not parse, CPUs or pids out of range, an unknown
/// network, a mount that is not `/HOST:/CONTAINER[:ro|rw]`.
pub fn settings(config: &SandboxConfig) -> Result<Option<Settings>, String> {
    if config.provider() == Provider::Local {
        return Ok(None);
    }
    let fabro = config.docker.clone().unwrap_or_default();
    let image = config.image();
    text("image", &image)?;
    if let Some(engine) = &config.engine {
        text("engine", engine)?;
    }
    if let Some(user) = &config.user {
        text("user", user)?;
    }
    let mut settings = Settings::new(&image);
    settings.cpus = match (config.cpus, fabro.cpu_quota) {
        (Some(cpus), _) => Some(cpus),
        // Microseconds per 100 ms period.
        #[expect(clippy::cast_precision_loss, reason = "a quota is far below 2^52")]
        (None, Some(quota)) => Some(quota as f64 / 100_000.0),
        (None, None) => None,
    };
    if let Some(cpus) = settings.cpus
        && !(cpus.is_finite() && cpus > 0.0 && cpus <= 4096.0)
    {
        return Err(format!(
            "[run.sandbox] cpus = {cpus}: give a number of CPUs above 0 (1.5 is one and a half)"
        ));
    }
    if let Some(memory) = config.memory.as_deref().or(fabro.memory_limit.as_deref()) {
        let bytes = size(memory).ok_or_else(|| {
            format!(
                "[run.sandbox] memory = {memory:?}: give bytes or a size such as \"512MiB\" or \"4GB\""
            )
        })?;
        // Below that no container starts (Docker refuses under 6 MiB).
        if bytes < 6 << 20 {
            return Err(format!(
                "[run.sandbox] memory = {memory:?} is below the 6 MiB a container needs"
            ));
        }
        settings.memory_bytes = Some(bytes);
    }
    if let Some(pids) = config.pids {
        if !(8..=4_194_304).contains(&pids) {
            return Err(format!(
                "[run.sandbox] pids = {pids}: give at least 8 (commands need a shell and its children)"
            ));
        }
        settings.pids = Some(pids);
    }
    settings.network = match config.network.as_deref().or(fabro.network_mode.as_deref()) {
        None | Some("none") => Network::None,
        Some("bridge") => Network::Bridge,
        Some(other) => {
            return Err(format!(
                "[run.sandbox] network = {other:?}: use \"none\" (no network, the default) or \"bridge\""
            ));
        }
    };
    if config.mounts.len() > MAX_MOUNTS {
        return Err(format!(
            "[run.sandbox] mounts has {} entries; at most {MAX_MOUNTS}",
            config.mounts.len()
        ));
    }
    for entry in &config.mounts {
        settings.mounts.push(mount(entry)?);
    }
    Ok(Some(settings))
}

fn text(key: &str, value: &str) -> Result<(), String> {
    if value.trim().is_empty() {
        return Err(format!("[run.sandbox] {key} is empty"));
    }
    if value.len() > MAX_TEXT || value.chars().any(char::is_control) {
        return Err(format!(
            "[run.sandbox] {key} is longer than {MAX_TEXT} bytes or has control characters"
        ));
    }
    Ok(())
}

/// `/HOST:/CONTAINER`, read-only, or with `:ro` / `:rw`.
fn mount(entry: &str) -> Result<Mount, String> {
    text("mounts", entry)?;
    let bad = || {
        format!(
            "[run.sandbox] mounts: {entry:?} is not \"/HOST/PATH:/CONTAINER/PATH\" (read-only), \
             or the same with \":rw\" to let commands write"
        )
    };
    let parts: Vec<&str> = entry.split(':').collect();
    let (host, container, read_only) = match parts.as_slice() {
        [host, container] => (*host, *container, true),
        [host, container, "ro"] => (*host, *container, true),
        [host, container, "rw"] => (*host, *container, false),
        _ => return Err(bad()),
    };
    if !host.starts_with('/') || !container.starts_with('/') {
        return Err(bad());
    }
    // The work dir and the run's stage files have these places.
    if [super::WORK_DIR, super::RUN_FILES_DIR]
        .iter()
        .any(|taken| container == *taken || container.starts_with(&format!("{taken}/")))
        || container == "/"
    {
        return Err(format!(
            "[run.sandbox] mounts: {entry:?} mounts over {container}, which Weft uses \
             ({} is the work dir, {} the run's stage files)",
            super::WORK_DIR,
            super::RUN_FILES_DIR
        ));
    }
    Ok(Mount {
        host: PathBuf::from(host),
        container: container.to_string(),
        read_only,
    })
}

/// Bytes from `4096`, `512MiB`, `4GB`, `1.5g`: units are powers of 1024
/// whatever their spelling, as Docker reads them.
fn size(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return None,
    };
    #[expect(clippy::cast_precision_loss, reason = "scales are powers of two")]
    let bytes = number * scale as f64;
    // 2^63 as a float: above it the cast would saturate.
    if !bytes.is_finite() || !(1.0..9.2e18).contains(&bytes) {
        return None;
    }
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "checked to be in range above"
    )]
    Some(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::sandbox::FabroDocker;

    fn docker() -> SandboxConfig {
        SandboxConfig {
            provider: Some(Provider::Docker),
            ..SandboxConfig::default()
        }
    }

    #[test]
    fn the_local_provider_has_no_container_settings() {
        assert_eq!(settings(&SandboxConfig::default()), Ok(None));
    }

    #[test]
    fn a_docker_sandbox_defaults_to_fabros_image_and_no_network() {
        let s = settings(&docker()).ok().flatten();
        let s = s.unwrap_or_else(|| Settings::new("none"));
        assert_eq!(s.image, DEFAULT_IMAGE);
        assert_eq!(s.network, Network::None);
        assert_eq!(s.memory_bytes, None);
    }

    #[test]
    fn sizes_read_as_powers_of_1024() {
        assert_eq!(size("4096"), Some(4096));
        assert_eq!(size("512MiB"), Some(512 << 20));
        assert_eq!(size("4GB"), Some(4 << 30));
        assert_eq!(size("1.5g"), Some(3 << 29));
        assert_eq!(size("lots"), None);
        assert_eq!(size("-1m"), None);
        assert_eq!(size("99999999999T"), None);
    }

    #[test]
    fn fabros_docker_table_is_read_when_weft_keys_are_absent() {
        let mut config = docker();
        config.docker = Some(FabroDocker {
            image: Some("img:1".into()),
            network_mode: Some("bridge".into()),
            memory_limit: Some("1GB".into()),
            cpu_quota: Some(150_000),
        });
        let s = settings(&config).ok().flatten();
        let s = s.unwrap_or_else(|| Settings::new("none"));
        assert_eq!(s.image, "img:1");
        assert_eq!(s.network, Network::Bridge);
        assert_eq!(s.memory_bytes, Some(1 << 30));
        assert_eq!(s.cpus, Some(1.5));
        config.image = Some("img:2".into());
        let s = settings(&config).ok().flatten();
        assert_eq!(s.map(|s| s.image).as_deref(), Some("img:2"));
    }

    #[test]
    fn bad_values_are_refused_naming_the_key() {
        for (change, key) in [
            (
                (|c: &mut SandboxConfig| c.memory = Some("lots".into())) as fn(&mut SandboxConfig),
                "memory",
            ),
            (|c| c.cpus = Some(0.0), "cpus"),
            (|c| c.pids = Some(1), "pids"),
            (|c| c.network = Some("host".into()), "network"),
            (|c| c.image = Some(" ".into()), "image"),
            (|c| c.mounts = vec!["relative:/x".into()], "mounts"),
            (|c| c.mounts = vec!["/data:/work/data".into()], "mounts"),
            (|c| c.mounts = vec!["/a:/b:rx".into()], "mounts"),
        ] {
            let mut config = docker();
            change(&mut config);
            let error = settings(&config).err().unwrap_or_default();
            assert!(error.contains(key), "{key}: {error}");
        }
    }

    #[test]
    fn mounts_are_read_only_unless_they_say_rw() {
        let mut config = docker();
        config.mounts = vec!["/srv/data:/data".into(), "/srv/out:/out:rw".into()];
        let s = settings(&config).ok().flatten();
        let mounts = s.map(|s| s.mounts).unwrap_or_default();
        assert_eq!(
            mounts
                .iter()
                .map(|m| (m.container.as_str(), m.read_only))
                .collect::<Vec<_>>(),
            [("/data", true), ("/out", false)]
        );
    }
}
