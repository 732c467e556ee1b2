//! What a branch runner knows about its branch of a parallel stage, and how
//! the branch's commits record its progress in the run's checkpoint. The
//! loop (which commits a branch's stages, `stage.rs`) and the fan-out (which
//! starts the branches, `parallel.rs`) both use it, so it imports neither.

use std::sync::{Arc, Mutex};

use crate::engine::checkpoint::{Checkpoint, ParallelProgress};
use crate::engine::context::Context;

/// What a branch runner knows about its branch.
#[derive(Debug, Clone)]
pub(crate) struct Branch {
    pub id: String,
    /// Where the branch stops; `None` when the branches never meet.
    pub join: Option<String>,
    pub progress: Arc<Mutex<ParallelProgress>>,
    /// The run's checkpoint while the parallel stage is in flight: it names
    /// the parallel node as next, so a resume re-enters it.
    pub template: Checkpoint,
}

impl Branch {
    /// Notes that this branch committed a stage of `node`, leaving its
    /// context as `context`, and goes on to `next`; returns the run
    /// checkpoint to commit with the stage.
    pub(super) fn record(
        &self,
        progress: &mut ParallelProgress,
        context: &Context,
        node: &str,
        next: Option<&str>,
    ) -> Checkpoint {
        if let Some(mine) = progress.branches.iter_mut().find(|b| b.id == self.id) {
            mine.next = next.map(str::to_string);
            mine.context = context.values().clone();
            mine.nodes.push(node.to_string());
        }
        let mut cp = self.template.clone();
        cp.timestamp = crate::store::timestamp();
        cp.current_node = Some(node.to_string());
        let branch_stages: usize = progress.branches.iter().map(|b| b.nodes.len()).sum();
        cp.completed = self
            .template
            .completed
            .saturating_add(u32::try_from(branch_stages).unwrap_or(u32::MAX));
        cp.parallel = Some(progress.clone());
        cp
    }
}
