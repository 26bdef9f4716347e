//! A job record as the scripts store it (lua/lib/job.lua, layout 2: a msgpack array
//! whose positions `job.lua` lists), decoded straight into a [`JobRecord`]. A claim
//! replies with the stored bytes (issue 15): the hot path neither spells out some 30
//! reply fields per job in Lua nor parses them by name here. `job_fields`, which
//! every other read uses, stays the reference: a library test holds the two decodings
//! of the same job equal.

use std::collections::BTreeMap;

use rmpv::Value;

use super::{records::error_history, StoreError};
use crate::domain::{Backoff, BackoffKind, JobRecord, JobState};

/// Positions (1-based, as in job.lua) that must be present; later ones are left off
/// while empty.
const REQUIRED: usize = 17;
/// State codes by position in job.lua's `STATE_NAME`.
const STATES: [JobState; 6] = [
    JobState::Pending,
    JobState::Delayed,
    JobState::Active,
    JobState::Completed,
    JobState::Dead,
    JobState::Cancelled,
];

/// Job `id`'s record from its stored bytes; `payload` is the payload kept in a key
/// of its own (position 25 `px` = 1), else unused.
pub(crate) fn packed_job(
    id: String,
    packed: &[u8],
    payload: Vec<u8>,
) -> Result<JobRecord, StoreError> {
    let value = rmpv::decode::read_value(&mut &packed[..])
        .map_err(|e| StoreError::corrupt(format!("job {id}"), format!("not msgpack: {e}")))?;
    let Value::Array(items) = value else {
        return Err(StoreError::corrupt(format!("job {id}"), "not an array"));
    };
    let p = Positions {
        items: &items,
        id: &id,
    };
    if items.len() < REQUIRED || items.len() > 25 {
        return Err(p.corrupt(0, format!("{} positions", items.len())));
    }
    let created = p.int(15)?;
    let state = usize::try_from(p.int(7)?)
        .ok()
        .and_then(|code| code.checked_sub(1))
        .and_then(|i| STATES.get(i).copied())
        .ok_or_else(|| p.corrupt(7, "not a state code"))?;
    let headers = match p.text(22)?.as_str() {
        "" => BTreeMap::new(),
        json => serde_json::from_str(json).map_err(|e| p.corrupt(22, e.to_string()))?,
    };
    let errors = match p.text(24)?.as_str() {
        "" => Vec::new(),
        json => error_history(json, |detail| p.corrupt(24, detail))?,
    };
    let payload = if p.opt_int(25)? == Some(1) {
        payload
    } else {
        p.bytes(3)?
    };
    Ok(JobRecord {
        queue: p.text(1)?,
        name: p.text(2)?,
        payload,
        headers,
        priority: p.fit(4)?,
        state,
        attempts: p.fit(8)?,
        max_attempts: p.fit(9)?,
        backoff: Backoff {
            kind: if p.int(10)? == 1 {
                BackoffKind::Fixed
            } else {
                BackoffKind::Exponential
            },
            base_ms: secs_in(p.int(11)?),
            cap_ms: secs_in(p.int(12)?),
            jitter: p.jitter(13)?,
        },
        lease_ms: secs_in(p.int(14)?),
        errors,
        create_ms: created,
        update_ms: p.after(17, created)?.unwrap_or(0),
        run_at_ms: p.after(16, created)?,
        lease_until_ms: p.after(21, created)?,
        lease_token: p.text(19)?,
        worker: p.text(18)?,
        finish_ms: p.after(20, created)?,
        dedup_key: p.text(23)?,
        seq: p.int(6)?,
        id,
    })
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
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::packed_job;
    use crate::{
        domain::{Backoff, BackoffKind, Dedup, DedupMode, Failure, JobSpec, JobState, RunAt},
        store::{
            ops::{
                claim_jobs::ClaimJobs, enqueue_jobs::EnqueueJobs, fail_job::FailJob,
                get_job::GetJob,
            },
            StoreError,
        },
        testing::TestRedis,
    };

    fn spec(id: &str) -> JobSpec {
        JobSpec {
            id: id.into(),
            queue: "q".into(),
            name: "n".into(),
            payload: b"{}".to_vec(),
            headers: BTreeMap::new(),
            priority: 0,
            run_at: RunAt::Now,
            max_attempts: 3,
            backoff: Backoff {
                kind: BackoffKind::Exponential,
                base_ms: 1_000,
                cap_ms: 60_000,
                jitter: 0.0,
            },
            lease_ms: 30_000,
            dedup: None,
        }
    }

    /// Every kind of value a record holds, claimed (the packed reply) and read back by
    /// GetJob (`job_fields`, the reference): the two decodings agree field for field.
    #[tokio::test]
    async fn a_claimed_job_decodes_as_get_job_reads_it() {
        let redis = TestRedis::start().await;
        let store = redis.store();
        let mut headers = BTreeMap::new();
        headers.insert("trace".to_owned(), "t-1 \u{e9}".to_owned());
        let specs = vec![
            spec("plain"),
            JobSpec {
                payload: vec![0, 159, 146, 150, 255],
                headers,
                priority: -7,
                max_attempts: 9,
                backoff: Backoff {
                    kind: BackoffKind::Fixed,
                    base_ms: 1_500,
                    cap_ms: 1_500,
                    jitter: 0.3333,
                },
                lease_ms: 12_345,
                dedup: Some(Dedup {
                    key: "d-1".into(),
                    ttl_ms: 60_000,
                    mode: DedupMode::Skip,
                }),
                ..spec("binary, headers, fixed backoff, dedup")
            },
            JobSpec {
                payload: vec![b'x'; 5_000],
                backoff: Backoff {
                    jitter: 0.25,
                    ..spec("").backoff
                },
                ..spec("payload in its own key")
            },
        ];
        let enqueued = store
            .run(
                "ns",
                &EnqueueJobs {
                    namespace: "ns",
                    jobs: &specs,
                    max_jobs: 0,
                },
            )
            .await
            .unwrap_or_else(|e| panic!("enqueue: {e}"));
        assert!(enqueued.iter().all(Result::is_ok), "{enqueued:?}");
        let queues = ["q".to_owned()];
        let claim = |token_base: &'static str| ClaimJobs {
            queues: &queues,
            worker: "worker-1",
            lease_ms: None,
            max_jobs: 10,
            token_base,
            max_bytes: 1 << 20,
            acks: &[],
        };
        // One job fails first and is claimed again: its error history and attempts.
        let first = store
            .run("ns", &claim("a"))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(first.jobs.len(), 3);
        let failure = Failure {
            error: "boom \"quoted\"".into(),
            retry_after_ms: Some(0),
            non_retryable: false,
        };
        let plain = &first.jobs[0];
        store
            .run(
                "ns",
                &FailJob {
                    id: &plain.id,
                    token: &plain.lease_token,
                    failure: &failure,
                    random: 0.5,
                },
            )
            .await
            .unwrap_or_else(|e| panic!("fail: {e}"));
        let again = store
            .run("ns", &claim("b"))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(again.jobs.len(), 1, "the failed job is claimable again");
        assert_eq!(again.jobs[0].errors.len(), 1);
        for claimed in first.jobs[1..].iter().chain(&again.jobs) {
            let read = store
                .run("ns", &GetJob { id: &claimed.id })
                .await
                .unwrap_or_else(|e| panic!("get: {e}"))
                .unwrap_or_else(|| panic!("job {} is gone", claimed.id));
            assert_eq!(claimed, &read);
            assert_eq!(read.state, JobState::Active);
        }
    }

    #[test]
    fn bytes_that_are_not_a_record_are_corrupt_naming_the_job() {
        let not_msgpack = packed_job("j".into(), &[0xc1], Vec::new());
        let a_map = packed_job("j".into(), &[0x80], Vec::new());
        let short = packed_job("j".into(), &[0x91, 0x01], Vec::new());
        let mut bad_state = vec![0xdc, 0x00, 17];
        for position in 1..=17u8 {
            match position {
                1..=3 => bad_state.extend([0xa1, b'x']),
                7 => bad_state.push(9),
                _ => bad_state.push(1),
            }
        }
        let bad_state = packed_job("j".into(), &bad_state, Vec::new());
        for (case, result) in [
            ("not msgpack", not_msgpack),
            ("a map", a_map),
            ("one position", short),
            ("state code 9", bad_state),
        ] {
            match result {
                Err(StoreError::Corrupt { what, .. }) => assert_eq!(what, "job j", "{case}"),
                other => panic!("{case}: {other:?}"),
            }
        }
    }
}
