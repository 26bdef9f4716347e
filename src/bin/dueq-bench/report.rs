//! The bench's results: rows grouped by section, printed as a table and as JSON,
//! and the performance targets checked against them (targets.rs).

mod row;
mod targets;

use std::{fmt::Write as _, time::Duration};

use serde_json::{json, Map, Value};

pub(crate) use row::Row;
use targets::Target;

use crate::{env::Env, plan::Plan, procfs::machine_field, Result};

/// Every section a complete report has, in print order.
pub(crate) const SECTIONS: [&str; 16] = [
    "ceiling",
    "grpc",
    "consume",
    "security",
    "cluster",
    "claim_scaling",
    "peers",
    "longpoll",
    "memory",
    "migrate",
    "metrics",
    "dispatch",
    "flow",
    "deps",
    "console",
    "tenants",
];

/// Everything one run measured, with the machine it ran on and the targets checked.
#[derive(Debug, Default)]
pub(crate) struct Report {
    meta: Map<String, Value>,
    rows: Vec<Row>,
    notes: Vec<(String, String)>,
    targets: Vec<Target>,
    waiters: u64,
    sizes: Vec<u64>,
}

impl Report {
    // The report's date: a label for the run, not a decision of what is due.
    #[allow(clippy::disallowed_methods)]
    pub(crate) async fn new(plan: &Plan, env: &Env, argv: Vec<String>) -> Report {
        let mut meta = Map::new();
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0);
        meta.insert("command".into(), json!(argv.join(" ")));
        meta.insert("date_utc".into(), json!(chrono::Utc::now().to_rfc3339()));
        meta.insert("cores".into(), json!(cores));
        meta.insert(
            "cpu".into(),
            json!(machine_field("/proc/cpuinfo", "model name").await),
        );
        meta.insert(
            "mem_total".into(),
            json!(machine_field("/proc/meminfo", "MemTotal").await),
        );
        meta.insert("redis_version".into(), json!(env.redis_version));
        meta.insert("dueq_bin".into(), json!(env.dueq_bin.display().to_string()));
        meta.insert("own_redis".into(), json!(env.own_redis()));
        meta.insert("smoke".into(), json!(plan.smoke));
        meta.insert("duration_s".into(), json!(plan.duration.as_secs_f64()));
        meta.insert("concurrency".into(), json!(plan.concurrency));
        meta.insert("sizes".into(), json!(plan.sizes));
        meta.insert("waiters".into(), json!(plan.waiters));
        meta.insert("records".into(), json!(plan.records));
        meta.insert("migrate".into(), json!(plan.migrate));
        meta.insert("batch".into(), json!(plan.batch));
        meta.insert("prefill".into(), json!(plan.prefill));
        meta.insert("console_jobs".into(), json!(plan.console_jobs));
        meta.insert(
            "build".into(),
            json!(if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }),
        );
        Report {
            meta,
            waiters: plan.waiters,
            sizes: plan.sizes.clone(),
            ..Report::default()
        }
    }

    pub(crate) fn set_wall(&mut self, wall: Duration) {
        self.meta.insert("wall_s".into(), json!(wall.as_secs_f64()));
    }

    pub(crate) fn push(&mut self, row: Row) {
        self.rows.push(row);
    }

    pub(crate) fn note(&mut self, section: &str, note: impl Into<String>) {
        self.notes.push((section.into(), note.into()));
    }

    fn row(&self, section: &str, name: &str) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.section == section && r.name == name)
    }

    fn json(&self) -> Value {
        let mut sections = Map::new();
        for s in SECTIONS {
            let rows: Vec<Value> = self
                .rows
                .iter()
                .filter(|r| r.section == s)
                .map(Row::json)
                .collect();
            let notes: Vec<&String> = self
                .notes
                .iter()
                .filter(|(sec, _)| sec == s)
                .map(|(_, n)| n)
                .collect();
            sections.insert(s.into(), json!({ "rows": rows, "notes": notes }));
        }
        let targets: Vec<Value> = self
            .targets
            .iter()
            .map(|t| json!({ "target": t.what, "met": t.met, "detail": t.detail }))
            .collect();
        json!({ "meta": self.meta, "sections": sections, "targets": targets })
    }

    pub(crate) fn json_text(&self) -> Result<String> {
        Ok(serde_json::to_string_pretty(&self.json())?)
    }

    pub(crate) fn table(&self) -> String {
        let mut out = String::new();
        let m = |k: &str| {
            self.meta
                .get(k)
                .map(|v| v.to_string().trim_matches('"').to_owned())
                .unwrap_or_default()
        };
        let _ = writeln!(
            out,
            "dueq-bench  {}  build={} cores={} mem={} redis={} duration={}s concurrency={} wall={}s",
            m("date_utc"),
            m("build"),
            m("cores"),
            m("mem_total"),
            m("redis_version"),
            m("duration_s"),
            m("concurrency"),
            self.meta
                .get("wall_s")
                .and_then(Value::as_f64)
                .map(|w| format!("{w:.1}"))
                .unwrap_or_default(),
        );
        let f = |v: Option<f64>, prec: usize| match v {
            Some(v) => format!("{v:.prec$}"),
            None => "-".into(),
        };
        for s in SECTIONS {
            let _ = writeln!(out, "\n[{s}]");
            let _ = writeln!(
                out,
                "{:<44} {:>11} {:>9} {:>9} {:>9} {:>7}  notes",
                "measurement", "ops/s", "p50 ms", "p99 ms", "p999 ms", "ratio"
            );
            for r in self.rows.iter().filter(|r| r.section == s) {
                let _ = writeln!(
                    out,
                    "{:<44} {:>11} {:>9} {:>9} {:>9} {:>7}  {}",
                    r.name,
                    f(r.ops_s, 0),
                    f(r.p50_ms, 3),
                    f(r.p99_ms, 3),
                    f(r.p999_ms, 3),
                    f(r.ratio, 2),
                    r.note
                );
            }
            for (_, n) in self.notes.iter().filter(|(sec, _)| sec == s) {
                let _ = writeln!(out, "  note: {n}");
            }
        }
        let _ = writeln!(out, "\n[targets]");
        for t in &self.targets {
            let mark = match t.met {
                Some(true) => "MET   ",
                Some(false) => "MISSED",
                None => "n/a   ",
            };
            let _ = writeln!(out, "{mark} {:<72} {}", t.what, t.detail);
        }
        out
    }
}
