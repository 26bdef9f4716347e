//! Decoding the records the scripts return as field/value pairs (schedules; see
//! `sched_fields` in lua/lib/schedule.lua) into domain types. Strict: a field that is missing, unparsable or
//! out of range makes the record corrupt, never a default.

use std::collections::{BTreeMap, HashMap};

use super::StoreError;
use crate::domain::{
    catchup_parse, Follow, Overlap, ScheduleDef, ScheduleRecord, ScheduleStatus, SkipCounts,
    TimingDef,
};
use crate::timing::{CatchUp, CatchUpRule};

/// A record's fields by name, with typed, strict reads.
#[derive(Debug, Clone)]
pub(crate) struct Fields {
    map: HashMap<String, Vec<u8>>,
    /// Names the record in errors.
    what: String,
}

impl Fields {
    pub(crate) fn new(what: impl Into<String>) -> Self {
        Fields {
            map: HashMap::new(),
            what: what.into(),
        }
    }

    pub(crate) fn insert(&mut self, name: String, value: Vec<u8>) {
        self.map.insert(name, value);
    }

    /// Names the record in errors from now on (its id, once known).
    pub(crate) fn named(mut self, what: impl Into<String>) -> Self {
        self.what = what.into();
        self
    }

    /// The raw fields, for a foreign record (an import source) decoded elsewhere.
    pub(crate) fn into_map(self) -> HashMap<String, Vec<u8>> {
        self.map
    }

    fn corrupt(&self, detail: impl Into<String>) -> StoreError {
        StoreError::corrupt(&self.what, detail)
    }

    pub(crate) fn bytes(&self, name: &str) -> Result<&[u8], StoreError> {
        self.map
            .get(name)
            .map(Vec::as_slice)
            .ok_or_else(|| self.corrupt(format!("field {name} is missing")))
    }

    pub(crate) fn text(&self, name: &str) -> Result<String, StoreError> {
        String::from_utf8(self.bytes(name)?.to_vec())
            .map_err(|_| self.corrupt(format!("field {name} is not UTF-8")))
    }

    /// A number, or `None` when the field is "" (unset).
    pub(crate) fn opt_i64(&self, name: &str) -> Result<Option<i64>, StoreError> {
        let text = self.text(name)?;
        if text.is_empty() {
            return Ok(None);
        }
        text.parse()
            .map(Some)
            .map_err(|_| self.corrupt(format!("field {name} is not a number: {text:?}")))
    }

    pub(crate) fn i64(&self, name: &str) -> Result<i64, StoreError> {
        self.opt_i64(name)?
            .ok_or_else(|| self.corrupt(format!("field {name} is missing")))
    }

    /// A number that must fit `T` (a count, a priority, an attempt number).
    pub(crate) fn int<T: TryFrom<i64>>(&self, name: &str) -> Result<T, StoreError> {
        let n = self.i64(name)?;
        T::try_from(n).map_err(|_| self.corrupt(format!("field {name} is out of range: {n}")))
    }

    /// A word from a closed set.
    pub(crate) fn word<T>(
        &self,
        name: &str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Result<T, StoreError> {
        let text = self.text(name)?;
        parse(&text).ok_or_else(|| self.corrupt(format!("field {name} is unknown: {text:?}")))
    }

    /// A JSON object of strings ("" for none).
    /// Whether the record has the field (fields added later are absent from records
    /// copied before them, such as a leased occurrence's copy of its schedule).
    pub(crate) fn has(&self, name: &str) -> bool {
        self.map.contains_key(name)
    }

    pub(crate) fn headers(&self, name: &str) -> Result<BTreeMap<String, String>, StoreError> {
        match self.text(name)?.as_str() {
            "" => Ok(BTreeMap::new()),
            json => {
                serde_json::from_str(json).map_err(|e| self.corrupt(format!("field {name}: {e}")))
            }
        }
    }
}

/// Headers as records store them: a JSON object of strings.
pub(crate) fn headers_json(headers: &BTreeMap<String, String>) -> String {
    let object: serde_json::Map<String, serde_json::Value> = headers
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
        .collect();
    serde_json::Value::Object(object).to_string()
}

/// A schedule record (lua/lib/schedule.lua `sched_fields`).
pub(crate) fn schedule(f: &Fields) -> Result<ScheduleRecord, StoreError> {
    let timing = match f.text("kind")?.as_str() {
        "cron" => TimingDef::Cron(f.text("cron")?),
        "every" => TimingDef::EveryMs(f.i64("every_ms")?),
        other => return Err(f.corrupt(format!("field kind is unknown: {other:?}"))),
    };
    let status = f.word("status", ScheduleStatus::parse)?;
    let follow = match f.text("follow_ms")?.as_str() {
        "" => Follow::Unknown,
        "end" => Follow::End,
        _ => Follow::At(f.i64("follow_ms")?),
    };
    // Policies (issue 17): absent in copies made before them, which read as defaults.
    let catchup = if f.has("catchup") {
        let limit: u32 = f.int("catchup_limit")?;
        CatchUpRule {
            policy: f.word("catchup", |w| catchup_parse(w, limit))?,
            window_ms: f.opt_i64("window_ms")?,
        }
    } else {
        CatchUpRule {
            policy: CatchUp::One,
            window_ms: None,
        }
    };
    let skipped = if f.has("sk_catchup") {
        SkipCounts {
            catchup: f.int("sk_catchup")?,
            window: f.int("sk_window")?,
            overlap: f.int("sk_overlap")?,
        }
    } else {
        SkipCounts::default()
    };
    Ok(ScheduleRecord {
        def: ScheduleDef {
            id: f.text("id")?,
            timing,
            timezone: f.text("tz")?,
            start_ms: f.opt_i64("start_ms")?,
            end_ms: f.opt_i64("end_ms")?,
            run_limit: f.int("limit")?,
            job_name: f.text("job_name")?,
            payload: f.bytes("payload")?.to_vec(),
            headers: f.headers("headers")?,
            paused: status == ScheduleStatus::Paused,
            catchup,
            offset_ms: if f.has("offset_ms") {
                f.opt_i64("offset_ms")?
            } else {
                None
            },
            overlap: if f.has("overlap") {
                f.word("overlap", Overlap::parse)?
            } else {
                Overlap::AllowAll
            },
            max_attempts: if f.has("max_attempts") {
                f.int("max_attempts")?
            } else {
                0
            },
            jitter_ms: if f.has("jitter_ms") {
                f.i64("jitter_ms")?
            } else {
                0
            },
        },
        buffered_ms: if f.has("buffered_ms") {
            f.opt_i64("buffered_ms")?
        } else {
            None
        },
        trigger_ms: if f.has("trigger_ms") {
            f.opt_i64("trigger_ms")?
        } else {
            None
        },
        recent_runs: Vec::new(),
        backfill_ms: if f.has("backfill_ms") {
            f.opt_i64("backfill_ms")?
        } else {
            None
        },
        status,
        run_count: f.int("runs")?,
        last_run_ms: f.opt_i64("last_ms")?,
        next_run_ms: f.opt_i64("next_ms")?,
        create_ms: f.i64("created_ms")?,
        update_ms: f.opt_i64("updated_ms")?.unwrap_or(0),
        revision: f.int("rev")?,
        follow,
        skipped,
        pause_note: if f.has("pause_note") {
            f.text("pause_note")?
        } else {
            String::new()
        },
    })
}
