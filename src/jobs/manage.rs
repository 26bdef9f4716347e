//! An operator's hand on one job (issue 36): DeleteJob removes a job no worker holds,
//! ReleaseJob takes an active one back from its worker without its lease token.

use super::{state_result, Jobs};
use crate::{
    domain::{JobRecord, JobState, Namespace},
    effects::{Effects, Ready},
    error::{Error, JobAction},
    namespaces::Work,
    store::ops::{delete_job::DeleteJob, release_job::ReleaseJob},
};

/// What ReleaseJob records when the caller gives no reason.
pub(crate) const DEFAULT_RELEASE_REASON: &str = "released by an operator";

impl Jobs {
    /// Deletes job `id` (any state but active) from every index; returns the job as it
    /// was just before.
    pub(crate) async fn delete(&self, namespace: &Namespace, id: &str) -> Result<JobRecord, Error> {
        let check = self.cx.store.run(namespace, &DeleteJob { id }).await?;
        state_result(id, check, JobAction::Delete)
    }

    /// Ends active job `id`'s lease now: pending again at the head of its queue (or
    /// dead, when `count_attempt` spent its last attempt; cancelled when a cancel was
    /// requested), `reason` in its error history. Returns the job now.
    pub(crate) async fn release_one(
        &self,
        namespace: &Namespace,
        id: &str,
        count_attempt: bool,
        reason: &str,
    ) -> Result<JobRecord, Error> {
        let op = ReleaseJob {
            id,
            count_attempt,
            reason,
        };
        let released = self.cx.store.run(namespace, &op).await?;
        let record = state_result(id, released.check, JobAction::Release)?;
        let mut effects = Effects::finished(released.register);
        // A node of a flow that ended may have readied its dependents (issue 34).
        if record.state == JobState::Pending || record.graph.is_some() {
            effects = effects.and_ready(Work::Jobs, Ready::Now);
        }
        self.cx.apply(&self.entry(namespace), effects).await;
        Ok(record)
    }
}
