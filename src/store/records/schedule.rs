//! A schedule record as a reply carries it: field/value pairs (lua/lib/schedule.lua
//! `sched_fields`, the names in [`field`]), decoded into a [`ScheduleRecord`].
//!
//! Versions, after garage's `migrate::Migrate`: a reply puts a marker before every
//! record a script loaded (lib/schedule.lua `sched_reply`: `schema` = the schema its
//! scripts keep, [`SCHEDULE_SCHEMA`]). The decoder reads the marker first and decodes
//! that version, [`Marked`], strictly: every field present. A record without the
//! marker is the previous version, [`Unmarked`]: a leased occurrence's copy of its
//! schedule, which claim_due.lua re-hands as the build that claimed it stored it, so
//! the fields issue 17 added after schema 2's (policies, skip counts, pause note,
//! trigger, backfill, jitter) may be absent. The copy is stored without a marker and
//! stays so (the stored layout does not change); [`Migrate::migrate`] converts it,
//! and is the one place where an absent field becomes its default. Issue 30 added
//! `target` (lib/schedule.lua policies entry 17, the JSON [`target_json`] writes; ""
//! for none) to what a marked record carries; the marker stays 3, because the stored
//! record of a schedule without a target is unchanged (no Migrate step), and an
//! unmarked copy (an occurrence's: never a target schedule's) reads it as none.

use super::{Fields, StoreError};
use crate::domain::{
    catchup_parse, Backoff, BackoffKind, EnqueueTarget, Follow, Overlap, ScheduleDef,
    ScheduleRecord, ScheduleStatus, SkipCounts, TimingDef, SCHEDULE_SCHEMA,
};
use crate::timing::CatchUpRule;

// The fields a schema-3 script replies with are `Marked`'s. A schema that changes the
// field list needs a version of its own, with `Marked` as its `Previous`.
const _: () = assert!(SCHEDULE_SCHEMA == 3, "Marked reads schema 3's fields");

/// Declares the field names as constants and, for the test that holds them to
/// schedule.lua's `sched_fields`, as a list in its order.
macro_rules! names {
    ($($name:ident = $text:literal,)*) => {
        $(pub(crate) const $name: &str = $text;)*
        /// Every field, in `sched_fields`' order.
        #[cfg(test)]
        pub(crate) const ALL: &[&str] = &[$($text),*];
    };
}

/// The names of a schedule's fields (lib/schedule.lua `sched_fields`; a library test
/// holds the two lists equal).
pub(crate) mod field {
    /// The version marker before a record's fields (lib/schedule.lua `SCHED_MARKER`).
    pub(crate) const MARKER: &str = "schema";

    names! {
        ID = "id",
        KIND = "kind",
        CRON = "cron",
        EVERY_MS = "every_ms",
        TZ = "tz",
        START_MS = "start_ms",
        END_MS = "end_ms",
        LIMIT = "limit",
        JOB_NAME = "job_name",
        PAYLOAD = "payload",
        HEADERS = "headers",
        STATUS = "status",
        REV = "rev",
        RUNS = "runs",
        CREATED_MS = "created_ms",
        UPDATED_MS = "updated_ms",
        LAST_MS = "last_ms",
        NEXT_MS = "next_ms",
        FOLLOW_MS = "follow_ms",
        CATCHUP = "catchup",
        CATCHUP_LIMIT = "catchup_limit",
        WINDOW_MS = "window_ms",
        SK_CATCHUP = "sk_catchup",
        SK_WINDOW = "sk_window",
        SK_OVERLAP = "sk_overlap",
        PAUSE_NOTE = "pause_note",
        OFFSET_MS = "offset_ms",
        OVERLAP = "overlap",
        MAX_ATTEMPTS = "max_attempts",
        BUFFERED_MS = "buffered_ms",
        TRIGGER_MS = "trigger_ms",
        BACKFILL_MS = "backfill_ms",
        JITTER_MS = "jitter_ms",
        TARGET = "target",
    }
}

/// A schedule's record from the fields of a record a script loaded: the current
/// version, marked (a record without the marker is corrupt here).
pub(crate) fn schedule(f: &Fields) -> Result<ScheduleRecord, StoreError> {
    match marker(f)? {
        Some(marker) => Marked::read_marked(f, marker).map(Marked::into_record),
        None => Err(f.corrupt("no version marker")),
    }
}

/// A claimed schedule: a record the claim loaded (marked), or a re-handed
/// occurrence's copy (unmarked: the previous version, converted).
pub(crate) fn claimed_schedule(f: &Fields) -> Result<ScheduleRecord, StoreError> {
    Marked::decode(f).map(Marked::into_record)
}

/// The version marker, read before any field (`None`: the record has none).
fn marker(f: &Fields) -> Result<Option<u32>, StoreError> {
    f.present(field::MARKER, Fields::int::<u32>)
}

/// The first version of a record: read without a marker.
trait Initial: Sized {
    fn read(f: &Fields) -> Result<Self, StoreError>;
}

/// A version a marker announces, converted from the version before it.
trait Migrate: Sized {
    /// The marker's value that announces this version.
    const VERSION_MARKER: u32;
    /// The version of a record that comes without the marker.
    type Previous: Initial;

    /// Reads this version (every field it has is required).
    fn read(f: &Fields) -> Result<Self, StoreError>;

    /// This version from the previous one: where an absent field gets its default.
    fn migrate(previous: Self::Previous) -> Self;

    /// A record in this version or the previous one, as its marker (read first) says;
    /// never guessed from which fields it has.
    fn decode(f: &Fields) -> Result<Self, StoreError> {
        match marker(f)? {
            Some(marker) => Self::read_marked(f, marker),
            None => Self::Previous::read(f).map(Self::migrate),
        }
    }

    /// A record that came with `marker`: this version, or corrupt.
    fn read_marked(f: &Fields, marker: u32) -> Result<Self, StoreError> {
        if marker == Self::VERSION_MARKER {
            Self::read(f)
        } else {
            Err(f.corrupt(format!(
                "version marker {marker}: this build reads {}",
                Self::VERSION_MARKER
            )))
        }
    }
}

/// A record a script loaded and replied with, after the marker: every field.
struct Marked {
    base: Base,
    policies: Policies,
}

/// An occurrence's copy of its schedule, without a marker: schema 2's fields, and
/// those issue 17 added only as far as the build that wrote it knew them.
struct Unmarked {
    base: Base,
    policies: PartialPolicies,
}

impl Migrate for Marked {
    const VERSION_MARKER: u32 = SCHEDULE_SCHEMA;
    type Previous = Unmarked;

    fn read(f: &Fields) -> Result<Self, StoreError> {
        Ok(Marked {
            base: Base::read(f)?,
            policies: Policies::read(f)?,
        })
    }

    fn migrate(previous: Unmarked) -> Self {
        let p = previous.policies;
        Marked {
            base: previous.base,
            policies: Policies {
                catchup: p.catchup.unwrap_or_default(),
                skipped: p.skipped.unwrap_or_default(),
                pause_note: p.pause_note.unwrap_or_default(),
                offset_ms: p.offset_ms.flatten(),
                overlap: p.overlap.unwrap_or_default(),
                max_attempts: p.max_attempts.unwrap_or(0),
                jitter_ms: p.jitter_ms.unwrap_or(0),
                target: p.target.flatten(),
                buffered_ms: p.buffered_ms.flatten(),
                trigger_ms: p.trigger_ms.flatten(),
                backfill_ms: p.backfill_ms.flatten(),
            },
        }
    }
}

impl Initial for Unmarked {
    fn read(f: &Fields) -> Result<Self, StoreError> {
        let policies = PartialPolicies {
            catchup: f.present(field::CATCHUP, |f, _| catchup(f))?,
            skipped: f.present(field::SK_CATCHUP, |f, _| skipped(f))?,
            pause_note: f.present(field::PAUSE_NOTE, Fields::text)?,
            offset_ms: f.present(field::OFFSET_MS, Fields::opt_i64)?,
            overlap: f.present(field::OVERLAP, |f, name| f.word(name, Overlap::parse))?,
            max_attempts: f.present(field::MAX_ATTEMPTS, Fields::int)?,
            jitter_ms: f.present(field::JITTER_MS, Fields::i64)?,
            target: f.present(field::TARGET, target)?,
            buffered_ms: f.present(field::BUFFERED_MS, Fields::opt_i64)?,
            trigger_ms: f.present(field::TRIGGER_MS, Fields::opt_i64)?,
            backfill_ms: f.present(field::BACKFILL_MS, Fields::opt_i64)?,
        };
        Ok(Unmarked {
            base: Base::read(f)?,
            policies,
        })
    }
}

/// The fields every version has (schema 2's).
struct Base {
    id: String,
    timing: TimingDef,
    timezone: String,
    start_ms: Option<i64>,
    end_ms: Option<i64>,
    run_limit: u64,
    job_name: String,
    payload: Vec<u8>,
    headers: std::collections::BTreeMap<String, String>,
    status: ScheduleStatus,
    revision: u64,
    run_count: u64,
    create_ms: i64,
    update_ms: i64,
    last_run_ms: Option<i64>,
    next_run_ms: Option<i64>,
    follow: Follow,
}

impl Base {
    fn read(f: &Fields) -> Result<Self, StoreError> {
        // Both are always written, the one the kind does not use as "".
        let (cron, every_ms) = (f.text(field::CRON)?, f.opt_i64(field::EVERY_MS)?);
        let timing = match (f.text(field::KIND)?.as_str(), every_ms) {
            ("cron", _) => TimingDef::Cron(cron),
            ("every", Some(ms)) => TimingDef::EveryMs(ms),
            ("every", None) => return Err(f.corrupt("field every_ms is missing")),
            (other, _) => return Err(f.corrupt(format!("field kind is unknown: {other:?}"))),
        };
        let follow = match f.text(field::FOLLOW_MS)?.as_str() {
            "" => Follow::Unknown,
            "end" => Follow::End,
            _ => Follow::At(f.i64(field::FOLLOW_MS)?),
        };
        Ok(Base {
            id: f.text(field::ID)?,
            timing,
            timezone: f.text(field::TZ)?,
            start_ms: f.opt_i64(field::START_MS)?,
            end_ms: f.opt_i64(field::END_MS)?,
            run_limit: f.int(field::LIMIT)?,
            job_name: f.text(field::JOB_NAME)?,
            payload: f.bytes(field::PAYLOAD)?.to_vec(),
            headers: f.headers(field::HEADERS)?,
            status: f.word(field::STATUS, ScheduleStatus::parse)?,
            revision: f.int(field::REV)?,
            run_count: f.int(field::RUNS)?,
            create_ms: f.i64(field::CREATED_MS)?,
            // "" (never updated: a record Migrate brought from schema 1, which kept no
            // such time) is 0, as the API shows an unset time.
            update_ms: f.opt_i64(field::UPDATED_MS)?.unwrap_or(0),
            last_run_ms: f.opt_i64(field::LAST_MS)?,
            next_run_ms: f.opt_i64(field::NEXT_MS)?,
            follow,
        })
    }
}

/// The fields issue 17 added.
struct Policies {
    catchup: CatchUpRule,
    skipped: SkipCounts,
    pause_note: String,
    offset_ms: Option<i64>,
    overlap: Overlap,
    max_attempts: u32,
    jitter_ms: i64,
    target: Option<EnqueueTarget>,
    buffered_ms: Option<i64>,
    trigger_ms: Option<i64>,
    backfill_ms: Option<i64>,
}

/// [`Policies`] as an unmarked copy has them: `None` where it lacks the field.
struct PartialPolicies {
    catchup: Option<CatchUpRule>,
    skipped: Option<SkipCounts>,
    pause_note: Option<String>,
    offset_ms: Option<Option<i64>>,
    overlap: Option<Overlap>,
    max_attempts: Option<u32>,
    jitter_ms: Option<i64>,
    target: Option<Option<EnqueueTarget>>,
    buffered_ms: Option<Option<i64>>,
    trigger_ms: Option<Option<i64>>,
    backfill_ms: Option<Option<i64>>,
}

impl Policies {
    fn read(f: &Fields) -> Result<Self, StoreError> {
        Ok(Policies {
            catchup: catchup(f)?,
            skipped: skipped(f)?,
            pause_note: f.text(field::PAUSE_NOTE)?,
            offset_ms: f.opt_i64(field::OFFSET_MS)?,
            overlap: f.word(field::OVERLAP, Overlap::parse)?,
            max_attempts: f.int(field::MAX_ATTEMPTS)?,
            jitter_ms: f.i64(field::JITTER_MS)?,
            target: target(f, field::TARGET)?,
            buffered_ms: f.opt_i64(field::BUFFERED_MS)?,
            trigger_ms: f.opt_i64(field::TRIGGER_MS)?,
            backfill_ms: f.opt_i64(field::BACKFILL_MS)?,
        })
    }
}

/// The catch-up policy, its limit and window (written together).
fn catchup(f: &Fields) -> Result<CatchUpRule, StoreError> {
    let limit: u32 = f.int(field::CATCHUP_LIMIT)?;
    Ok(CatchUpRule {
        policy: f.word(field::CATCHUP, |w| catchup_parse(w, limit))?,
        window_ms: f.opt_i64(field::WINDOW_MS)?,
    })
}

/// A schedule's target as a record keeps it (lib/schedule.lua position 17, the JSON
/// [`target_json`] writes; "" for none).
fn target(f: &Fields, name: &str) -> Result<Option<EnqueueTarget>, StoreError> {
    let raw = f.bytes(name)?;
    if raw.is_empty() {
        return Ok(None);
    }
    let bad = |why: &str| f.corrupt(format!("field {name}: {why}"));
    let v: serde_json::Value =
        serde_json::from_slice(raw).map_err(|e| bad(&format!("not JSON: {e}")))?;
    let int = |key: &str| v.get(key).and_then(serde_json::Value::as_i64);
    let text = |key: &str| v.get(key).and_then(serde_json::Value::as_str);
    let kind = match text("backoff") {
        Some("fixed") => BackoffKind::Fixed,
        Some("exp") => BackoffKind::Exponential,
        _ => return Err(bad("backoff kind")),
    };
    let mut headers = std::collections::BTreeMap::new();
    if let Some(object) = v.get("headers").and_then(serde_json::Value::as_object) {
        for (k, value) in object {
            let value = value.as_str().ok_or_else(|| bad("a header is not text"))?;
            headers.insert(k.clone(), value.to_owned());
        }
    }
    let (Some(queue), Some(priority), Some(max_attempts), Some(base_ms), Some(cap_ms)) = (
        text("queue"),
        int("priority"),
        int("max_attempts"),
        int("base_ms"),
        int("cap_ms"),
    ) else {
        return Err(bad("a field is missing"));
    };
    let jitter = text("jitter")
        .and_then(|j| j.parse::<f64>().ok())
        .filter(|j| (0.0..=1.0).contains(j))
        .ok_or_else(|| bad("jitter"))?;
    Ok(Some(EnqueueTarget {
        queue: queue.to_owned(),
        priority: i32::try_from(priority).map_err(|_| bad("priority"))?,
        max_attempts: u32::try_from(max_attempts).map_err(|_| bad("max_attempts"))?,
        backoff: Backoff {
            kind,
            base_ms,
            cap_ms,
            jitter,
        },
        headers,
        lease_ms: int("lease_ms").ok_or_else(|| bad("lease_ms"))?,
    }))
}

/// A target as the record keeps it and lua/dispatch_due.lua reads it (cjson): a JSON
/// object; the jitter as text, as the job record keeps it (lib/job.lua job_save).
pub(crate) fn target_json(t: &EnqueueTarget) -> String {
    serde_json::json!({
        "queue": t.queue,
        "priority": t.priority,
        "max_attempts": t.max_attempts,
        "backoff": t.backoff.kind.as_str(),
        "base_ms": t.backoff.base_ms,
        "cap_ms": t.backoff.cap_ms,
        "jitter": t.backoff.jitter.to_string(),
        "lease_ms": t.lease_ms,
        "headers": t.headers,
    })
    .to_string()
}

/// The skip counters (written together).
fn skipped(f: &Fields) -> Result<SkipCounts, StoreError> {
    Ok(SkipCounts {
        catchup: f.int(field::SK_CATCHUP)?,
        window: f.int(field::SK_WINDOW)?,
        overlap: f.int(field::SK_OVERLAP)?,
    })
}

impl Marked {
    fn into_record(self) -> ScheduleRecord {
        let Marked { base, policies } = self;
        ScheduleRecord {
            def: ScheduleDef {
                id: base.id,
                timing: base.timing,
                timezone: base.timezone,
                start_ms: base.start_ms,
                end_ms: base.end_ms,
                run_limit: base.run_limit,
                job_name: base.job_name,
                payload: base.payload,
                headers: base.headers,
                paused: base.status == ScheduleStatus::Paused,
                catchup: policies.catchup,
                offset_ms: policies.offset_ms,
                overlap: policies.overlap,
                max_attempts: policies.max_attempts,
                jitter_ms: policies.jitter_ms,
                target: policies.target,
            },
            status: base.status,
            run_count: base.run_count,
            last_run_ms: base.last_run_ms,
            next_run_ms: base.next_run_ms,
            create_ms: base.create_ms,
            update_ms: base.update_ms,
            revision: base.revision,
            follow: base.follow,
            skipped: policies.skipped,
            pause_note: policies.pause_note,
            buffered_ms: policies.buffered_ms,
            trigger_ms: policies.trigger_ms,
            backfill_ms: policies.backfill_ms,
            recent_runs: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests;
