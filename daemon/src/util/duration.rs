//! How durations are written for people (and for models reading a run's
//! history). Every place that prints one goes through here, so the same
//! time never reads `2m05s` in one place and `125s` in another.

use std::time::Duration;

/// How long something took, as the CLI shows it (docs/cli.md): tenths of a
/// second below a minute (`0.0s`, `0.4s`, `12.3s`, `30.0s`), then whole
/// minutes and zero-padded seconds (`1m00s`, `2m05s`, `125m00s`), so a
/// column of them stays aligned.
#[must_use]
pub fn elapsed(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 60.0 {
        format!("{secs:.1}s")
    } else {
        let whole = d.as_secs();
        format!("{}m{:02}s", whole / 60, whole % 60)
    }
}

/// How long a stage took, as a run's preamble tells the next model: short
/// words rounded to the unit shown — `340ms`, `1.2s`, `59.9s`, `2m 5s`,
/// `1h 3m`. Prose rather than a table column, so no padding and no
/// trailing `.0`.
#[must_use]
pub(crate) fn elapsed_in_prose(d: Duration) -> String {
    let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    if ms < 1_000 {
        return format!("{ms}ms");
    }
    let tenths = ms.saturating_add(50) / 100;
    if tenths < 600 {
        return match tenths % 10 {
            0 => format!("{}s", tenths / 10),
            digit => format!("{}.{digit}s", tenths / 10),
        };
    }
    let s = ms.saturating_add(500) / 1_000;
    if s < 3_600 {
        format!("{}m {}s", s / 60, s % 60)
    } else {
        format!("{}h {}m", s / 3_600, s % 3_600 / 60)
    }
}

/// A configured duration (a timeout, a wait, a retry delay) the way a
/// workflow writes one: `250ms`, `30s`, `10m`, `1h 30m`. Exact, unlike
/// [`elapsed`]: a limit is shown as it was set, not rounded.
#[must_use]
pub fn setting(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    #[test]
    fn elapsed_shows_tenths_below_a_minute() {
        assert_eq!(elapsed(ms(0)), "0.0s");
        assert_eq!(elapsed(ms(400)), "0.4s");
        assert_eq!(elapsed(ms(1_500)), "1.5s");
        assert_eq!(elapsed(ms(30_000)), "30.0s");
        assert_eq!(elapsed(ms(59_900)), "59.9s");
    }

    #[test]
    fn elapsed_pads_seconds_after_a_minute() {
        assert_eq!(elapsed(ms(60_000)), "1m00s");
        assert_eq!(elapsed(ms(125_000)), "2m05s");
        assert_eq!(elapsed(ms(7_500_000)), "125m00s");
    }

    #[test]
    fn elapsed_in_prose_rounds_to_the_unit_shown() {
        assert_eq!(elapsed_in_prose(ms(340)), "340ms");
        assert_eq!(elapsed_in_prose(ms(1_234)), "1.2s");
        assert_eq!(elapsed_in_prose(ms(12_000)), "12s");
        assert_eq!(elapsed_in_prose(ms(59_960)), "1m 0s");
        assert_eq!(elapsed_in_prose(ms(125_000)), "2m 5s");
        assert_eq!(elapsed_in_prose(ms(3_780_000)), "1h 3m");
    }

    #[test]
    fn settings_are_written_exactly() {
        assert_eq!(setting(ms(250)), "250ms");
        assert_eq!(setting(Duration::from_secs(600)), "10m");
        assert_eq!(setting(Duration::from_secs(5_400)), "1h 30m");
        assert_eq!(setting(ms(1_500)), "1s 500ms");
    }
}
