//! A job record as the scripts store it (lua/lib/job.lua, layout 2: a msgpack array
//! whose positions job.lua names `P_*` and [`pos`] names here), decoded straight into
//! a [`JobRecord`]. This is the only decoder of a job record: every script that
//! replies with a job (claim, get, list, cancel, retry) sends its stored bytes the
//! same way (lib/job.lua `push_job`, read by [`read_job`]), so no two decodings of
//! one record can drift apart, and neither Lua spells out some 30 fields per job nor
//! Rust parses them by name (issue 15).
//!
//! Versions: a job record carries no marker of its own; the namespace's job layout
//! (meta `jobs`, [`JOB_LAYOUT`]) is its marker, and every job script checks it
//! (lib/job.lua `jobs_guard`) before it reads a record, so a reply holds layout-2
//! records only. Layout 1 is never decoded here: Migrate converts it in Lua
//! (migrate_jobs.lua). Positions past [`REQUIRED`] left off the end read as empty:
//! that is layout 2's own rule (job.lua trims them), not an older version.

use std::collections::BTreeMap;

use rmpv::Value;

use super::{reply::Reply, StoreError};
use crate::domain::{
    Backoff, BackoffKind, FlowKeys, JobErrorEntry, JobProgress, JobRecord, JobSchedule, JobState,
    JOB_LAYOUT,
};

// The layout this decoder reads. A new layout needs a decoder of its own beside this
// one (or a Migrate step that rewrites every record first), not a silent reinterpretation.
const _: () = assert!(JOB_LAYOUT == 2, "the packed job decoder reads layout 2");

/// Declares the positions as constants and, for the test that holds them to job.lua's
/// `P_*`, as a table by name.
macro_rules! positions {
    ($($(#[$attr:meta])* $name:ident = $n:literal,)*) => {
        $($(#[$attr])* pub(super) const $name: usize = $n;)*
        /// Every position with its name, in order.
        #[cfg(test)]
        pub(super) const ALL: &[(&str, usize)] = &[$((stringify!($name), $n)),*];
    };
}

/// Positions of the packed array, 1-based as in Lua (lib/job.lua `P_<NAME>`; never
/// reorder: stored records depend on them).
pub(crate) mod pos {
    positions! {
        QUEUE = 1,
        NAME = 2,
        PAYLOAD = 3,
        PRIORITY = 4,
        #[allow(dead_code, reason = "the claim order, which only Lua reads")]
        GSEQ = 5,
        N = 6,
        STATE = 7,
        ATTEMPTS = 8,
        MAX_ATTEMPTS = 9,
        BACKOFF = 10,
        BASE = 11,
        CAP = 12,
        JITTER = 13,
        LEASE_MS = 14,
        CREATED = 15,
        RUN_AT = 16,
        UPDATED = 17,
        WORKER = 18,
        TOKEN = 19,
        FINISHED = 20,
        LEASE_UNTIL = 21,
        HEADERS = 22,
        DEDUP = 23,
        ERRORS = 24,
        PX = 25,
        VERSION = 26,
        CANCEL = 27,
        #[allow(dead_code, reason = "WatchJob's interest, which only Lua reads")]
        WATCH = 28,
        FRACTION = 29,
        MESSAGE = 30,
        PROGRESS_AT = 31,
        CHECKPOINT = 32,
        RESULT = 33,
        SCHEDULE = 34,
        DUE = 35,
        RUN = 36,
        #[allow(dead_code, reason = "the job's own retention rule (issue 36), which only Lua reads")]
        RETAIN = 37,
        FKEY = 38,
        CKEY = 39,
        RKEY = 40,
        COST = 41,
        DAG = 42,
        REF = 43,
        ODF = 44,
    }
}

/// Positions every record holds (job.lua `REQUIRED`); later ones are left off while
/// empty.
const REQUIRED: usize = pos::UPDATED;
/// Positions a record may hold (job.lua `FIELDS`).
const FIELDS: usize = pos::ODF;
/// State codes by position in job.lua's `STATE_NAME`.
const STATES: [JobState; 8] = [
    JobState::Pending,
    JobState::Delayed,
    JobState::Active,
    JobState::Completed,
    JobState::Dead,
    JobState::Cancelled,
    JobState::Waiting,
    JobState::Skipped,
];

/// One job of a reply (lib/job.lua `push_job`): its id, its packed record, and its
/// payload when kept in a key of its own (else "").
pub(crate) fn read_job(reply: &mut Reply) -> Result<JobRecord, StoreError> {
    let id = reply.text()?;
    let packed = reply.bytes()?;
    let payload = reply.bytes()?;
    packed_job(id, &packed, payload)
}

/// Job `id`'s record from its stored bytes; `payload` is the payload kept in a key
/// of its own (position [`pos::PX`] = 1), else unused.
pub(crate) fn packed_job(
    id: String,
    packed: &[u8],
    payload: Vec<u8>,
) -> Result<JobRecord, StoreError> {
    use pos::*;
    let value = rmpv::decode::read_value(&mut &packed[..])
        .map_err(|e| StoreError::corrupt(format!("job {id}"), format!("not msgpack: {e}")))?;
    let Value::Array(items) = value else {
        return Err(StoreError::corrupt(format!("job {id}"), "not an array"));
    };
    let p = Positions {
        items: &items,
        id: &id,
    };
    if items.len() < REQUIRED || items.len() > FIELDS {
        return Err(p.corrupt(0, format!("{} positions", items.len())));
    }
    let created = p.int(CREATED)?;
    let payload = if p.opt_int(PX)? == Some(1) {
        payload
    } else {
        p.bytes(PAYLOAD)?
    };
    Ok(JobRecord {
        queue: p.text(QUEUE)?,
        name: p.text(NAME)?,
        payload,
        headers: p.headers(HEADERS)?,
        priority: p.fit(PRIORITY)?,
        state: p.state(STATE)?,
        attempts: p.fit(ATTEMPTS)?,
        max_attempts: p.fit(MAX_ATTEMPTS)?,
        backoff: Backoff {
            kind: p.backoff_kind(BACKOFF)?,
            base_ms: secs_in(p.int(BASE)?),
            cap_ms: secs_in(p.int(CAP)?),
            jitter: p.jitter(JITTER)?,
        },
        lease_ms: secs_in(p.int(LEASE_MS)?),
        errors: p.errors(ERRORS)?,
        create_ms: created,
        update_ms: p.after(UPDATED, created)?.unwrap_or(0),
        run_at_ms: p.after(RUN_AT, created)?,
        lease_until_ms: p.after(LEASE_UNTIL, created)?,
        lease_token: p.text(TOKEN)?,
        worker: p.text(WORKER)?,
        finish_ms: p.after(FINISHED, created)?,
        dedup_key: p.text(DEDUP)?,
        seq: p.int(N)?,
        version: p.opt_int(VERSION)?.unwrap_or(1).max(0).unsigned_abs(),
        cancel_requested: p.opt_int(CANCEL)? == Some(1),
        progress: p.progress(created)?,
        checkpoint: p.bytes(CHECKPOINT)?,
        result: p.bytes(RESULT)?,
        schedule: p.schedule()?,
        flow: FlowKeys {
            fairness: p.text(FKEY)?,
            concurrency: p.text(CKEY)?,
            rate: p.text(RKEY)?,
            // '' (or absent) for 1.
            cost: p.opt_int(COST)?.map_or(Ok(1), |c| {
                u32::try_from(c).map_err(|_| p.corrupt(COST, format!("out of range: {c}")))
            })?,
        },
        graph: p.graph()?,
        dependencies: Vec::new(),
        id,
    })
}

/// A state as its code (job.lua `STATE_CODE`): None for a code no state has.
pub(crate) fn state_of_code(code: i64) -> Option<JobState> {
    usize::try_from(code)
        .ok()
        .and_then(|code| code.checked_sub(1))
        .and_then(|i| STATES.get(i).copied())
}

/// core.lua `secs_in`: a duration kept as -seconds when whole seconds.
fn secs_in(v: i64) -> i64 {
    if v < 0 {
        -v * 1000
    } else {
        v
    }
}

/// Typed reads of the array's positions, each naming the job and position when it
/// fails. A position past the end is empty, as job.lua trims it.
struct Positions<'a> {
    items: &'a [Value],
    id: &'a str,
}

impl Positions<'_> {
    fn corrupt(&self, position: usize, detail: impl std::fmt::Display) -> StoreError {
        StoreError::corrupt(
            format!("job {}", self.id),
            format!("position {position}: {detail}"),
        )
    }

    fn at(&self, position: usize) -> Option<&Value> {
        self.items.get(position - 1)
    }

    fn is_empty(&self, position: usize) -> bool {
        match self.at(position) {
            None | Some(Value::Nil) => true,
            Some(Value::String(s)) => s.as_bytes().is_empty(),
            Some(_) => false,
        }
    }

    /// A number ('' or absent: None). Lua writes a whole number as an integer.
    fn opt_int(&self, position: usize) -> Result<Option<i64>, StoreError> {
        if self.is_empty(position) {
            return Ok(None);
        }
        match self.at(position) {
            Some(Value::Integer(n)) => n
                .as_i64()
                .map(Some)
                .ok_or_else(|| self.corrupt(position, "out of range")),
            Some(Value::F64(f)) if f.fract() == 0.0 => Ok(Some(*f as i64)),
            _ => Err(self.corrupt(position, "not a whole number")),
        }
    }

    fn int(&self, position: usize) -> Result<i64, StoreError> {
        self.opt_int(position)?
            .ok_or_else(|| self.corrupt(position, "missing"))
    }

    fn fit<T: TryFrom<i64>>(&self, position: usize) -> Result<T, StoreError> {
        let n = self.int(position)?;
        T::try_from(n).map_err(|_| self.corrupt(position, format!("out of range: {n}")))
    }

    /// core.lua `rel_in`: milliseconds after `base`, None when unset.
    fn after(&self, position: usize, base: i64) -> Result<Option<i64>, StoreError> {
        Ok(self.opt_int(position)?.map(|v| base + v))
    }

    fn bytes(&self, position: usize) -> Result<Vec<u8>, StoreError> {
        match self.at(position) {
            None | Some(Value::Nil) => Ok(Vec::new()),
            Some(Value::String(s)) => Ok(s.as_bytes().to_vec()),
            Some(Value::Binary(b)) => Ok(b.clone()),
            Some(_) => Err(self.corrupt(position, "not a string")),
        }
    }

    fn text(&self, position: usize) -> Result<String, StoreError> {
        String::from_utf8(self.bytes(position)?).map_err(|_| self.corrupt(position, "not UTF-8"))
    }

    /// A state code (job.lua `STATE_CODE`).
    fn state(&self, position: usize) -> Result<JobState, StoreError> {
        state_of_code(self.int(position)?).ok_or_else(|| self.corrupt(position, "not a state code"))
    }

    /// The flow the job is a node of (positions DAG, REF, ODF; issue 34).
    fn graph(&self) -> Result<Option<crate::domain::FlowMembership>, StoreError> {
        let flow_id = self.text(pos::DAG)?;
        if flow_id.is_empty() {
            return Ok(None);
        }
        let rule = self.text(pos::ODF)?;
        Ok(Some(crate::domain::FlowMembership {
            flow_id,
            reference: self.text(pos::REF)?,
            on_failure: crate::domain::OnDependencyFailure::parse(&rule)
                .ok_or_else(|| self.corrupt(pos::ODF, format!("not a rule: {rule:?}")))?,
        }))
    }

    /// The last progress report (positions FRACTION, MESSAGE, PROGRESS_AT); None
    /// when none was made.
    fn progress(&self, created: i64) -> Result<Option<JobProgress>, StoreError> {
        let Some(at_ms) = self.after(pos::PROGRESS_AT, created)? else {
            return Ok(None);
        };
        let fraction = match self.at(pos::FRACTION) {
            None | Some(Value::Nil) => None,
            Some(Value::String(s)) if s.as_bytes().is_empty() => None,
            Some(value) => Some(
                value
                    .as_f64()
                    .filter(|f| (0.0..=1.0).contains(f))
                    .ok_or_else(|| self.corrupt(pos::FRACTION, "not a fraction in 0..=1"))?,
            ),
        };
        let message = self.text(pos::MESSAGE)?;
        Ok(Some(JobProgress {
            fraction,
            message: (!message.is_empty()).then_some(message),
            at_ms,
        }))
    }

    /// The schedule slot that enqueued the job (positions SCHEDULE, DUE, RUN).
    fn schedule(&self) -> Result<Option<JobSchedule>, StoreError> {
        let schedule_id = self.text(pos::SCHEDULE)?;
        if schedule_id.is_empty() {
            return Ok(None);
        }
        Ok(Some(JobSchedule {
            schedule_id,
            due_ms: self.int(pos::DUE)?,
            run: self.fit(pos::RUN)?,
        }))
    }

    /// job.lua keeps the backoff kind as 1 (fixed) or 0 (exponential).
    fn backoff_kind(&self, position: usize) -> Result<BackoffKind, StoreError> {
        match self.int(position)? {
            0 => Ok(BackoffKind::Exponential),
            1 => Ok(BackoffKind::Fixed),
            n => Err(self.corrupt(position, format!("not a backoff kind: {n}"))),
        }
    }

    /// job.lua keeps the jitter in thousandths when that is exact, else as text.
    fn jitter(&self, position: usize) -> Result<f64, StoreError> {
        let jitter = match self.at(position) {
            Some(Value::Integer(n)) => n.as_f64().map(|n| n / 1000.0),
            Some(Value::F64(f)) => Some(f / 1000.0),
            Some(Value::F32(f)) => Some(f64::from(*f) / 1000.0),
            Some(Value::String(_)) => self.text(position)?.parse().ok(),
            _ => None,
        };
        jitter
            .filter(|j| (0.0..=1.0).contains(j))
            .ok_or_else(|| self.corrupt(position, "backoff jitter is not in 0..=1"))
    }

    /// A JSON object of strings ("" for none).
    fn headers(&self, position: usize) -> Result<BTreeMap<String, String>, StoreError> {
        match self.text(position)?.as_str() {
            "" => Ok(BTreeMap::new()),
            json => serde_json::from_str(json).map_err(|e| self.corrupt(position, e)),
        }
    }

    /// The error history ("" for none; lib/job.lua `push_error`).
    fn errors(&self, position: usize) -> Result<Vec<JobErrorEntry>, StoreError> {
        match self.text(position)?.as_str() {
            "" => Ok(Vec::new()),
            json => error_history(json).map_err(|detail| self.corrupt(position, detail)),
        }
    }
}

/// The JSON error history (cjson writes an empty table as `{}`): an array of
/// `{attempt, message, at}` (lib/job.lua `push_error`).
fn error_history(json: &str) -> Result<Vec<JobErrorEntry>, String> {
    if json == "{}" {
        return Ok(Vec::new());
    }
    let value: serde_json::Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
    let entries = value.as_array().ok_or("not an array")?;
    entries
        .iter()
        .map(|entry| {
            let number = |key: &str| entry.get(key).and_then(serde_json::Value::as_f64);
            match (
                number("attempt"),
                entry.get("message").and_then(serde_json::Value::as_str),
                number("at"),
            ) {
                (Some(attempt), Some(message), Some(at)) => Ok(JobErrorEntry {
                    attempt: attempt as u32,
                    message: message.to_owned(),
                    at_ms: at as i64,
                    worker: entry
                        .get("worker")
                        .and_then(serde_json::Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                }),
                _ => Err("an entry lacks attempt, message or at".to_owned()),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
