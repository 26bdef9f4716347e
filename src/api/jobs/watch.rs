//! WatchJob (issue 30): the job now, then each newer version, from the hub's latest
//! read of it (`crate::watch`); the stream never queues versions, so a slow reader
//! skips to the latest.

use std::pin::Pin;

use tokio_stream::Stream;
use tonic::{Request, Status};

use super::{check, convert, ApiError, QueueApi};
use crate::{
    domain::Namespace,
    error::{Error, Missing},
    proto,
    watch::{Seen, Watcher},
};

pub(in crate::api) type WatchJobStream =
    Pin<Box<dyn Stream<Item = Result<proto::WatchJobResponse, Status>> + Send + 'static>>;

pub(in crate::api) async fn watch(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::WatchJobRequest>,
) -> Result<WatchJobStream, ApiError> {
    let req = request.into_inner();
    let id = check::id("job_id", &req.job_id)?.to_owned();
    let full = convert::full_view("view", req.view)?;
    let watcher = api.jobs.watch(namespace, &id).await?;
    let stream = Versions {
        watcher,
        after: req.after_version,
        full,
        id,
    };
    let api = api.clone();
    Ok(Box::pin(futures_util::stream::unfold(
        (stream, api),
        |(mut stream, api)| async move {
            let item = stream.next().await?;
            let item = item.map_err(|error| api.rescue.status(error));
            Some((item, (stream, api)))
        },
    )))
}

/// One stream's position: the last version sent.
struct Versions {
    watcher: Watcher,
    after: u64,
    full: bool,
    id: String,
}

impl Versions {
    /// The next message: the latest read once it is newer than what was sent; the
    /// stream's end (NOT_FOUND) once the job is gone; None when the server stops.
    async fn next(&mut self) -> Option<Result<proto::WatchJobResponse, ApiError>> {
        let after = self.after;
        let seen = self
            .watcher
            .seen
            .wait_for(|seen| match seen {
                Seen::Job(job) => job.version > after,
                Seen::Gone => true,
                Seen::Unread | Seen::Failed(_) => false,
            })
            .await
            .ok()?
            .clone();
        match seen {
            Seen::Job(job) => {
                self.after = job.version;
                let mut job = (*job).clone();
                if !self.full {
                    job.payload.clear();
                    job.headers.clear();
                    job.result.clear();
                }
                Some(Ok(proto::WatchJobResponse {
                    job: Some(convert::job_to_proto(job)),
                }))
            }
            Seen::Gone | Seen::Unread | Seen::Failed(_) => {
                self.after = u64::MAX;
                Some(Err(Error::NotFound(Missing::Job(self.id.clone())).into()))
            }
        }
    }
}
