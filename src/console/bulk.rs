//! Bulk actions on everything a filter matches: a run retries, cancels or deletes
//! the matching jobs of a queue server-side, one bounded RetryJobs / CancelJobs /
//! DeleteJobs call (one batch) after another, as the principal who started it, until
//! the listing ends or someone presses stop. Its progress is watched by its page
//! (live). At most [`MAX_RUNNING`] runs at once, [`MAX_PER_PRINCIPAL`] per principal;
//! the last [`KEPT`] finished runs stay visible.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::{grpc::rpc, Grpc};
use crate::{auth::Caller, proto};

const MAX_RUNNING: usize = 16;
const MAX_PER_PRINCIPAL: usize = 2;
const KEPT: usize = 100;
/// Skips remembered per run (job and reason), to show.
const SKIPS_SHOWN: usize = 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    Retry,
    Cancel,
    Delete,
}

impl Action {
    pub(crate) fn parse(text: &str) -> Option<Action> {
        match text {
            "retry" => Some(Action::Retry),
            "cancel" => Some(Action::Cancel),
            "delete" => Some(Action::Delete),
            _ => None,
        }
    }

    pub(crate) fn verb(self) -> &'static str {
        match self {
            Action::Retry => "retry",
            Action::Cancel => "cancel",
            Action::Delete => "delete",
        }
    }

    /// The RPC of this action (the RPC table says who may call it).
    pub(crate) fn method(self) -> &'static str {
        match self {
            Action::Retry => "RetryJobs",
            Action::Cancel => "CancelJobs",
            Action::Delete => "DeleteJobs",
        }
    }

    /// One bounded call of this action.
    pub(crate) async fn call(
        self,
        grpc: &Grpc,
        caller: &Caller,
        message: proto::BulkJobsRequest,
    ) -> Result<proto::BulkJobsResponse, tonic::Status> {
        let method = match self {
            Action::Retry => rpc::RETRY_JOBS,
            Action::Cancel => rpc::CANCEL_JOBS,
            Action::Delete => rpc::DELETE_JOBS,
        };
        grpc.call(caller, method, message).await
    }
}

/// Where a run is.
#[derive(Debug, Clone, Default)]
pub(crate) struct Progress {
    pub(crate) applied: u64,
    pub(crate) skipped: u64,
    pub(crate) scanned: u64,
    pub(crate) batches: u64,
    pub(crate) skips: Vec<(String, String)>,
    pub(crate) finished: bool,
    pub(crate) stopped: bool,
    pub(crate) error: Option<String>,
}

/// One run: what it does and its progress.
pub(crate) struct Run {
    pub(crate) id: String,
    pub(crate) namespace: String,
    pub(crate) queue: String,
    pub(crate) action: Action,
    pub(crate) principal: String,
    /// The queue's jobs in the selected state when the run began (the progress
    /// bar's scale; 0 when unknown).
    pub(crate) estimate: u64,
    pub(crate) progress: watch::Sender<Progress>,
    stop: CancellationToken,
}

impl Run {
    pub(crate) fn stop(&self) {
        self.stop.cancel();
    }
}

/// What a run is asked to do.
pub(crate) struct Order {
    pub(crate) caller: Caller,
    pub(crate) namespace: String,
    pub(crate) queue: String,
    pub(crate) action: Action,
    pub(crate) state: proto::JobState,
    pub(crate) filter: proto::JobFilter,
    pub(crate) estimate: u64,
}

#[derive(Default)]
pub(crate) struct Bulks {
    runs: Mutex<VecDeque<Arc<Run>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Bulks {
    /// Starts a run; refused (RESOURCE_EXHAUSTED, naming the limit) beyond the caps.
    pub(crate) fn start(&self, grpc: &Grpc, order: Order) -> Result<Arc<Run>, tonic::Status> {
        let mut runs = lock(&self.runs);
        let running: Vec<&Arc<Run>> = runs
            .iter()
            .filter(|r| !r.progress.borrow().finished)
            .collect();
        let principal = order.caller.name().to_owned();
        if running.len() >= MAX_RUNNING {
            return Err(tonic::Status::resource_exhausted(format!(
                "{MAX_RUNNING} bulk actions are running on this replica: wait for one to finish"
            )));
        }
        if running.iter().filter(|r| r.principal == principal).count() >= MAX_PER_PRINCIPAL {
            return Err(tonic::Status::resource_exhausted(format!(
                "principal {principal:?} runs {MAX_PER_PRINCIPAL} bulk actions already: wait for one to finish"
            )));
        }
        let run = Arc::new(Run {
            id: uuid::Uuid::new_v4().simple().to_string(),
            namespace: order.namespace.clone(),
            queue: order.queue.clone(),
            action: order.action,
            principal,
            estimate: order.estimate,
            progress: watch::channel(Progress::default()).0,
            stop: CancellationToken::new(),
        });
        runs.push_back(run.clone());
        while runs.len() > KEPT {
            let Some(oldest) = runs.iter().position(|r| r.progress.borrow().finished) else {
                break;
            };
            runs.remove(oldest);
        }
        tokio::spawn(drive(grpc.clone(), run.clone(), order));
        Ok(run)
    }

    /// The run `id` of namespace `namespace`.
    pub(crate) fn get(&self, namespace: &str, id: &str) -> Option<Arc<Run>> {
        lock(&self.runs)
            .iter()
            .find(|r| r.id == id && r.namespace == namespace)
            .cloned()
    }

    /// The runs of `namespace`, newest first.
    pub(crate) fn of(&self, namespace: &str) -> Vec<Arc<Run>> {
        lock(&self.runs)
            .iter()
            .rev()
            .filter(|r| r.namespace == namespace)
            .cloned()
            .collect()
    }
}

/// Calls the action batch after batch until the listing ends, the run is stopped or
/// a call fails.
async fn drive(grpc: Grpc, run: Arc<Run>, order: Order) {
    let mut token = String::new();
    loop {
        if run.stop.is_cancelled() {
            run.progress.send_modify(|p| {
                p.stopped = true;
                p.finished = true;
            });
            return;
        }
        let message = proto::BulkJobsRequest {
            namespace: order.namespace.clone(),
            queue: order.queue.clone(),
            selection: Some(proto::bulk_jobs_request::Selection::Query(
                proto::JobQuery {
                    state: order.state.into(),
                    filter: Some(order.filter.clone()),
                    page_token: token,
                },
            )),
        };
        match order.action.call(&grpc, &order.caller, message).await {
            Ok(reply) => {
                token = reply.next_page_token.clone();
                let end = token.is_empty();
                run.progress.send_modify(|p| count(p, reply, end));
                if end {
                    return;
                }
            }
            Err(status) => {
                run.progress.send_modify(|p| {
                    p.error = Some(format!("{:?}: {}", status.code(), status.message()));
                    p.finished = true;
                });
                return;
            }
        }
    }
}

fn count(p: &mut Progress, reply: proto::BulkJobsResponse, end: bool) {
    p.applied += reply.applied;
    p.skipped += reply.skipped;
    p.scanned += reply.scanned;
    p.batches += 1;
    for skip in reply.skips {
        if p.skips.len() < SKIPS_SHOWN {
            p.skips.push((skip.job_id, skip.reason));
        }
    }
    p.finished = end;
}
