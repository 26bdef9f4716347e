//! RetryJobs, CancelJobs and DeleteJobs (issue 33): an operator's action on many jobs
//! of one queue, each taken in `lua/bulk_jobs.lua` exactly as the single-job script
//! takes it. Ids go to the script [`IDS_PER_CALL`] at a time; a query runs one
//! bounded batch per call and hands back where to continue.

use super::Jobs;
use crate::{
    domain::{BulkAction, JobFilter, JobState, Namespace},
    effects::{Effects, Ready},
    error::Error,
    namespaces::Work,
    store::ops::{
        bulk::{BulkBatch, BulkJobs, Selection, IDS_PER_CALL},
        cancel_jobs::CancelJobs,
        delete_jobs::DeleteJobs,
        list_jobs::FILTER_BUDGET,
        retry_jobs::RetryJobs,
    },
    store::StoreError,
};

/// Which jobs of the queue a bulk action takes.
pub(crate) enum BulkSelection<'a> {
    /// These (validated: at most 1000).
    Ids(&'a [String]),
    /// One batch of a query's jobs, past job number `after`.
    Query {
        state: Option<JobState>,
        filter: &'a JobFilter,
        after: Option<i64>,
    },
}

/// What a bulk call did.
#[derive(Debug, Default)]
pub(crate) struct BulkOutcome {
    pub(crate) applied: u64,
    /// Every skipped job and why ("missing", or the state the action refused).
    pub(crate) skips: Vec<(String, String)>,
    pub(crate) scanned: u64,
    /// A query's job number to continue after.
    pub(crate) next_after: Option<i64>,
}

impl Jobs {
    /// Runs `action` on the selected jobs of `queue` (one bounded batch of a query).
    pub(crate) async fn bulk(
        &self,
        namespace: &Namespace,
        action: BulkAction,
        queue: &str,
        selection: BulkSelection<'_>,
    ) -> Result<BulkOutcome, Error> {
        let mut outcome = BulkOutcome::default();
        let mut register = false;
        let batches: Vec<Selection<'_>> = match selection {
            BulkSelection::Ids(ids) => ids.chunks(IDS_PER_CALL).map(Selection::Ids).collect(),
            BulkSelection::Query {
                state,
                filter,
                after,
            } => vec![Selection::Query {
                after,
                state,
                filter,
                budget: FILTER_BUDGET,
            }],
        };
        for selection in batches {
            let batch = self
                .batch(namespace, action, BulkJobs { queue, selection })
                .await;
            // What earlier batches did stands: their effects are applied either way.
            let batch = match batch {
                Ok(batch) => batch,
                Err(e) => {
                    self.bulk_effects(namespace, action, &outcome, register)
                        .await;
                    return Err(e.into());
                }
            };
            outcome.applied += batch.applied;
            outcome.scanned += batch.scanned;
            outcome.skips.extend(batch.skips);
            outcome.next_after = batch.next_after;
            register |= batch.register;
        }
        self.bulk_effects(namespace, action, &outcome, register)
            .await;
        Ok(outcome)
    }

    /// One script call: the action's own script.
    async fn batch(
        &self,
        namespace: &Namespace,
        action: BulkAction,
        op: BulkJobs<'_>,
    ) -> Result<BulkBatch, StoreError> {
        let store = &self.cx.store;
        match action {
            BulkAction::Retry => store.run(namespace, &RetryJobs(op)).await,
            BulkAction::Cancel => store.run(namespace, &CancelJobs(op)).await,
            BulkAction::Delete => store.run(namespace, &DeleteJobs(op)).await,
        }
    }

    /// The single-job RPCs' effects: a finished job may register the namespace for
    /// pruning; a retried job (or a flow's dependent a cancel readied) is work.
    async fn bulk_effects(
        &self,
        namespace: &Namespace,
        action: BulkAction,
        outcome: &BulkOutcome,
        register: bool,
    ) {
        let mut effects = Effects::finished(register);
        if outcome.applied > 0 && action != BulkAction::Delete {
            effects = effects.and_ready(Work::Jobs, Ready::Now);
        }
        self.cx.apply(&self.entry(namespace), effects).await;
    }
}
