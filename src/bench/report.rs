//! The bench's results: rows grouped by section, printed as a table and as JSON,
//! and the targets checked against them.

use std::{fmt::Write as _, time::Duration};

use serde_json::{json, Map, Value};

use super::{env::Env, load::Stats, Plan, Result};

/// Every section a complete report has, in print order.
pub const SECTIONS: [&str; 7] = [
    "ceiling",
    "grpc",
    "claim_scaling",
    "peers",
    "longpoll",
    "memory",
    "migrate",
];

#[derive(Debug, Clone, Default)]
pub struct Row {
    pub section: String,
    pub name: String,
    pub ops_s: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub p999_ms: Option<f64>,
    pub ratio: Option<f64>,
    /// Free text for the table's last column.
    pub note: String,
    /// Named numbers, for JSON and for the target checks.
    pub extra: Map<String, Value>,
}

impl Row {
    pub fn new(section: &str, name: impl Into<String>) -> Row {
        Row {
            section: section.into(),
            name: name.into(),
            ..Row::default()
        }
    }

    /// Throughput and latency from a load run.
    pub fn stats(section: &str, name: impl Into<String>, s: &Stats) -> Row {
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
    pub fn latency(section: &str, name: impl Into<String>, s: &Stats) -> Row {
        let mut row = Row::stats(section, name, s);
        row.ops_s = None;
        row
    }

    pub fn note(mut self, note: impl Into<String>) -> Row {
        self.note = note.into();
        self
    }

    /// Adds to the note, after a "; ".
    pub fn and_note(mut self, more: impl AsRef<str>) -> Row {
        if !self.note.is_empty() {
            self.note.push_str("; ");
        }
        self.note.push_str(more.as_ref());
        self
    }

    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Row {
        self.extra.insert(key.into(), value.into());
        self
    }

    fn json(&self) -> Value {
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

#[derive(Debug, Clone)]
pub struct Target {
    pub what: String,
    /// None: not measured in this run.
    pub met: Option<bool>,
    pub detail: String,
}

#[derive(Debug, Default)]
pub struct Report {
    meta: Map<String, Value>,
    rows: Vec<Row>,
    notes: Vec<(String, String)>,
    targets: Vec<Target>,
    waiters: u64,
    sizes: Vec<u64>,
}

fn proc_field(file: &str, field: &str) -> String {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_default()
}

impl Report {
    pub fn new(plan: &Plan, env: &Env, argv: Vec<String>) -> Report {
        let mut meta = Map::new();
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0);
        meta.insert("command".into(), json!(argv.join(" ")));
        meta.insert("date_utc".into(), json!(chrono::Utc::now().to_rfc3339()));
        meta.insert("cores".into(), json!(cores));
        meta.insert(
            "cpu".into(),
            json!(proc_field("/proc/cpuinfo", "model name")),
        );
        meta.insert(
            "mem_total".into(),
            json!(proc_field("/proc/meminfo", "MemTotal")),
        );
        meta.insert("redis_version".into(), json!(env.redis_version));
        meta.insert("own_redis".into(), json!(env.own_redis()));
        meta.insert("smoke".into(), json!(plan.smoke));
        meta.insert("duration_s".into(), json!(plan.duration.as_secs_f64()));
        meta.insert("concurrency".into(), json!(plan.concurrency));
        meta.insert("sizes".into(), json!(plan.sizes));
        meta.insert("waiters".into(), json!(plan.waiters));
        meta.insert("records".into(), json!(plan.records));
        meta.insert("migrate".into(), json!(plan.migrate));
        meta.insert("batch".into(), json!(plan.batch));
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

    pub fn set_wall(&mut self, wall: Duration) {
        self.meta.insert("wall_s".into(), json!(wall.as_secs_f64()));
    }

    pub fn push(&mut self, row: Row) {
        self.rows.push(row);
    }

    pub fn note(&mut self, section: &str, note: impl Into<String>) {
        self.notes.push((section.into(), note.into()));
    }

    pub fn row(&self, section: &str, name: &str) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.section == section && r.name == name)
    }

    fn extra(&self, section: &str, name: &str, key: &str) -> Option<f64> {
        self.row(section, name)
            .and_then(|r| r.extra.get(key))
            .and_then(Value::as_f64)
    }

    fn target(&mut self, what: &str, check: Option<(bool, String)>) {
        let (met, detail) = match check {
            Some((met, detail)) => (Some(met), detail),
            None => (None, "not measured in this run".into()),
        };
        self.targets.push(Target {
            what: what.into(),
            met,
            detail,
        });
    }

    /// Compares the results with the targets.
    pub fn check_targets(&mut self) {
        let ratio = |r: &Report, name: &str| r.row("grpc", name).and_then(|x| x.ratio);
        let ops = |r: &Report, s: &str, name: &str| r.row(s, name).and_then(|x| x.ops_s);
        let t = ratio(self, "Enqueue").map(|x| (x >= 0.5, format!("{x:.2}x")));
        self.target("Enqueue >= 0.5x unpipelined ceiling", t);
        let t = ops(self, "grpc", "Enqueue")
            .zip(ops(self, "peers", "bullmq Queue.add"))
            .map(|(a, b)| (a >= 3.0 * b, format!("{:.2}x", a / b)));
        self.target("Enqueue >= 3x BullMQ add", t);
        let t = ratio(self, "EnqueueBatch").map(|x| (x >= 0.8, format!("{x:.2}x")));
        self.target("EnqueueBatch >= 0.8x pipelined ceiling", t);
        let t = ops(self, "grpc", "EnqueueBatch")
            .zip(ops(self, "peers", "bullmq Queue.addBulk"))
            .map(|(a, b)| (a >= 10.0 * b, format!("{:.2}x", a / b)));
        self.target("EnqueueBatch >= 10x BullMQ addBulk", t);
        let (lo, hi) = (
            self.sizes.iter().min().copied(),
            self.sizes.iter().max().copied(),
        );
        let t = lo.zip(hi).and_then(|(lo, hi)| {
            let p = |n: u64| {
                self.row("claim_scaling", &format!("nothing due, {n} stored"))
                    .and_then(|r| r.p50_ms)
            };
            p(lo).zip(p(hi)).map(|(a, b)| {
                (
                    b <= 1.5 * a,
                    format!("p50 {b:.3} ms at {hi} vs {a:.3} ms at {lo}: {:.2}x", b / a),
                )
            })
        });
        self.target(
            "ClaimDueSchedule p50 at largest size <= 1.5x p50 at smallest (issue: 1M vs 1k)",
            t,
        );
        let t = self
            .extra("longpoll", "idle Redis commands", "with_waiters_per_s")
            .zip(self.extra("longpoll", "idle Redis commands", "baseline_per_s"))
            .map(|(w, b)| {
                // Per-waiter polling would be at least one command per waiter per
                // wait (30 s); allow far less than one per waiter per minute.
                let allowed = (self.waiters as f64 / 60.0).max(5.0);
                (
                    w - b <= allowed,
                    format!(
                        "{w:.1}/s with {} waiters vs {b:.1}/s with none (allowed +{allowed:.0}/s)",
                        self.waiters
                    ),
                )
            });
        self.target("idle waiters: no per-waiter Redis commands", t);
        let waiters = self.waiters;
        let rss = self.extra("longpoll", "service RSS", "with_waiters_mb");
        if waiters < 10_000 && rss.is_some() {
            // 150 MB is a budget for 10,000 waiters; a smaller run cannot meet or miss it.
            self.targets.push(Target {
                what: "service RSS with 10k waiters <= 150 MB".into(),
                met: None,
                detail: format!("needs 10000 waiters, this run had {waiters}"),
            });
        } else {
            let t = rss.map(|mb| (mb <= 150.0, format!("{mb:.1} MB with {waiters} waiters")));
            self.target("service RSS with 10k waiters <= 150 MB", t);
        }
        let t = self
            .row("longpoll", "wake delay")
            .and_then(|r| r.p99_ms)
            .map(|p| (p <= 10.0, format!("p99 {p:.2} ms")));
        self.target("wake delay p99 <= 10 ms", t);
        let t = self
            .extra("memory", "per schedule", "bytes")
            .map(|b| (b <= 300.0, format!("{b:.0} B")));
        self.target("Redis <= 300 B/schedule", t);
        for name in ["per job", "per job, 200 B payload"] {
            let t = self
                .extra("memory", name, "bytes")
                .zip(self.extra("memory", name, "payload_bytes"))
                .map(|(b, p)| {
                    (
                        b - p <= 250.0,
                        format!("{:.0} B beyond a {p:.0} B payload", b - p),
                    )
                });
            self.target(
                &format!("Redis <= 250 B/job beyond the payload ({name})"),
                t,
            );
        }
        let t = self
            .extra("migrate", "longest script (SLOWLOG)", "ms")
            .map(|ms| (ms <= 10.0, format!("{ms:.2} ms")));
        self.target("migration: no script over 10 ms", t);
    }

    pub fn json(&self) -> Value {
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

    pub fn json_text(&self) -> Result<String> {
        Ok(serde_json::to_string_pretty(&self.json())?)
    }

    pub fn table(&self) -> String {
        let mut out = String::new();
        let m = |k: &str| {
            self.meta
                .get(k)
                .map(|v| v.to_string().trim_matches('"').to_owned())
                .unwrap_or_default()
        };
        let _ = writeln!(
            out,
            "dueq bench  {}  build={} cores={} mem={} redis={} duration={}s concurrency={} wall={}s",
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
