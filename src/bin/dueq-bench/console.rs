//! The console family (issue 33): what the web console costs, against a service
//! holding 1,000,000 jobs over 1,000 queues and 10,000 schedules (`--console-jobs`
//! shrinks it: queues stay 1,000 down to one job each, schedules are jobs / 100).
//!
//! - `pages`: each page (overview, a namespace's queues, a queue's jobs in one
//!   state, a job, the schedules, a schedule) fetched one request at a time over
//!   HTTP/1.1 on loopback, timed from sending the request to the body's last byte
//!   (target `console page p95 <= 50 ms`); meanwhile SLOWLOG keeps every script over
//!   100 µs (target `console Redis script <= 5 ms`: the longest dueq script call).
//! - `tabs`: Redis commands/s (INFO stats total_commands_processed) over windows
//!   of whole samples — from one `update` event of a live stream to the N-th after
//!   it — with one tab open, then with ten (nine more opened, page and stream, in
//!   the window). Less Redis's commands/s before any console request (both
//!   services idle): target `console tabs Redis cmds/s <= 1.1x one tab`.
//!
//! The jobs and schedules are loaded through the env's service; the console runs in
//! a second `dueq serve` on the same Redis (`console_http`).

use std::time::{Duration, Instant};

use deadpool_redis::redis::aio::MultiplexedConnection;
use dueq::proto;

use crate::{
    console_http::{ConsoleService, Tab},
    env::{Client, Env},
    load::Stats,
    migrate::{read_slowlog, restore_slowlog, script_entry, start_slowlog},
    plan::Plan,
    redis_info::{info, info_field},
    report::{Report, Row},
    Result,
};

pub(crate) const S: &str = "console";
const NS: &str = "console";
/// The scale.
pub(crate) const FULL_JOBS: u64 = 1_000_000;
const QUEUES: u64 = 1_000;
/// Jobs per EnqueueBatch call (the env's service runs with --max-batch 10000).
const BATCH: u64 = 5_000;
/// Concurrent loaders (EnqueueBatch and UpsertSchedule callers).
const LOADERS: usize = 8;
/// Job ids kept for the job detail page.
const KEEP_IDS: usize = 200;
/// Tabs of the `tabs` measurement.
const TABS: usize = 10;

/// The row every target of the family reads its scale from.
pub(crate) const SCALE_ROW: &str = "load: jobs";
/// Its extra: "" at the scale, else " (at N jobs, ...)".
pub(crate) const SCALE_SUFFIX: &str = "scale_suffix";
pub(crate) const P95: &str = "p95_ms";
pub(crate) const LONGEST_ROW: &str = "longest script during the page runs";
pub(crate) const LONGEST: &str = "longest_script_us";
pub(crate) const TABS_ROW: &str = "Redis commands/s, 10 live tabs";
/// Extras of TABS_ROW: the ratios to one tab, net of the idle rate and raw.
pub(crate) const NET_RATIO: &str = "net_ratio_to_one_tab";
pub(crate) const RAW_RATIO: &str = "raw_ratio_to_one_tab";

/// What the family runs at.
struct Scale {
    jobs: u64,
    queues: u64,
    schedules: u64,
    /// Requests per page.
    requests: usize,
    /// Samples per commands/s window.
    samples: u64,
    idle: Duration,
}

impl Scale {
    fn of(plan: &Plan) -> Scale {
        let jobs = plan.console_jobs.max(1);
        Scale {
            jobs,
            queues: QUEUES.min(jobs),
            schedules: (jobs / 100).max(1),
            requests: if plan.smoke { 20 } else { 200 },
            samples: if plan.smoke { 2 } else { 5 },
            idle: Duration::from_secs(if plan.smoke { 2 } else { 10 }),
        }
    }

    fn suffix(&self) -> String {
        if self.jobs == FULL_JOBS {
            String::new()
        } else {
            format!(
                " (at {} jobs, {} queues, {} schedules)",
                thousands(self.jobs),
                thousands(self.queues),
                thousands(self.schedules)
            )
        }
    }
}

pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The family, from an empty Redis; it leaves Redis empty again (run_families
/// calls it without a step line or reset of its own).
pub(crate) async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    eprintln!("bench: console ...");
    let scale = Scale::of(plan);
    eprintln!(
        "bench: console: loading {} jobs over {} queues and {} schedules ...",
        thousands(scale.jobs),
        thousands(scale.queues),
        thousands(scale.schedules)
    );
    let at = |stage: &'static str| move |e: crate::BenchError| format!("console {stage}: {e}");
    let ids = load_jobs(env, &scale, report).await.map_err(at("load"))?;
    load_schedules(env, &scale, report)
        .await
        .map_err(at("schedules"))?;
    let console = ConsoleService::start(env).await.map_err(at("start"))?;
    let idle = idle_rate(env, scale.idle).await.map_err(at("idle"))?;
    pages(env, &console, &scale, &ids, report)
        .await
        .map_err(at("pages"))?;
    tabs(env, &console, &scale, idle, report)
        .await
        .map_err(at("tabs"))?;
    drop(console);
    env.reset().await
}

fn job(queue: u64) -> proto::EnqueueRequest {
    proto::EnqueueRequest {
        namespace: NS.into(),
        queue: format!("q{queue}"),
        name: "console".into(),
        payload: b"{\"n\":1}".to_vec(),
        ..Default::default()
    }
}

/// One loader's share of the jobs: batches `first`, `first + LOADERS`, ...; the ids
/// of its first jobs.
async fn load_share(mut client: Client, scale: &Scale, first: u64) -> Result<Vec<String>> {
    let batches = scale.jobs.div_ceil(BATCH);
    let mut ids = Vec::new();
    let mut b = first;
    while b < batches {
        let from = b * BATCH;
        let jobs = (from..(from + BATCH).min(scale.jobs))
            .map(|i| job(i % scale.queues))
            .collect();
        let results = client
            .enqueue_batch(proto::EnqueueBatchRequest {
                namespace: NS.into(),
                jobs,
            })
            .await?
            .into_inner()
            .results;
        for result in results {
            match result.result {
                Some(proto::enqueue_batch_result::Result::Ok(ok)) => {
                    if ids.len() < KEEP_IDS {
                        ids.push(ok.job_id);
                    }
                }
                other => return Err(format!("console load: enqueue failed: {other:?}").into()),
            }
        }
        b += LOADERS as u64;
    }
    Ok(ids)
}

async fn load_jobs(env: &Env, scale: &Scale, report: &mut Report) -> Result<Vec<String>> {
    let started = Instant::now();
    let mut shares = Vec::new();
    for first in 0..LOADERS as u64 {
        shares.push(load_share(env.client().await?, scale, first));
    }
    let mut ids = Vec::new();
    for share in futures_util::future::join_all(shares).await {
        ids.extend(share?);
    }
    let secs = started.elapsed().as_secs_f64();
    ids.truncate(KEEP_IDS);
    let mut row = Row::new(S, SCALE_ROW);
    row.ops_s = Some(scale.jobs as f64 / secs.max(1e-9));
    report.push(row.with(SCALE_SUFFIX, scale.suffix()).note(format!(
        "{} jobs over {} queues (pending), EnqueueBatch of {BATCH} by {LOADERS} callers, {secs:.1} s",
        thousands(scale.jobs),
        thousands(scale.queues)
    )));
    Ok(ids)
}

async fn load_schedules(env: &Env, scale: &Scale, report: &mut Report) -> Result<()> {
    let started = Instant::now();
    let mut shares = Vec::new();
    for first in 0..LOADERS as u64 {
        let mut client = env.client().await?;
        shares.push(async move {
            let mut i = first;
            while i < scale.schedules {
                client
                    .upsert_schedule(proto::UpsertScheduleRequest {
                        namespace: NS.into(),
                        schedule: Some(crate::seed::every_1h(&format!("s{i}"))),
                    })
                    .await?;
                i += LOADERS as u64;
            }
            Result::Ok(())
        });
    }
    for share in futures_util::future::join_all(shares).await {
        share?;
    }
    let secs = started.elapsed().as_secs_f64();
    let mut row = Row::new(S, "load: schedules");
    row.ops_s = Some(scale.schedules as f64 / secs.max(1e-9));
    report.push(row.note(format!(
        "{} schedules (every 1h), UpsertSchedule by {LOADERS} callers, {secs:.1} s",
        thousands(scale.schedules)
    )));
    Ok(())
}

/// Redis's commands processed so far (on a connection made beforehand: a new one
/// might wait behind the scripts being measured).
async fn commands(conn: &mut MultiplexedConnection) -> Result<u64> {
    let stats = info(conn, "stats").await?;
    info_field(&stats, "total_commands_processed")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| "INFO stats has no total_commands_processed".into())
}

/// Redis's commands/s with both services idle and no console request yet.
async fn idle_rate(env: &Env, window: Duration) -> Result<f64> {
    let mut conn = env.conn().await?;
    let before = commands(&mut conn).await?;
    let started = Instant::now();
    crate::local::pause(window).await;
    let after = commands(&mut conn).await?;
    Ok(after.saturating_sub(before) as f64 / started.elapsed().as_secs_f64())
}

/// The pages, and which of them the requests cycle through (`i` is the request).
/// A page: its row's name, and its path for request `i`.
type PagePath = (&'static str, Box<dyn Fn(usize) -> String>);

fn page_paths(scale: &Scale, ids: &[String]) -> Vec<PagePath> {
    let queues = scale.queues as usize;
    let schedules = scale.schedules as usize;
    let ids = ids.to_vec();
    vec![
        ("page: overview", Box::new(|_| "/".to_owned())),
        ("page: namespace queues", Box::new(|_| format!("/ns/{NS}"))),
        (
            "page: a queue",
            Box::new(move |i| format!("/ns/{NS}/queues/q{}", i % queues)),
        ),
        (
            "page: jobs list (a queue, pending)",
            Box::new(move |i| format!("/ns/{NS}/jobs?queue=q{}&state=pending", i % queues)),
        ),
        (
            "page: job detail",
            Box::new(move |i| format!("/ns/{NS}/jobs/{}", ids[i % ids.len().max(1)])),
        ),
        (
            "page: schedules list",
            Box::new(|_| format!("/ns/{NS}/schedules")),
        ),
        (
            "page: schedule detail",
            Box::new(move |i| format!("/ns/{NS}/schedules/s{}", i % schedules)),
        ),
    ]
}

async fn pages(
    env: &Env,
    console: &ConsoleService,
    scale: &Scale,
    ids: &[String],
    report: &mut Report,
) -> Result<()> {
    if ids.is_empty() {
        return Err("console: the load kept no job id".into());
    }
    let mut conn = env.conn().await?;
    let threshold = start_slowlog(&mut conn).await?;
    let started = Instant::now();
    let rows = timed_pages(console, scale, ids).await;
    let secs = started.elapsed().as_secs_f64();
    let slowlog = read_slowlog(&mut conn).await;
    restore_slowlog(&mut conn, threshold).await?;
    for row in rows? {
        report.push(row);
    }
    report.push(longest_row(&slowlog?, secs));
    Ok(())
}

/// The longest dueq script SLOWLOG kept, and how many went over 5 ms (by script).
fn longest_row(slowlog: &[deadpool_redis::redis::Value], secs: f64) -> Row {
    let mut calls: Vec<(u64, &str)> = slowlog.iter().filter_map(script_entry).collect();
    calls.sort_unstable_by(|a, b| b.cmp(a));
    let (longest_us, name) = calls.first().copied().unwrap_or((0, "none"));
    let mut over: Vec<&str> = calls
        .iter()
        .filter(|(us, _)| *us > 5_000)
        .map(|(_, name)| *name)
        .collect();
    let n_over = over.len();
    over.sort_unstable();
    over.dedup();
    Row::new(S, LONGEST_ROW)
        .with(LONGEST, longest_us)
        .with("over_5ms", n_over as u64)
        .note(format!(
            "{:.2} ms ({name}); {} script calls over 100 us, {n_over} over 5 ms ({}), in {secs:.1} s \
             of page requests, the sampler's included",
            longest_us as f64 / 1e3,
            calls.len(),
            over.join(", ")
        ))
}

async fn timed_pages(console: &ConsoleService, scale: &Scale, ids: &[String]) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for (name, path) in page_paths(scale, ids) {
        let mut lat = Vec::with_capacity(scale.requests);
        let mut bytes = 0;
        let started = Instant::now();
        for i in 0..scale.requests {
            let (took, size) = console.page(&path(i)).await?;
            lat.push(took.as_nanos() as u64);
            bytes = bytes.max(size);
        }
        let secs = started.elapsed().as_secs_f64();
        let p95 = percentile_ms(&lat, 0.95);
        let stats = Stats::from_latencies(lat, scale.requests as u64, secs);
        rows.push(Row::latency(S, name, &stats).with(P95, p95).note(format!(
            "p95 {p95:.3} ms; {} requests one at a time; body up to {} KB",
            scale.requests,
            bytes / 1024
        )));
    }
    Ok(rows)
}

fn percentile_ms(lat: &[u64], q: f64) -> f64 {
    let mut sorted = lat.to_vec();
    sorted.sort_unstable();
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[idx] as f64 / 1e6
}

/// Redis commands over a window of whole samples, and the tabs opened in it.
struct Window {
    per_s: f64,
    per_sample: f64,
    opened: Vec<Tab>,
}

/// Redis commands from the next update of `first` over `samples` more, while
/// `during` runs.
async fn window(
    conn: &mut MultiplexedConnection,
    first: &mut Tab,
    samples: u64,
    during: impl std::future::Future<Output = Result<Vec<Tab>>>,
) -> Result<Window> {
    first.until(first.seen() + 1).await?;
    let (at, before) = (Instant::now(), commands(conn).await?);
    let end = first.seen() + samples;
    let opened = during.await?;
    first.until(end).await?;
    let delta = commands(conn).await?.saturating_sub(before) as f64;
    Ok(Window {
        per_s: delta / at.elapsed().as_secs_f64(),
        per_sample: delta / samples as f64,
        opened,
    })
}

async fn tabs(
    env: &Env,
    console: &ConsoleService,
    scale: &Scale,
    idle: f64,
    report: &mut Report,
) -> Result<()> {
    let (page, live) = (format!("/ns/{NS}"), format!("/ns/{NS}/live"));
    let mut conn = env.conn().await?;
    let mut first = console.open_tab(&page, &live).await?;
    let none = async { Ok::<_, crate::BenchError>(Vec::new()) };
    let one = window(&mut conn, &mut first, scale.samples, none).await?;
    let more = async {
        let mut opened = Vec::new();
        for _ in 1..TABS {
            opened.push(console.open_tab(&page, &live).await?);
        }
        Ok::<_, crate::BenchError>(opened)
    };
    let mut ten = window(&mut conn, &mut first, scale.samples, more).await?;
    // Every tab was live: each got updates.
    for tab in &mut ten.opened {
        tab.until(1).await?;
    }
    push_tab_rows(report, scale, idle, &one, &ten);
    Ok(())
}

fn push_tab_rows(report: &mut Report, scale: &Scale, idle: f64, one: &Window, ten: &Window) {
    let mut row = Row::new(S, "Redis commands/s, no console request");
    row.ops_s = Some(idle);
    report.push(row.note("both services idle, before any page"));
    let mut row = Row::new(S, "Redis commands/s, 1 live tab");
    row.ops_s = Some(one.per_s);
    report.push(row.with("per_sample", one.per_sample).note(format!(
        "the queues page's SSE stream; {} samples, {:.0} commands per sample",
        scale.samples, one.per_sample
    )));
    let net = (ten.per_s - idle) / (one.per_s - idle).max(1e-9);
    let raw = ten.per_s / one.per_s.max(1e-9);
    let mut row = Row::new(S, TABS_ROW);
    row.ops_s = Some(ten.per_s);
    row.ratio = Some(net);
    report.push(
        row.with(NET_RATIO, net)
            .with(RAW_RATIO, raw)
            .with("per_sample", ten.per_sample)
            .note(format!(
                "{TABS} streams of the same page, 9 opened (page + stream) in the window; \
                 {:.0} commands per sample; {net:.3}x one tab net of the idle rate ({raw:.3}x raw)",
                ten.per_sample
            )),
    );
}
