//! Migrate's dependency phase (issue 34): the invariant check of job dependencies.
//! Every running flow of the namespace is walked, a bounded number of steps a call
//! (lua/migrate_graph.lua), and each node judged from the records: a WAITING node
//! whose dependencies have all finished ("stranded": the call that finished its last
//! dependency should have readied it), a finished node whose dependents were never
//! told, and a waiting node whose count of unfinished dependencies is wrong. Each
//! counts in `repaired`; a real run repairs it (the stranded node is readied, or
//! ended by its rule; the untold node settled; the count set), a dry run only counts.
//!
//! A real run first drains the namespace's queued graph work (what scripts left for
//! later calls), so counts that are merely under way are not taken for wrong ones; a
//! flow that still has queued work when a call reaches it is passed over.

use tokio::time::Instant;

use super::{Migrator, Run};
use crate::{
    error::Error,
    store::ops::{
        drain_graph::DrainGraph,
        migrate_graph::{GraphCursor, MigrateGraph},
    },
};

/// Most drain calls before the check (each takes at most 64 graph steps); what is
/// left is the pruner's, and the flows it concerns are passed over.
const DRAIN_CALLS: usize = 1000;
/// Most steps (a node, or a dependency of a waiting node) one check call takes.
const GRAPH_STEP: u32 = 500;

/// What the dependency check found over a namespace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct GraphFindings {
    pub(crate) stranded: u64,
    pub(crate) untold: u64,
    pub(crate) miscounted: u64,
}

impl Migrator {
    pub(super) async fn check_graph(&self, run: &mut Run<'_, '_>) -> Result<(), Error> {
        if !run.options.dry_run {
            self.drain_graph(run).await?;
        }
        let mut cursor = GraphCursor::default();
        let mut found = GraphFindings::default();
        loop {
            run.lease.keep().await?;
            let started = Instant::now();
            let op = MigrateGraph {
                token: &run.lease.token,
                dry_run: run.options.dry_run,
                cursor: &cursor,
                batch: run.options.batch.min(GRAPH_STEP),
            };
            let reply = self
                .store
                .run(run.namespace, &op)
                .await?
                .ok_or_else(|| run.lease.lost())?;
            run.progress.timed(started);
            found.stranded += reply.stranded;
            found.untold += reply.untold;
            found.miscounted += reply.miscounted;
            run.progress.repaired += reply.stranded + reply.untold + reply.miscounted;
            if reply.register {
                // Work a repair queued (or a flow it finished): taken now, so the
                // next call judges the flow with its counts settled.
                self.store
                    .prune_soon(run.namespace, self.clock.now_ms())
                    .await?;
                self.drain_graph(run).await?;
            }
            if let Some(problem) = reply.problem {
                run.progress.problems.push((
                    "flows".to_owned(),
                    format!("dependencies not checked: {problem}"),
                ));
            }
            match reply.next {
                Some(next) => cursor = next,
                None => break,
            }
        }
        if found != GraphFindings::default() {
            tracing::warn!(
                namespace = %run.namespace,
                dry_run = run.options.dry_run,
                stranded = found.stranded,
                untold = found.untold,
                miscounted = found.miscounted,
                "migrate: job dependencies found out of step with the records"
            );
        }
        Ok(())
    }

    /// Takes the namespace's queued graph work, at most [`DRAIN_CALLS`] calls.
    async fn drain_graph(&self, run: &mut Run<'_, '_>) -> Result<(), Error> {
        for _ in 0..DRAIN_CALLS {
            run.lease.keep().await?;
            let drained = self.store.run(run.namespace, &DrainGraph).await?;
            if drained.register || drained.more {
                self.store
                    .prune_soon(run.namespace, self.clock.now_ms())
                    .await?;
            }
            if !drained.more {
                break;
            }
        }
        Ok(())
    }
}
