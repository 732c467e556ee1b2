//! The agent stages running now, so that a client can steer one
//! (human-tools/steering.mdx; `run.steer`, `weft steer`). An agent stage
//! registers its session's [`Steering`] handle for as long as the session
//! runs; a message given here is queued on it and reaches the model before
//! its next turn (the session records `agent.steered` when it does).
//!
//! One registry is shared by every run of a process: the daemon's, so its
//! socket reaches every agent it runs; a `--no-daemon` run has its own,
//! which no other process can reach.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::agent::Steering;
use crate::util::lock::lock;

/// The longest steering message accepted, in bytes: it goes into the
/// model's context as it is.
pub const MAX_STEERING_BYTES: usize = 16 * 1024;

/// Steering messages one agent stage accepts in all: its queue holds no
/// more, however fast a client sends.
pub const MAX_STEERING_MESSAGES: u32 = 100;

/// Agent stages that may be steered, shared (cheap to clone).
#[derive(Clone, Default)]
pub struct RunningAgents {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    agents: Mutex<Vec<Running>>,
    next: AtomicU64,
}

struct Running {
    token: u64,
    run_id: String,
    node_id: String,
    visit: u32,
    steering: Steering,
    /// Messages queued so far.
    sent: u32,
}

impl std::fmt::Debug for RunningAgents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningAgents")
            .field("running", &lock(&self.inner.agents).len())
            .finish()
    }
}

/// An agent stage's place in the registry; dropping it (the session ended,
/// however it ended) takes the stage out.
#[must_use = "the agent leaves the registry when this is dropped"]
pub struct Registration {
    agents: RunningAgents,
    token: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        lock(&self.agents.inner.agents).retain(|a| a.token != self.token);
    }
}

/// Where a steering message was queued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Steered {
    pub run_id: String,
    pub node_id: String,
    pub visit: u32,
}

/// Why a message could not be queued.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SteerError {
    #[error("run {run_id} has no agent stage running now")]
    NoneRunning { run_id: String },
    #[error("no agent stage `{node}` is running in run {run_id}; running: {}", running.join(", "))]
    NotRunning {
        run_id: String,
        node: String,
        running: Vec<String>,
    },
    #[error("run {run_id} has {} agent stages running ({}); name the one to steer", running.len(), running.join(", "))]
    Ambiguous {
        run_id: String,
        running: Vec<String>,
    },
    #[error("the steering message is empty")]
    Empty,
    #[error("the steering message has {0} bytes; the most is {MAX_STEERING_BYTES}")]
    TooLong(usize),
    #[error(
        "agent stage `{node}` has been sent {MAX_STEERING_MESSAGES} steering messages, the most it takes"
    )]
    TooMany { node: String },
}

impl RunningAgents {
    /// Registers the running agent stage `node_id` (visit `visit`) of
    /// `run_id` until the returned [`Registration`] is dropped.
    pub fn register(
        &self,
        run_id: &str,
        node_id: &str,
        visit: u32,
        steering: Steering,
    ) -> Registration {
        let token = self.inner.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.inner.agents).push(Running {
            token,
            run_id: run_id.to_string(),
            node_id: node_id.to_string(),
            visit,
            steering,
            sent: 0,
        });
        Registration {
            agents: self.clone(),
            token,
        }
    }

    /// The nodes of `run_id` running an agent now, in the order they started.
    #[must_use]
    pub fn running(&self, run_id: &str) -> Vec<String> {
        lock(&self.inner.agents)
            .iter()
            .filter(|a| a.run_id == run_id)
            .map(|a| a.node_id.clone())
            .collect()
    }

    /// Queues `text` for the agent stage `node` of `run_id`, or for its only
    /// running agent when `node` is `None`.
    ///
    /// # Errors
    /// When the text is empty or too long, when no agent of the run is
    /// running (or not the one named), or when several are and none was
    /// named.
    pub fn steer(
        &self,
        run_id: &str,
        node: Option<&str>,
        text: &str,
    ) -> Result<Steered, SteerError> {
        if text.trim().is_empty() {
            return Err(SteerError::Empty);
        }
        if text.len() > MAX_STEERING_BYTES {
            return Err(SteerError::TooLong(text.len()));
        }
        let mut agents = lock(&self.inner.agents);
        let of_run: Vec<usize> = (0..agents.len())
            .filter(|&i| agents[i].run_id == run_id)
            .collect();
        let names = || {
            of_run
                .iter()
                .map(|&i| agents[i].node_id.clone())
                .collect::<Vec<_>>()
        };
        let found = match node {
            Some(node) => of_run.iter().copied().find(|&i| agents[i].node_id == node),
            None if of_run.len() == 1 => Some(of_run[0]),
            None if of_run.len() > 1 => {
                return Err(SteerError::Ambiguous {
                    run_id: run_id.to_string(),
                    running: names(),
                });
            }
            None => None,
        };
        let Some(at) = found else {
            return Err(match node {
                Some(node) if !of_run.is_empty() => SteerError::NotRunning {
                    run_id: run_id.to_string(),
                    node: node.to_string(),
                    running: names(),
                },
                _ => SteerError::NoneRunning {
                    run_id: run_id.to_string(),
                },
            });
        };
        let target = &mut agents[at];
        if target.sent >= MAX_STEERING_MESSAGES {
            return Err(SteerError::TooMany {
                node: target.node_id.clone(),
            });
        }
        target.sent += 1;
        target.steering.send(text);
        Ok(Steered {
            run_id: target.run_id.clone(),
            node_id: target.node_id.clone(),
            visit: target.visit,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_only_running_agent_of_a_run_is_steered_without_naming_it() {
        let agents = RunningAgents::default();
        let steering = Steering::default();
        let _a = agents.register("r1", "implement", 2, steering.clone());
        let _other = agents.register("r2", "review", 1, Steering::default());
        let steered = agents.steer("r1", None, "use the new API").expect("queued");
        assert_eq!((steered.node_id.as_str(), steered.visit), ("implement", 2));
        assert_eq!(steering.drain(), vec!["use the new API".to_string()]);
    }

    #[test]
    fn several_running_agents_must_be_named_and_the_error_lists_them() {
        let agents = RunningAgents::default();
        let (a, b) = (Steering::default(), Steering::default());
        let _a = agents.register("r", "left", 1, a.clone());
        let _b = agents.register("r", "right", 1, b.clone());
        match agents.steer("r", None, "x") {
            Err(SteerError::Ambiguous { running, .. }) => {
                assert_eq!(running, vec!["left".to_string(), "right".to_string()]);
            }
            other => panic!("expected ambiguous, got {other:?}"),
        }
        agents.steer("r", Some("right"), "x").expect("named");
        assert!(a.drain().is_empty(), "only the named agent gets it");
        assert_eq!(b.drain().len(), 1);
        assert!(matches!(
            agents.steer("r", Some("middle"), "x"),
            Err(SteerError::NotRunning { .. })
        ));
    }

    #[test]
    fn an_agent_leaves_the_registry_when_its_registration_drops() {
        let agents = RunningAgents::default();
        let registration = agents.register("r", "plan", 1, Steering::default());
        assert_eq!(agents.running("r"), vec!["plan".to_string()]);
        drop(registration);
        assert!(agents.running("r").is_empty());
        assert!(matches!(
            agents.steer("r", None, "x"),
            Err(SteerError::NoneRunning { .. })
        ));
    }

    #[test]
    fn empty_and_oversized_messages_are_refused() {
        let agents = RunningAgents::default();
        let _a = agents.register("r", "plan", 1, Steering::default());
        assert_eq!(agents.steer("r", None, "  \n"), Err(SteerError::Empty));
        let long = "x".repeat(MAX_STEERING_BYTES + 1);
        assert!(matches!(
            agents.steer("r", None, &long),
            Err(SteerError::TooLong(_))
        ));
    }

    #[test]
    fn an_agent_takes_a_bounded_number_of_messages() {
        let agents = RunningAgents::default();
        let _a = agents.register("r", "plan", 1, Steering::default());
        for _ in 0..MAX_STEERING_MESSAGES {
            agents.steer("r", None, "x").expect("within the bound");
        }
        assert!(matches!(
            agents.steer("r", None, "x"),
            Err(SteerError::TooMany { .. })
        ));
    }
}
