//! Jobs: enqueue, claim, ack and fail through their lifecycle, dedup, retention,
//! admin calls, DeleteJob and ReleaseJob, validation, the Work stream, WatchJob, and
//! crash safety under load.

mod admin;
pub(crate) mod crash;
mod dedup;
mod delete_release;
mod lifecycle;
mod progress;
mod retention;
mod retention_per_job;
mod validation;
mod wakeups;
mod watch;
mod work_stream;
