//! Job operations: one script (or one read) each. See `lua/*_job*.lua`.

use std::collections::{BTreeMap, HashMap};

use deadpool_redis::redis::{self, Value};

use super::{
    keys::SCHEMA_VERSION,
    reply::{self, array, int, opt_int, text},
    scripts, Store, StoreError,
};
use crate::jobs::model::{
    Backoff, BackoffKind, EnqueueOutcome, Enqueued, Failed, Failure, JobErrorEntry, JobRecord,
    JobSpec, JobState, LeaseCheck, RunAt, StateCheck,
};

/// Values per job in an `enqueue_jobs` call (see the script's header).
const ENQUEUE_FIELDS: usize = 17;

/// What one `claim_jobs` call returned.
#[derive(Debug)]
pub struct ClaimedBatch {
    pub now_ms: i64,
    /// Earliest future delayed run or lease deadline in the claimed queues.
    pub next_ms: Option<i64>,
    /// Claimable jobs are left in these queues.
    pub more: bool,
    pub jobs: Vec<JobRecord>,
}

/// What the job wake-up timer sees.
#[derive(Debug)]
pub struct JobPeek {
    pub now_ms: i64,
    pub earliest_ms: Option<i64>,
    /// Claimable now, per queue asked about (same order).
    pub claimable: Vec<u64>,
}

/// Parameters of one claim call.
#[derive(Debug, Clone)]
pub struct ClaimArgs<'a> {
    pub queues: &'a [String],
    pub worker: &'a str,
    pub lease_ms: Option<i64>,
    pub max_jobs: u32,
    pub token_base: &'a str,
    /// Most expired leases re-handed / delayed jobs promoted per queue per call.
    pub budget: u32,
}

fn spec_args(spec: &JobSpec) -> Result<[Vec<u8>; ENQUEUE_FIELDS], StoreError> {
    let headers = serde_json::to_string(&spec.headers)
        .map_err(|e| StoreError::corrupt("headers", e.to_string()))?;
    let (when, when_ms) = match spec.run_at {
        RunAt::Now => ("", String::new()),
        RunAt::AtMs(ms) => ("at", ms.to_string()),
        RunAt::DelayMs(ms) => ("delay", ms.to_string()),
    };
    let (dedup_key, dedup_ttl, dedup_mode) = match &spec.dedup {
        Some(d) => (d.key.clone(), d.ttl_ms.to_string(), d.mode.as_str()),
        None => (String::new(), String::new(), ""),
    };
    Ok([
        spec.id.clone().into_bytes(),
        spec.queue.clone().into_bytes(),
        spec.name.clone().into_bytes(),
        spec.payload.clone(),
        headers.into_bytes(),
        spec.priority.to_string().into_bytes(),
        when.into(),
        when_ms.into_bytes(),
        spec.max_attempts.to_string().into_bytes(),
        spec.backoff.kind.as_str().into(),
        spec.backoff.base_ms.to_string().into_bytes(),
        spec.backoff.cap_ms.to_string().into_bytes(),
        spec.backoff.jitter.to_string().into_bytes(),
        spec.lease_ms.to_string().into_bytes(),
        dedup_key.into_bytes(),
        dedup_ttl.into_bytes(),
        dedup_mode.into(),
    ])
}

fn state_of(value: Option<&Value>, what: &str) -> Result<JobState, StoreError> {
    value
        .and_then(text)
        .as_deref()
        .and_then(JobState::parse)
        .ok_or_else(|| StoreError::corrupt(what, "unknown job state"))
}

/// Decodes the common refusals of a lease-guarded script.
fn lease_refusal<T>(items: &[Value], what: &str) -> Result<Option<LeaseCheck<T>>, StoreError> {
    match items.first().and_then(text).as_deref() {
        Some("ok") => Ok(None),
        Some("missing") => Ok(Some(LeaseCheck::Missing)),
        Some("expired") => Ok(Some(LeaseCheck::Expired)),
        Some("stale") => Ok(Some(LeaseCheck::Stale(state_of(items.get(1), what)?))),
        _ => Err(StoreError::corrupt(what, "unexpected reply")),
    }
}

/// Records of a reply tail laid out as `count, fields..., count, fields...`.
fn records(mut rest: &[Value], what: &str) -> Result<Vec<JobRecord>, StoreError> {
    let mut out = Vec::new();
    while let Some((len, tail)) = rest.split_first() {
        let len = usize::try_from(int(len).unwrap_or(0)).unwrap_or(0);
        if tail.len() < len {
            return Err(StoreError::corrupt(what, "truncated"));
        }
        out.push(job(&reply::fields(&tail[..len]), what)?);
        rest = &tail[len..];
    }
    Ok(out)
}

impl Store {
    /// Runs `enqueue_jobs` for all specs in one script call (one round trip).
    pub async fn enqueue_jobs(
        &self,
        namespace: &str,
        specs: &[JobSpec],
    ) -> Result<Vec<Enqueued>, StoreError> {
        if specs.is_empty() {
            return Ok(Vec::new());
        }
        let keys = self.keys(namespace);
        let prefixes = keys.job_prefixes();
        let (meta, schema, count) = (
            keys.meta(),
            SCHEMA_VERSION.to_string(),
            specs.len().to_string(),
        );
        let per_job = specs.iter().map(spec_args).collect::<Result<Vec<_>, _>>()?;
        let mut args: Vec<&[u8]> = prefixes.args().collect();
        args.push(schema.as_bytes());
        args.push(count.as_bytes());
        args.extend(per_job.iter().flat_map(|a| a.iter().map(Vec::as_slice)));
        let items = array(
            self.eval(&scripts::ENQUEUE_JOBS, &[meta.as_bytes()], &args)
                .await?,
            "enqueue reply",
        )?;
        if items.len() != specs.len() * 3 {
            return Err(StoreError::corrupt("enqueue reply", "wrong length"));
        }
        items
            .chunks_exact(3)
            .map(|c| {
                let outcome = text(&c[0])
                    .as_deref()
                    .and_then(EnqueueOutcome::parse)
                    .ok_or_else(|| StoreError::corrupt("enqueue reply", "unknown outcome"))?;
                Ok(Enqueued {
                    id: text(&c[1])
                        .ok_or_else(|| StoreError::corrupt("enqueue reply", "job id"))?,
                    outcome,
                    state: state_of(Some(&c[2]), "enqueue reply")?,
                })
            })
            .collect()
    }

    pub async fn claim_jobs(
        &self,
        namespace: &str,
        claim: &ClaimArgs<'_>,
    ) -> Result<ClaimedBatch, StoreError> {
        let keys = self.keys(namespace);
        let (prefixes, done, meta) = (keys.job_prefixes(), keys.jobs_done(), keys.meta());
        let lease = claim.lease_ms.map(|l| l.to_string()).unwrap_or_default();
        let (max, budget) = (claim.max_jobs.to_string(), claim.budget.to_string());
        let mut args: Vec<&[u8]> = prefixes.args().collect();
        args.extend([
            claim.token_base.as_bytes(),
            lease.as_bytes(),
            max.as_bytes(),
            claim.worker.as_bytes(),
            budget.as_bytes(),
        ]);
        args.extend(claim.queues.iter().map(|q| q.as_bytes()));
        let items = array(
            self.eval(
                &scripts::CLAIM_JOBS,
                &[done.as_bytes(), meta.as_bytes()],
                &args,
            )
            .await?,
            "claim reply",
        )?;
        let bad = || StoreError::corrupt("claim reply", "unexpected shape");
        Ok(ClaimedBatch {
            now_ms: items.first().and_then(int).ok_or_else(bad)?,
            next_ms: items.get(1).and_then(opt_int),
            more: items.get(2).and_then(int) == Some(1),
            jobs: records(items.get(4..).unwrap_or_default(), "claimed job")?,
        })
    }

    pub async fn ack_job(
        &self,
        namespace: &str,
        id: &str,
        token: &str,
    ) -> Result<LeaseCheck<i64>, StoreError> {
        let items = self
            .lease_script(
                &scripts::ACK_JOB,
                namespace,
                &[id.as_bytes(), token.as_bytes()],
            )
            .await?;
        if let Some(refused) = lease_refusal(&items, "ack reply")? {
            return Ok(refused);
        }
        Ok(LeaseCheck::Done(items.get(1).and_then(int).unwrap_or(0)))
    }

    pub async fn fail_job(
        &self,
        namespace: &str,
        id: &str,
        token: &str,
        failure: &Failure,
        random: f64,
    ) -> Result<LeaseCheck<Failed>, StoreError> {
        let retry = failure
            .retry_after_ms
            .map(|r| r.to_string())
            .unwrap_or_default();
        let random = random.to_string();
        let items = self
            .lease_script(
                &scripts::FAIL_JOB,
                namespace,
                &[
                    id.as_bytes(),
                    token.as_bytes(),
                    failure.error.as_bytes(),
                    retry.as_bytes(),
                    if failure.non_retryable { b"1" } else { b"0" },
                    random.as_bytes(),
                ],
            )
            .await?;
        if let Some(refused) = lease_refusal(&items, "fail reply")? {
            return Ok(refused);
        }
        Ok(LeaseCheck::Done(Failed {
            state: state_of(items.get(2), "fail reply")?,
            run_at_ms: items.get(3).and_then(opt_int),
        }))
    }

    pub async fn extend_lease(
        &self,
        namespace: &str,
        id: &str,
        token: &str,
        lease_ms: i64,
    ) -> Result<LeaseCheck<i64>, StoreError> {
        let lease = lease_ms.to_string();
        let items = self
            .lease_script(
                &scripts::EXTEND_LEASE,
                namespace,
                &[id.as_bytes(), token.as_bytes(), lease.as_bytes()],
            )
            .await?;
        if let Some(refused) = lease_refusal(&items, "extend reply")? {
            return Ok(refused);
        }
        let until = items
            .get(1)
            .and_then(int)
            .ok_or_else(|| StoreError::corrupt("extend reply", "deadline"))?;
        Ok(LeaseCheck::Done(until))
    }

    pub async fn cancel_job(&self, namespace: &str, id: &str) -> Result<StateCheck, StoreError> {
        self.state_script(&scripts::CANCEL_JOB, namespace, id, "cancel reply")
            .await
    }

    pub async fn retry_job(&self, namespace: &str, id: &str) -> Result<StateCheck, StoreError> {
        self.state_script(&scripts::RETRY_JOB, namespace, id, "retry reply")
            .await
    }

    pub async fn get_job(
        &self,
        namespace: &str,
        id: &str,
    ) -> Result<Option<JobRecord>, StoreError> {
        let keys = self.keys(namespace);
        let (meta, key, prefix) = (keys.meta(), keys.job(id), keys.job_prefix());
        let items = array(
            self.eval(
                &scripts::GET_JOB,
                &[meta.as_bytes(), &key],
                &[prefix.as_bytes(), id.as_bytes()],
            )
            .await?,
            "job record",
        )?;
        if items.is_empty() {
            return Ok(None);
        }
        job(&reply::fields(&items), id).map(Some)
    }

    /// One page of a queue's jobs after sequence `after` (exclusive); returns the page
    /// and the sequence to continue after, if any.
    pub async fn list_jobs(
        &self,
        namespace: &str,
        queue: &str,
        after: Option<i64>,
        page_size: usize,
        state: Option<JobState>,
    ) -> Result<(Vec<JobRecord>, Option<i64>), StoreError> {
        let keys = self.keys(namespace);
        let budget = if state.is_some() {
            (page_size * 10).min(5000)
        } else {
            page_size
        };
        let (meta, prefixes) = (keys.meta(), keys.job_prefixes());
        let (after, page, budget) = (
            after.map(|a| a.to_string()).unwrap_or_default(),
            page_size.to_string(),
            budget.to_string(),
        );
        let filter = state.map(JobState::as_str).unwrap_or("");
        let items = array(
            self.eval(
                &scripts::LIST_JOBS,
                &[meta.as_bytes()],
                &[
                    prefixes.0[0].as_bytes(),
                    prefixes.0[4].as_bytes(),
                    queue.as_bytes(),
                    after.as_bytes(),
                    page.as_bytes(),
                    filter.as_bytes(),
                    budget.as_bytes(),
                ],
            )
            .await?,
            "list reply",
        )?;
        let next = items.first().and_then(opt_int);
        Ok((
            records(items.get(2..).unwrap_or_default(), "listed job")?,
            next,
        ))
    }

    /// One bounded prune step; returns (deleted, more).
    pub async fn prune_jobs(
        &self,
        namespace: &str,
        retention_ms: i64,
        keep: u64,
        batch: u32,
    ) -> Result<(u64, bool), StoreError> {
        let keys = self.keys(namespace);
        let (prefixes, done, meta) = (keys.job_prefixes(), keys.jobs_done(), keys.meta());
        let (age, keep, batch) = (
            retention_ms.to_string(),
            keep.to_string(),
            batch.to_string(),
        );
        let mut args: Vec<&[u8]> = prefixes.args().collect();
        args.extend([age.as_bytes(), keep.as_bytes(), batch.as_bytes()]);
        let items = array(
            self.eval(
                &scripts::PRUNE_JOBS,
                &[done.as_bytes(), meta.as_bytes()],
                &args,
            )
            .await?,
            "prune reply",
        )?;
        let deleted = items.first().and_then(int).unwrap_or(0);
        Ok((
            u64::try_from(deleted).unwrap_or(0),
            items.get(1).and_then(int) == Some(1),
        ))
    }

    pub async fn peek_jobs(
        &self,
        namespace: &str,
        queues: &[String],
    ) -> Result<JobPeek, StoreError> {
        let keys = self.keys(namespace);
        let (prefixes, done, meta) = (keys.job_prefixes(), keys.jobs_done(), keys.meta());
        let mut args: Vec<&[u8]> = prefixes.args().collect();
        args.extend(queues.iter().map(|q| q.as_bytes()));
        let items = array(
            self.eval(
                &scripts::PEEK_JOBS,
                &[done.as_bytes(), meta.as_bytes()],
                &args,
            )
            .await?,
            "peek reply",
        )?;
        let bad = || StoreError::corrupt("peek reply", "unexpected shape");
        Ok(JobPeek {
            now_ms: items.first().and_then(int).ok_or_else(bad)?,
            earliest_ms: items.get(1).and_then(opt_int),
            claimable: items
                .get(2..)
                .unwrap_or_default()
                .iter()
                .map(|v| u64::try_from(int(v).unwrap_or(0)).unwrap_or(0))
                .collect(),
        })
    }

    async fn lease_script(
        &self,
        script: &redis::Script,
        namespace: &str,
        extra: &[&[u8]],
    ) -> Result<Vec<Value>, StoreError> {
        let keys = self.keys(namespace);
        let (prefixes, done, meta) = (keys.job_prefixes(), keys.jobs_done(), keys.meta());
        let mut args: Vec<&[u8]> = prefixes.args().collect();
        args.extend_from_slice(extra);
        array(
            self.eval(script, &[done.as_bytes(), meta.as_bytes()], &args)
                .await?,
            "job reply",
        )
    }

    async fn state_script(
        &self,
        script: &redis::Script,
        namespace: &str,
        id: &str,
        what: &str,
    ) -> Result<StateCheck, StoreError> {
        let items = self
            .lease_script(script, namespace, &[id.as_bytes()])
            .await?;
        match items.first().and_then(text).as_deref() {
            Some("ok") => Ok(StateCheck::Done(Box::new(job(
                &reply::fields(&items[1..]),
                id,
            )?))),
            Some("missing") => Ok(StateCheck::Missing),
            Some("state") => Ok(StateCheck::WrongState(state_of(items.get(1), what)?)),
            _ => Err(StoreError::corrupt(what, "unexpected reply")),
        }
    }
}

/// Decodes a job hash. `what` names the record in errors.
pub fn job(map: &HashMap<String, Vec<u8>>, what: &str) -> Result<JobRecord, StoreError> {
    let get = |field: &str| -> &[u8] { map.get(field).map(Vec::as_slice).unwrap_or_default() };
    let text = |field: &str| -> Result<String, StoreError> {
        String::from_utf8(get(field).to_vec())
            .map_err(|_| StoreError::corrupt(what, format!("field {field} is not UTF-8")))
    };
    let opt_num = |field: &str| -> Result<Option<i64>, StoreError> {
        let t = text(field)?;
        if t.is_empty() {
            return Ok(None);
        }
        t.parse()
            .map(Some)
            .map_err(|_| StoreError::corrupt(what, format!("field {field} is not a number: {t:?}")))
    };
    let num = |field: &str| -> Result<i64, StoreError> {
        opt_num(field)?
            .ok_or_else(|| StoreError::corrupt(what, format!("field {field} is missing")))
    };
    let small = |field: &str| -> Result<u32, StoreError> {
        Ok(u32::try_from(opt_num(field)?.unwrap_or(0)).unwrap_or(0))
    };
    let headers: BTreeMap<String, String> = match text("headers")?.as_str() {
        "" => BTreeMap::new(),
        json => serde_json::from_str(json)
            .map_err(|e| StoreError::corrupt(what, format!("headers: {e}")))?,
    };
    let state = JobState::parse(&text("state")?)
        .ok_or_else(|| StoreError::corrupt(what, "unknown job state"))?;
    let backoff = Backoff {
        kind: if text("backoff")? == "fixed" {
            BackoffKind::Fixed
        } else {
            BackoffKind::Exponential
        },
        base_ms: opt_num("backoff_base_ms")?.unwrap_or(0),
        cap_ms: opt_num("backoff_cap_ms")?.unwrap_or(0),
        jitter: text("backoff_jitter")?.parse().unwrap_or(0.0),
    };
    Ok(JobRecord {
        id: text("id")?,
        queue: text("queue")?,
        name: text("name")?,
        payload: get("payload").to_vec(),
        headers,
        priority: i32::try_from(opt_num("priority")?.unwrap_or(0)).unwrap_or(0),
        state,
        attempts: small("attempts")?,
        max_attempts: small("max_attempts")?,
        backoff,
        lease_ms: opt_num("lease_ms")?.unwrap_or(0),
        errors: error_history(&text("errors")?),
        create_ms: num("created_ms")?,
        update_ms: opt_num("updated_ms")?.unwrap_or(0),
        run_at_ms: opt_num("run_at_ms")?,
        lease_until_ms: opt_num("lease_until")?,
        lease_token: text("token")?,
        worker: text("worker")?,
        finish_ms: opt_num("finished_ms")?,
        dedup_key: text("dedup_key")?,
        seq: opt_num("seq")?.unwrap_or(0),
    })
}

/// The JSON error history written by the scripts (cjson encodes an empty table as
/// `{}`; anything unreadable is shown as no history rather than failing the read).
fn error_history(json: &str) -> Vec<JobErrorEntry> {
    let Ok(serde_json::Value::Array(entries)) = serde_json::from_str(json) else {
        return Vec::new();
    };
    entries
        .iter()
        .map(|e| JobErrorEntry {
            attempt: e
                .get("attempt")
                .and_then(serde_json::Value::as_f64)
                .map_or(0, |a| a as u32),
            message: e
                .get("message")
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            at_ms: e
                .get("at")
                .and_then(serde_json::Value::as_f64)
                .map_or(0, |a| a as i64),
        })
        .collect()
}
