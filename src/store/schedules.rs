//! Schedule operations: one script (or one read) each.

use deadpool_redis::redis::Value;

use super::{
    keys::SCHEMA_VERSION,
    reply::{self, array, int, opt_int, text},
    scripts, Store, StoreError,
};
use crate::domain::{OccurrenceLease, ScheduleDef, ScheduleRecord, ScheduleStatus, TimingDef};

/// The slot after `next`: known, known to be none, or not computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    At(i64),
    End,
    Unknown,
}

impl Follow {
    fn arg(self) -> String {
        match self {
            Follow::At(ms) => ms.to_string(),
            Follow::End => "end".to_owned(),
            Follow::Unknown => String::new(),
        }
    }

    pub fn from_next(next: Option<i64>) -> Self {
        next.map_or(Follow::End, Follow::At)
    }
}

/// Next run and follow computed by the caller for a write.
#[derive(Debug, Clone, Copy)]
pub struct NextRun {
    pub next_ms: Option<i64>,
    pub follow: Follow,
}

/// A cron hint: the answer to a `Compute` reply.
#[derive(Debug, Clone)]
pub struct ClaimHint {
    pub id: String,
    pub revision: String,
    pub expected_next_ms: i64,
    pub next: NextRun,
    pub skipped: u64,
}

#[derive(Debug)]
pub enum ClaimReply {
    Claimed {
        now_ms: i64,
        due_ms: i64,
        skipped: u64,
        earliest_ms: Option<i64>,
        schedule: Box<ScheduleRecord>,
        /// Raw revision text of the record, for a follow-up `set_follow`.
        revision: String,
        follow_missing: bool,
        lease: Option<OccurrenceLease>,
    },
    /// A cron schedule is due; the caller must compute its next slot after `now_ms`.
    Compute {
        now_ms: i64,
        earliest_ms: Option<i64>,
        revision: String,
        next_ms: i64,
        schedule: Box<ScheduleRecord>,
    },
    Nothing {
        now_ms: i64,
        earliest_ms: Option<i64>,
    },
}

/// What `ack_occurrence` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AckOccurrenceReply {
    Acked,
    Missing,
    /// The token is not the current one; the record is `leased` (re-handed) or `acked`.
    Stale(String),
    Expired,
}

pub enum ResumeReply {
    Missing,
    Moved,
    Resumed(Box<ScheduleRecord>),
}

/// Candidates one claim call examines at most (bounds the script's work).
const CLAIM_CANDIDATES: &str = "32";
/// How long an acked occurrence record is kept, so a repeated ack says "acked".
const ACKED_OCCURRENCE_TTL_MS: &str = "86400000";

fn opt_arg(v: Option<i64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

fn record(items: &[Value], what: &str) -> Result<ScheduleRecord, StoreError> {
    reply::schedule(&reply::fields(items), what)
}

impl Store {
    pub async fn upsert_schedule(
        &self,
        namespace: &str,
        def: &ScheduleDef,
        next: NextRun,
    ) -> Result<(bool, ScheduleRecord), StoreError> {
        let keys = self.keys(namespace);
        let (kind, cron, every) = match &def.timing {
            TimingDef::Cron(expr) => ("cron", expr.clone(), String::new()),
            TimingDef::EveryMs(ms) => ("every", String::new(), ms.to_string()),
        };
        let headers = serde_json::to_string(&def.headers)
            .map_err(|e| StoreError::corrupt("headers", e.to_string()))?;
        let args: [Vec<u8>; 15] = [
            def.id.clone().into_bytes(),
            kind.into(),
            cron.into_bytes(),
            every.into_bytes(),
            def.timezone.clone().into_bytes(),
            opt_arg(def.start_ms).into_bytes(),
            opt_arg(def.end_ms).into_bytes(),
            def.run_limit.to_string().into_bytes(),
            def.job_name.clone().into_bytes(),
            def.payload.clone(),
            headers.into_bytes(),
            if def.paused {
                b"1".to_vec()
            } else {
                b"0".to_vec()
            },
            opt_arg(next.next_ms).into_bytes(),
            next.follow.arg().into_bytes(),
            SCHEMA_VERSION.to_string().into_bytes(),
        ];
        let key = keys.schedule(&def.id);
        let (due, ids, meta) = (keys.due(), keys.ids(), keys.meta());
        let items = array(
            self.eval(
                &scripts::UPSERT_SCHEDULE,
                &[due.as_bytes(), ids.as_bytes(), &key, meta.as_bytes()],
                &args.iter().map(Vec::as_slice).collect::<Vec<_>>(),
            )
            .await?,
            "upsert reply",
        )?;
        let created = items.first().and_then(int) == Some(1);
        Ok((
            created,
            record(items.get(1..).unwrap_or_default(), &def.id)?,
        ))
    }

    pub async fn get_schedule(
        &self,
        namespace: &str,
        id: &str,
    ) -> Result<Option<ScheduleRecord>, StoreError> {
        let keys = self.keys(namespace);
        let (key, meta, ids) = (keys.schedule(id), keys.meta(), keys.ids());
        let items = array(
            self.eval(
                &scripts::GET_SCHEDULE,
                &[&key, meta.as_bytes(), ids.as_bytes()],
                &[id.as_bytes()],
            )
            .await?,
            "get schedule reply",
        )?;
        if items.is_empty() {
            return Ok(None);
        }
        record(&items, id).map(Some)
    }

    pub async fn delete_schedule(&self, namespace: &str, id: &str) -> Result<bool, StoreError> {
        let keys = self.keys(namespace);
        let (due, ids, key, meta) = (keys.due(), keys.ids(), keys.schedule(id), keys.meta());
        let value = self
            .eval(
                &scripts::DELETE_SCHEDULE,
                &[due.as_bytes(), ids.as_bytes(), &key, meta.as_bytes()],
                &[id.as_bytes()],
            )
            .await?;
        Ok(int(&value) == Some(1))
    }

    pub async fn pause_schedule(
        &self,
        namespace: &str,
        id: &str,
    ) -> Result<Option<ScheduleRecord>, StoreError> {
        let keys = self.keys(namespace);
        let (due, key, ids, meta) = (keys.due(), keys.schedule(id), keys.ids(), keys.meta());
        let items = array(
            self.eval(
                &scripts::PAUSE_SCHEDULE,
                &[due.as_bytes(), &key, ids.as_bytes(), meta.as_bytes()],
                &[id.as_bytes()],
            )
            .await?,
            "pause reply",
        )?;
        if items.is_empty() {
            return Ok(None);
        }
        record(&items, id).map(Some)
    }

    pub async fn resume_schedule(
        &self,
        namespace: &str,
        id: &str,
        revision: u64,
        next: NextRun,
    ) -> Result<ResumeReply, StoreError> {
        let keys = self.keys(namespace);
        let (due, key, ids, meta) = (keys.due(), keys.schedule(id), keys.ids(), keys.meta());
        let (rev, next_ms, follow) = (
            revision.to_string(),
            opt_arg(next.next_ms),
            next.follow.arg(),
        );
        let items = array(
            self.eval(
                &scripts::RESUME_SCHEDULE,
                &[due.as_bytes(), &key, ids.as_bytes(), meta.as_bytes()],
                &[
                    id.as_bytes(),
                    rev.as_bytes(),
                    next_ms.as_bytes(),
                    follow.as_bytes(),
                ],
            )
            .await?,
            "resume reply",
        )?;
        match items.first().and_then(text).as_deref() {
            None => Ok(ResumeReply::Missing),
            Some("moved") => Ok(ResumeReply::Moved),
            Some("ok") => Ok(ResumeReply::Resumed(Box::new(record(&items[1..], id)?))),
            Some(other) => Err(StoreError::corrupt("resume reply", other.to_owned())),
        }
    }

    /// One page of schedules after `after` (exclusive). Returns the page and the id to
    /// continue after, if any.
    pub async fn list_schedules(
        &self,
        namespace: &str,
        after: &str,
        page_size: usize,
        status: Option<ScheduleStatus>,
    ) -> Result<(Vec<ScheduleRecord>, Option<String>), StoreError> {
        let keys = self.keys(namespace);
        // A filtered page may have to skip non-matching ids; bound how many per call.
        let budget = if status.is_some() {
            (page_size * 10).min(5000)
        } else {
            page_size
        };
        let (ids, prefix, meta) = (keys.ids(), keys.schedule_prefix(), keys.meta());
        let (page, budget, filter) = (
            page_size.to_string(),
            budget.to_string(),
            status.map(ScheduleStatus::as_str).unwrap_or(""),
        );
        let items = array(
            self.eval(
                &scripts::LIST_SCHEDULES,
                &[ids.as_bytes(), meta.as_bytes()],
                &[
                    prefix.as_bytes(),
                    after.as_bytes(),
                    page.as_bytes(),
                    filter.as_bytes(),
                    budget.as_bytes(),
                ],
            )
            .await?,
            "list reply",
        )?;
        let next = items.first().and_then(text).filter(|t| !t.is_empty());
        let mut records = Vec::new();
        let mut rest = items.get(2..).unwrap_or_default();
        while let Some((len, tail)) = rest.split_first() {
            let len = usize::try_from(int(len).unwrap_or(0)).unwrap_or(0);
            if tail.len() < len {
                return Err(StoreError::corrupt("list reply", "truncated"));
            }
            records.push(record(&tail[..len], "listed schedule")?);
            rest = &tail[len..];
        }
        Ok((records, next))
    }

    /// `lease`: (token, lease ms) for an at-least-once claim.
    pub async fn claim_due(
        &self,
        namespace: &str,
        hint: Option<&ClaimHint>,
        lease: Option<(&str, i64)>,
    ) -> Result<ClaimReply, StoreError> {
        let keys = self.keys(namespace);
        let (due, ids, meta) = (keys.due(), keys.ids(), keys.meta());
        let (prefix, leases) = (keys.schedule_prefix(), keys.occurrence_leases());
        let mut args: Vec<Vec<u8>> = vec![prefix.into_bytes(), CLAIM_CANDIDATES.into()];
        match hint {
            Some(h) => args.extend([
                h.id.clone().into_bytes(),
                h.revision.clone().into_bytes(),
                h.expected_next_ms.to_string().into_bytes(),
                opt_arg(h.next.next_ms).into_bytes(),
                h.next.follow.arg().into_bytes(),
                h.skipped.to_string().into_bytes(),
            ]),
            None => args.extend(std::iter::repeat_n(Vec::new(), 6)),
        }
        let (token, lease_ms) = match lease {
            Some((token, ms)) => (token.as_bytes().to_vec(), ms.to_string().into_bytes()),
            None => (Vec::new(), Vec::new()),
        };
        args.extend([
            lease_ms,
            token,
            namespace.as_bytes().to_vec(),
            keys.occurrence_prefix().into_bytes(),
        ]);
        let items = array(
            self.eval(
                &scripts::CLAIM_DUE,
                &[
                    due.as_bytes(),
                    leases.as_bytes(),
                    ids.as_bytes(),
                    meta.as_bytes(),
                ],
                &args.iter().map(Vec::as_slice).collect::<Vec<_>>(),
            )
            .await?,
            "claim reply",
        )?;
        let bad = || StoreError::corrupt("claim reply", "unexpected shape");
        let tag = items.first().and_then(text).ok_or_else(bad)?;
        let now_ms = items.get(1).and_then(int).ok_or_else(bad)?;
        match tag.as_str() {
            "claimed" => {
                let due_ms = items.get(2).and_then(int).ok_or_else(bad)?;
                let skipped = items.get(3).and_then(int).ok_or_else(bad)?;
                let earliest_ms = items.get(4).and_then(opt_int);
                let lease = match items.get(5).and_then(text) {
                    Some(token) if !token.is_empty() => Some(OccurrenceLease {
                        token,
                        deadline_ms: items.get(6).and_then(int).ok_or_else(bad)?,
                        attempt: u32::try_from(items.get(7).and_then(int).unwrap_or(1))
                            .unwrap_or(1),
                    }),
                    _ => None,
                };
                let fields = reply::fields(items.get(8..).unwrap_or_default());
                let schedule = reply::schedule(&fields, "claimed schedule")?;
                let revision = fields
                    .get("rev")
                    .map(|r| String::from_utf8_lossy(r).into_owned())
                    .unwrap_or_default();
                let follow_missing = fields.get("follow_ms").is_none_or(|f| f.is_empty())
                    && schedule.status == ScheduleStatus::Active
                    && matches!(schedule.def.timing, TimingDef::Cron(_));
                Ok(ClaimReply::Claimed {
                    now_ms,
                    due_ms,
                    skipped: u64::try_from(skipped).unwrap_or(0),
                    earliest_ms,
                    schedule: Box::new(schedule),
                    revision,
                    follow_missing,
                    lease,
                })
            }
            "compute" => Ok(ClaimReply::Compute {
                now_ms,
                earliest_ms: items.get(2).and_then(opt_int),
                revision: items.get(4).and_then(text).ok_or_else(bad)?,
                next_ms: items.get(5).and_then(int).ok_or_else(bad)?,
                schedule: Box::new(record(items.get(6..).unwrap_or_default(), "due schedule")?),
            }),
            "none" => Ok(ClaimReply::Nothing {
                now_ms,
                earliest_ms: items.get(2).and_then(opt_int),
            }),
            _ => Err(bad()),
        }
    }

    /// Records the precomputed slot after `next_ms` (compare-and-set on rev and next).
    pub async fn set_follow(
        &self,
        namespace: &str,
        id: &str,
        revision: &str,
        next_ms: i64,
        follow: Follow,
    ) -> Result<bool, StoreError> {
        let keys = self.keys(namespace);
        let (key, meta, ids) = (keys.schedule(id), keys.meta(), keys.ids());
        let (next, follow) = (next_ms.to_string(), follow.arg());
        let value = self
            .eval(
                &scripts::SET_FOLLOW,
                &[&key, meta.as_bytes(), ids.as_bytes()],
                &[revision.as_bytes(), next.as_bytes(), follow.as_bytes()],
            )
            .await?;
        Ok(int(&value) == Some(1))
    }

    pub async fn ack_occurrence(
        &self,
        namespace: &str,
        occurrence_id: &str,
        token: &str,
    ) -> Result<AckOccurrenceReply, StoreError> {
        let keys = self.keys(namespace);
        let (leases, prefix) = (keys.occurrence_leases(), keys.occurrence_prefix());
        let items = array(
            self.eval(
                &scripts::ACK_OCCURRENCE,
                &[leases.as_bytes()],
                &[
                    prefix.as_bytes(),
                    occurrence_id.as_bytes(),
                    token.as_bytes(),
                    ACKED_OCCURRENCE_TTL_MS.as_bytes(),
                ],
            )
            .await?,
            "ack occurrence reply",
        )?;
        Ok(match items.first().and_then(text).as_deref() {
            Some("ok") => AckOccurrenceReply::Acked,
            Some("missing") => AckOccurrenceReply::Missing,
            Some("expired") => AckOccurrenceReply::Expired,
            Some("stale") => {
                AckOccurrenceReply::Stale(items.get(1).and_then(text).unwrap_or_default())
            }
            _ => return Err(StoreError::corrupt("ack occurrence reply", "unexpected")),
        })
    }

    /// Redis now, how many entries are due now (schedules and expired occurrence
    /// leases), and the earliest score of either.
    pub async fn peek_due(&self, namespace: &str) -> Result<(i64, u64, Option<i64>), StoreError> {
        let keys = self.keys(namespace);
        let (due, leases) = (keys.due(), keys.occurrence_leases());
        let items = array(
            self.eval(
                &scripts::PEEK_DUE,
                &[due.as_bytes(), leases.as_bytes()],
                &[],
            )
            .await?,
            "peek reply",
        )?;
        let bad = || StoreError::corrupt("peek reply", "unexpected shape");
        let now = items.first().and_then(int).ok_or_else(bad)?;
        let count = items.get(1).and_then(int).ok_or_else(bad)?;
        Ok((
            now,
            u64::try_from(count).unwrap_or(0),
            items.get(2).and_then(opt_int),
        ))
    }
}
