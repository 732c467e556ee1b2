//! Tool-loop detection (execution/failures.mdx, "Tool call loop
//! detection"): a model that keeps making the same calls is told so once,
//! and stopped if it goes on.
//!
//! Each turn with tool calls is reduced to a signature (its calls' tool
//! names and canonical arguments). Over the last [`WINDOW`] turns, the
//! signatures repeating with a period of 1 (A A A …), 2 (A B A B …) or 3
//! (A B C A B C …) all the way through is a loop.

use std::collections::VecDeque;
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::Value;

/// Turns looked at.
pub(crate) const WINDOW: usize = 10;
/// Pattern lengths detected.
const PERIODS: [usize; 3] = [1, 2, 3];

/// What the model is told when it loops.
pub(crate) const WARNING: &str = "[Loop detected] Your last tool calls repeat the same \
pattern over and over, and repeating them will not give a different result. Stop, think \
about why the approach is not working, and try something different. If the task cannot be \
done, say so and explain why.";

/// One turn's calls, reduced.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Signature {
    tools: Vec<String>,
    hash: u64,
}

/// What recording a turn found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// No loop.
    Fine,
    /// A loop of `period` turns: warn the model.
    Warn { period: u32, tools: Vec<String> },
    /// The loop went on for a whole window after the warning.
    Fail { period: u32, tools: Vec<String> },
}

#[derive(Debug, Default)]
pub(crate) struct LoopDetector {
    window: VecDeque<Signature>,
    /// The model was warned and has not broken the pattern since.
    warned: bool,
}

impl LoopDetector {
    /// Records one turn's calls (`(tool, arguments)`, in the model's order).
    pub(crate) fn record<'a>(
        &mut self,
        calls: impl IntoIterator<Item = (&'a str, &'a Value)>,
    ) -> Verdict {
        let mut tools = Vec::new();
        let mut hasher = DefaultHasher::new();
        for (tool, arguments) in calls {
            tool.hash(&mut hasher);
            hash_canonical(arguments, &mut hasher);
            tools.push(tool.to_string());
        }
        if tools.is_empty() {
            return Verdict::Fine;
        }
        if self.window.len() == WINDOW {
            self.window.pop_front();
        }
        self.window.push_back(Signature {
            tools,
            hash: hasher.finish(),
        });
        if self.window.len() < WINDOW {
            return Verdict::Fine;
        }
        let Some(period) = PERIODS.into_iter().find(|p| self.repeats_with(*p)) else {
            // A full window without a loop: whatever the warning was
            // about has stopped.
            self.warned = false;
            return Verdict::Fine;
        };
        let tools: Vec<String> = self
            .window
            .iter()
            .take(period)
            .flat_map(|s| s.tools.iter().cloned())
            .collect();
        let period = u32::try_from(period).unwrap_or(u32::MAX);
        // Start a new window either way: after a warning the loop must go
        // on for a whole window again to count.
        self.window.clear();
        if self.warned {
            Verdict::Fail { period, tools }
        } else {
            self.warned = true;
            Verdict::Warn { period, tools }
        }
    }

    fn repeats_with(&self, period: usize) -> bool {
        (period..self.window.len()).all(|i| self.window[i] == self.window[i - period])
    }
}

/// Hashes a JSON value with object keys in sorted order, so the same
/// arguments written in another key order are the same call.
fn hash_canonical(value: &Value, hasher: &mut DefaultHasher) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            "{".hash(hasher);
            for key in keys {
                key.hash(hasher);
                if let Some(v) = map.get(key) {
                    hash_canonical(v, hasher);
                }
            }
            "}".hash(hasher);
        }
        Value::Array(items) => {
            "[".hash(hasher);
            for item in items {
                hash_canonical(item, hasher);
            }
            "]".hash(hasher);
        }
        other => other.to_string().hash(hasher),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn turn(detector: &mut LoopDetector, tool: &str, arguments: &Value) -> Verdict {
        detector.record([(tool, arguments)])
    }

    #[test]
    fn the_same_call_ten_times_warns_then_ten_more_fail() {
        let mut d = LoopDetector::default();
        let args = json!({"file_path": "a.rs"});
        for _ in 0..WINDOW - 1 {
            assert_eq!(turn(&mut d, "read_file", &args), Verdict::Fine);
        }
        assert_eq!(
            turn(&mut d, "read_file", &args),
            Verdict::Warn {
                period: 1,
                tools: vec!["read_file".into()]
            }
        );
        for _ in 0..WINDOW - 1 {
            assert_eq!(
                turn(&mut d, "read_file", &args),
                Verdict::Fine,
                "a whole new window first"
            );
        }
        assert!(matches!(
            turn(&mut d, "read_file", &args),
            Verdict::Fail { period: 1, .. }
        ));
    }

    #[test]
    fn cycles_of_two_and_three_are_loops() {
        for period in [2usize, 3] {
            let mut d = LoopDetector::default();
            let mut last = Verdict::Fine;
            for i in 0..WINDOW {
                let args = json!({"n": i % period});
                last = turn(&mut d, "grep", &args);
            }
            assert!(
                matches!(&last, Verdict::Warn { period: p, tools } if *p as usize == period && tools.len() == period),
                "period {period}: {last:?}"
            );
        }
    }

    #[test]
    fn key_order_does_not_make_a_different_call() {
        let mut d = LoopDetector::default();
        let mut last = Verdict::Fine;
        for i in 0..WINDOW {
            let args: Value = if i % 2 == 0 {
                serde_json::from_str(r#"{"a": 1, "b": {"x": 1, "y": 2}}"#).expect("json")
            } else {
                serde_json::from_str(r#"{"b": {"y": 2, "x": 1}, "a": 1}"#).expect("json")
            };
            last = turn(&mut d, "grep", &args);
        }
        assert!(matches!(last, Verdict::Warn { period: 1, .. }), "{last:?}");
    }

    #[test]
    fn progress_is_not_a_loop_and_breaking_out_clears_the_warning() {
        let mut d = LoopDetector::default();
        for i in 0..3 * WINDOW {
            assert_eq!(
                turn(&mut d, "read_file", &json!({"offset": i})),
                Verdict::Fine
            );
        }
        // A period of 4 is not detected.
        for i in 0..WINDOW {
            assert_eq!(
                turn(&mut d, "read_file", &json!({"n": i % 4})),
                Verdict::Fine
            );
        }
        // Warned, then a full window of different calls, then the loop again: a
        // second warning, not a failure.
        let same = json!({});
        for _ in 0..WINDOW {
            turn(&mut d, "glob", &same);
        }
        for i in 0..WINDOW {
            assert_eq!(
                turn(&mut d, "read_file", &json!({"offset": i})),
                Verdict::Fine
            );
        }
        let mut last = Verdict::Fine;
        for _ in 0..WINDOW {
            last = turn(&mut d, "glob", &same);
        }
        assert!(matches!(last, Verdict::Warn { .. }), "{last:?}");
    }

    #[test]
    fn a_turn_is_all_its_calls() {
        let mut d = LoopDetector::default();
        let (a, b) = (json!({"p": "a"}), json!({"p": "b"}));
        let mut last = Verdict::Fine;
        for i in 0..WINDOW {
            // The same pair each turn, but the second call changes on the last turn.
            let second = if i == WINDOW - 1 { &a } else { &b };
            last = d.record([("read_file", &a), ("read_file", second)]);
        }
        assert_eq!(last, Verdict::Fine);
    }
}
