//! Decoding script replies and schedule hashes into domain types.

use std::collections::{BTreeMap, HashMap};

use deadpool_redis::redis::Value;

use super::StoreError;
use crate::domain::{ScheduleDef, ScheduleRecord, ScheduleStatus, TimingDef};

/// The items of an array reply.
pub fn array(value: Value, what: &str) -> Result<Vec<Value>, StoreError> {
    match value {
        Value::Array(items) => Ok(items),
        Value::Nil => Ok(Vec::new()),
        other => Err(StoreError::corrupt(
            what,
            format!("expected an array, got {other:?}"),
        )),
    }
}

/// A reply item as bytes (bulk string, simple string or integer).
pub fn bytes(value: &Value) -> Option<Vec<u8>> {
    match value {
        Value::BulkString(b) => Some(b.clone()),
        Value::SimpleString(s) => Some(s.clone().into_bytes()),
        Value::Int(i) => Some(i.to_string().into_bytes()),
        Value::Okay => Some(b"OK".to_vec()),
        _ => None,
    }
}

pub fn text(value: &Value) -> Option<String> {
    bytes(value).and_then(|b| String::from_utf8(b).ok())
}

pub fn int(value: &Value) -> Option<i64> {
    match value {
        Value::Int(i) => Some(*i),
        other => text(other).and_then(|t| t.parse().ok()),
    }
}

/// An optional number: "" and nil mean none.
pub fn opt_int(value: &Value) -> Option<i64> {
    int(value)
}

/// Field/value pairs (an HGETALL reply flattened into a script reply) to a map.
pub fn fields(items: &[Value]) -> HashMap<String, Vec<u8>> {
    items
        .chunks_exact(2)
        .filter_map(|pair| Some((text(&pair[0])?, bytes(&pair[1])?)))
        .collect()
}

/// Decode a schedule hash. `what` names the record in errors.
pub fn schedule(map: &HashMap<String, Vec<u8>>, what: &str) -> Result<ScheduleRecord, StoreError> {
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

    let timing = match text("kind")?.as_str() {
        "cron" => TimingDef::Cron(text("cron")?),
        "every" => TimingDef::EveryMs(num("every_ms")?),
        other => return Err(StoreError::corrupt(what, format!("unknown kind {other:?}"))),
    };
    let headers: BTreeMap<String, String> = match text("headers")?.as_str() {
        "" => BTreeMap::new(),
        json => serde_json::from_str(json)
            .map_err(|e| StoreError::corrupt(what, format!("headers: {e}")))?,
    };
    let status = ScheduleStatus::parse(&text("status")?)
        .ok_or_else(|| StoreError::corrupt(what, "unknown status"))?;
    let non_negative = |v: i64| u64::try_from(v).unwrap_or(0);
    Ok(ScheduleRecord {
        def: ScheduleDef {
            id: text("id")?,
            timing,
            timezone: text("tz")?,
            start_ms: opt_num("start_ms")?,
            end_ms: opt_num("end_ms")?,
            run_limit: non_negative(opt_num("limit")?.unwrap_or(0)),
            job_name: text("job_name")?,
            payload: get("payload").to_vec(),
            headers,
            paused: status == ScheduleStatus::Paused,
        },
        status,
        run_count: non_negative(opt_num("runs")?.unwrap_or(0)),
        last_run_ms: opt_num("last_ms")?,
        next_run_ms: opt_num("next_ms")?,
        create_ms: num("created_ms")?,
        update_ms: opt_num("updated_ms")?.unwrap_or(0),
        revision: non_negative(opt_num("rev")?.unwrap_or(1)),
    })
}
