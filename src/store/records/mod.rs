//! Records the scripts return as field/value pairs, read through [`Fields`]: a
//! schedule (lua/lib/schedule.lua `sched_reply`, decoded by [`schedule`]). Strict: a
//! field that is missing, unparsable or out of range makes the record corrupt, never
//! a default; only a record's previous version, decoded as such, may lack a field
//! (see `schedule.rs`). A job record comes packed and has a decoder of its own
//! (`super::packed_job`).

mod schedule;

#[cfg(test)]
pub(crate) use schedule::field;
pub(crate) use schedule::{claimed_schedule, schedule, target_json};

use std::collections::{BTreeMap, HashMap};

use super::StoreError;

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

    pub(crate) fn corrupt(&self, detail: impl Into<String>) -> StoreError {
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

    /// `read` of a field a record's version may lack: `None` when it is absent. Only
    /// the decoder of a previous version calls this (a current record has every field).
    pub(crate) fn present<T>(
        &self,
        name: &str,
        read: impl FnOnce(&Self, &str) -> Result<T, StoreError>,
    ) -> Result<Option<T>, StoreError> {
        if self.map.contains_key(name) {
            read(self, name).map(Some)
        } else {
            Ok(None)
        }
    }

    /// A JSON object of strings ("" for none).
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
