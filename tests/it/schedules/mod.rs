//! Schedules: the schedule API, claiming due occurrences (limits, repair, leases,
//! long-polls, time zones), the overlap and catch-up policies, triggers, backfills,
//! jitter, recent runs, and exactly-once hand-out across instances.

mod api;
mod backfill;
mod claim;
pub(crate) mod concurrency;
mod dst;
mod jitter;
mod longpoll;
mod next_run;
mod occurrence_lease;
mod overlap;
mod policies;
mod runs;
pub(crate) mod target;
mod trigger;
