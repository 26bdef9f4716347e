//! One measurement of the report: a table line, a JSON object, and named numbers
//! the target checks read.

use serde_json::{json, Map, Value};

use crate::load::Stats;

/// One measurement; `section` is one of `SECTIONS`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Row {
    pub(crate) section: String,
    pub(crate) name: String,
    pub(crate) ops_s: Option<f64>,
    pub(crate) p50_ms: Option<f64>,
    pub(crate) p99_ms: Option<f64>,
    pub(crate) p999_ms: Option<f64>,
    pub(crate) ratio: Option<f64>,
    /// Free text for the table's last column.
    pub(crate) note: String,
    /// Named numbers, for JSON and for the target checks.
    pub(crate) extra: Map<String, Value>,
}

impl Row {
    pub(crate) fn new(section: &str, name: impl Into<String>) -> Row {
        Row {
            section: section.into(),
            name: name.into(),
            ..Row::default()
        }
    }

    /// Throughput and latency from a load run.
    pub(crate) fn stats(section: &str, name: impl Into<String>, s: &Stats) -> Row {
        let mut row = Row::new(section, name);
        row.ops_s = Some(s.ops_s());
        row.p50_ms = Some(s.p50_ms);
        row.p99_ms = Some(s.p99_ms);
        row.p999_ms = Some(s.p999_ms);
        row.extra.insert("calls".into(), json!(s.calls));
        row.extra.insert("items".into(), json!(s.items));
        row
    }

    /// Latency only (sequential samples).
    pub(crate) fn latency(section: &str, name: impl Into<String>, s: &Stats) -> Row {
        let mut row = Row::stats(section, name, s);
        row.ops_s = None;
        row
    }

    pub(crate) fn note(mut self, note: impl Into<String>) -> Row {
        self.note = note.into();
        self
    }

    /// Adds to the note, after a "; ".
    pub(crate) fn and_note(mut self, more: impl AsRef<str>) -> Row {
        if !self.note.is_empty() {
            self.note.push_str("; ");
        }
        self.note.push_str(more.as_ref());
        self
    }

    pub(crate) fn with(mut self, key: &str, value: impl Into<Value>) -> Row {
        self.extra.insert(key.into(), value.into());
        self
    }

    pub(super) fn json(&self) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), json!(self.name));
        for (k, v) in [
            ("ops_per_s", self.ops_s),
            ("p50_ms", self.p50_ms),
            ("p99_ms", self.p99_ms),
            ("p999_ms", self.p999_ms),
            ("ratio_to_ceiling", self.ratio),
        ] {
            if let Some(v) = v {
                m.insert(k.into(), json!(v));
            }
        }
        if !self.note.is_empty() {
            m.insert("note".into(), json!(self.note));
        }
        for (k, v) in &self.extra {
            m.insert(k.clone(), v.clone());
        }
        Value::Object(m)
    }
}
