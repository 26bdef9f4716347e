//! What to upsert: [`Schedule`], a builder over the proto's `Schedule`.

use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::{
    error::{Error, Result},
    proto,
    time::{duration, timestamp},
};

/// A recurring schedule to upsert: an id and a timing (`every` or `cron`), and
/// what each occurrence carries. Occurrences go to [`ScheduleWorker`](crate::ScheduleWorker)s
/// (ClaimDueSchedule). Everything else of the proto's `Schedule` (catch-up and
/// overlap policies, jitter, an enqueue target) is reachable through
/// [`with_proto`](Schedule::with_proto).
///
/// ```no_run
/// # async fn f(client: dueq_client::Client) -> dueq_client::Result<()> {
/// use std::time::Duration;
/// use dueq_client::Schedule;
/// let hourly = Schedule::every("report", Duration::from_secs(3600)).json(&serde_json::json!({"kind": "hourly"}));
/// client.upsert_schedule(hourly).await?;
/// client.upsert_schedule(Schedule::cron("nightly", "0 3 * * *").timezone("Europe/Paris")).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Schedule {
    pub(crate) schedule: proto::Schedule,
    pub(crate) invalid: Option<Error>,
}

impl Schedule {
    /// Fires every `interval` (at least 1 s), aligned to the Unix epoch.
    pub fn every(id: impl Into<String>, interval: Duration) -> Schedule {
        Schedule::timed(id, proto::schedule::Timing::Every(duration(interval)))
    }

    /// Fires at the times of a cron expression (5 fields, or 6 with seconds
    /// first), in UTC unless [`timezone`](Schedule::timezone) says otherwise.
    pub fn cron(id: impl Into<String>, expression: impl Into<String>) -> Schedule {
        Schedule::timed(id, proto::schedule::Timing::Cron(expression.into()))
    }

    fn timed(id: impl Into<String>, timing: proto::schedule::Timing) -> Schedule {
        Schedule {
            schedule: proto::Schedule {
                id: id.into(),
                timing: Some(timing),
                ..Default::default()
            },
            invalid: None,
        }
    }

    /// A definition given whole, as the proto has it.
    pub fn from_proto(schedule: proto::Schedule) -> Schedule {
        Schedule {
            schedule,
            invalid: None,
        }
    }

    /// The IANA time zone a cron is evaluated in (default UTC).
    pub fn timezone(mut self, zone: impl Into<String>) -> Schedule {
        self.schedule.timezone = zone.into();
        self
    }

    /// The name handed to the worker with each occurrence.
    pub fn job_name(mut self, name: impl Into<String>) -> Schedule {
        self.schedule.job_name = name.into();
        self
    }

    /// The payload of every occurrence, as given (opaque bytes).
    pub fn payload(mut self, payload: impl Into<Vec<u8>>) -> Schedule {
        self.schedule.payload = payload.into();
        self
    }

    /// The payload of every occurrence: `value` encoded as JSON. A value that
    /// cannot be encoded makes the upsert fail with InvalidArgument naming
    /// `schedule.payload`.
    pub fn json<T: Serialize + ?Sized>(mut self, value: &T) -> Schedule {
        match serde_json::to_vec(value) {
            Ok(payload) => self.schedule.payload = payload,
            Err(e) => {
                self.invalid = Some(Error::invalid(
                    "schedule.payload",
                    format!("cannot encode as JSON: {e}"),
                ))
            }
        }
        self
    }

    /// One string header of every occurrence.
    pub fn header(mut self, key: impl Into<String>, value: impl Into<String>) -> Schedule {
        self.schedule.headers.insert(key.into(), value.into());
        self
    }

    /// No run before this instant.
    pub fn start_time(mut self, at: SystemTime) -> Schedule {
        self.schedule.start_time = Some(timestamp(at));
        self
    }

    /// No run after this instant.
    pub fn end_time(mut self, at: SystemTime) -> Schedule {
        self.schedule.end_time = Some(timestamp(at));
        self
    }

    /// Fire at most this many times in total (0: unlimited).
    pub fn run_limit(mut self, runs: u64) -> Schedule {
        self.schedule.run_limit = runs;
        self
    }

    /// On create, start paused (an update leaves the status alone).
    pub fn paused(mut self, paused: bool) -> Schedule {
        self.schedule.paused = paused;
        self
    }

    /// Anything else of the definition: edit the proto.
    pub fn with_proto(mut self, edit: impl FnOnce(&mut proto::Schedule)) -> Schedule {
        edit(&mut self.schedule);
        self
    }

    pub(crate) fn into_proto(self) -> Result<proto::Schedule> {
        if let Some(e) = self.invalid {
            return Err(e);
        }
        if self.schedule.timing.is_none() {
            return Err(Error::invalid("schedule.timing", "set every or cron"));
        }
        Ok(self.schedule)
    }
}

/// What an upsert stored.
#[derive(Debug, Clone)]
pub struct Upserted {
    /// The stored schedule, as `get_schedule` returns it.
    pub schedule: proto::Schedule,
    /// Whether it did not exist before.
    pub created: bool,
}

/// What a trigger queued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Triggered {
    /// The id the occurrence will be handed out with.
    pub occurrence_id: String,
    /// When it was triggered (the service's clock): its due time.
    pub due_time: Option<SystemTime>,
}
