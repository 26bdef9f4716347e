//! The floor of a job script's Redis cost: the Redis commands the script runs for
//! one item, sent raw in one MULTI/EXEC per call on keys of the same names and
//! shapes in a scratch namespace (so nothing touches dueq's data), one caller, one
//! call at a time, measured as the script rows are (Redis used_cpu_sys+user delta /
//! calls). A script can cost no less than its own commands; what it costs beyond
//! them is the Lua interpreter and the script's own logic.
//!
//! How the lists were derived (redo it when a script changes): run
//! `redis-cli -p PORT monitor > m.txt` beside
//! `dueq-bench --smoke --only consume --redis-url redis://127.0.0.1:PORT` (and
//! `--only claim-scaling --sizes 100` for claim_due, whose "one due" claims it
//! shows), then read the `[0 lua]` lines after one steady-state call of the
//! script (not the first call of a queue, which also registers the queue). Each
//! function below lists them in the order MONITOR printed them. Values the script
//! computes (ids, packed records, times) are stand-ins of the same size.

use deadpool_redis::redis::{self, aio::MultiplexedConnection, Pipeline};
use dueq::probe::Keys;

use crate::{
    env::{Env, PREFIX},
    grpc::with_cpu,
    load::Stats,
    redis_info::redis_now,
    report::{Report, Row},
    Result,
};

const S: &str = "consume";
/// The scratch namespaces' stem: `floor` for the job scripts, `floor{i}` for
/// claim_due (one namespace, one due schedule per call, as its script row).
const NS: &str = "floor";
/// The queue of the job floors (the script rows' one-item queue is named alike).
const QUEUE: &str = "cost";
/// A packed job record as enqueue_jobs writes it for a 7-byte payload (62 bytes
/// in MONITOR), and as claim_jobs and ack_job rewrite it with a lease (98 bytes).
const JOB_RECORD: [u8; 62] = [b'j'; 62];
const LEASED_RECORD: [u8; 98] = [b'l'; 98];

/// The keys of a scratch namespace: dueq's layout (`dueq::probe::Keys`) where it
/// names them, else the key's suffix as MONITOR showed it after the namespace's base.
struct FloorKeys {
    keys: Keys,
    base: String,
}

impl FloorKeys {
    fn new(ns: &str) -> FloorKeys {
        let keys = Keys::new(PREFIX, ns);
        let meta = keys.meta();
        let base = meta.strip_suffix("meta").unwrap_or(&meta).to_owned();
        FloorKeys { keys, base }
    }

    /// A key the probe does not name: `<prefix>:{<ns>}:<suffix>`.
    fn other(&self, suffix: &str) -> String {
        format!("{}{suffix}", self.base)
    }
}

/// A job id of a uuid's length (36 characters).
fn job_id(i: u64) -> String {
    format!("00000000-0000-4000-8000-{i:012}")
}

/// enqueue_jobs for one job (Enqueue): 11 commands.
fn enqueue_commands(p: &mut Pipeline, k: &FloorKeys, i: u64) {
    let (meta, q, id) = (k.keys.meta(), k.keys.queue_state(QUEUE), job_id(i));
    p.cmd("HMGET").arg(&meta).arg("jobs").arg("counts");
    p.cmd("TIME");
    p.cmd("HINCRBY").arg(&meta).arg(format!("n:{QUEUE}")).arg(1);
    p.cmd("HINCRBY").arg(&meta).arg("gseq").arg(1);
    p.cmd("EXISTS").arg(k.keys.job(&id));
    p.cmd("SET").arg(k.keys.job(&id)).arg(&JOB_RECORD[..]);
    p.cmd("HSET")
        .arg(k.keys.listing_bucket(QUEUE, i))
        .arg(i % 64)
        .arg(&id);
    p.cmd("HGET").arg(&q).arg("flow");
    p.cmd("RPUSH").arg(k.keys.ready_list(QUEUE, 0)).arg(i);
    p.cmd("HINCRBY").arg(&q).arg("pending").arg(1);
    p.cmd("HINCRBY").arg(&meta).arg("stored").arg(1);
}

/// claim_jobs for one job (ClaimJob max_jobs 1, no acks): 14 commands.
fn claim_commands(p: &mut Pipeline, k: &FloorKeys, i: u64, now: i64) {
    let (meta, q, id) = (k.keys.meta(), k.keys.queue_state(QUEUE), job_id(i));
    let (leased, delayed) = (
        k.other(&format!("ql:{QUEUE}")),
        k.other(&format!("qd:{QUEUE}")),
    );
    let priorities = k.other(&format!("rp:{QUEUE}"));
    p.cmd("HMGET").arg(&meta).arg("jobs").arg("counts");
    p.cmd("TIME");
    p.cmd("EXISTS").arg(k.other("meta:dagq"));
    p.cmd("HMGET")
        .arg(&q)
        .arg(&["paused", "flow", "fl", "fk", "fh", "fm"]);
    for key in [&leased, &delayed, &priorities] {
        p.cmd("ZRANGE").arg(key).arg(0).arg(0).arg("WITHSCORES");
    }
    p.cmd("LPOP").arg(k.keys.ready_list(QUEUE, 0)).arg(1);
    p.cmd("HMGET")
        .arg(k.keys.listing_bucket(QUEUE, i))
        .arg(i % 64);
    p.cmd("GET").arg(k.keys.job(&id));
    p.cmd("SET").arg(k.keys.job(&id)).arg(&LEASED_RECORD[..]);
    p.cmd("ZADD").arg(&leased).arg(now + 30_000).arg(&id);
    p.cmd("HINCRBY").arg(&q).arg("pending").arg(-1);
    p.cmd("ZCARD").arg(&priorities);
}

/// ack_job for one job (AckJob): 9 commands.
fn ack_commands(p: &mut Pipeline, k: &FloorKeys, i: u64, now: i64) {
    let (q, id, done) = (k.keys.queue_state(QUEUE), job_id(i), k.other("jdone"));
    p.cmd("HMGET").arg(k.keys.meta()).arg("jobs").arg("counts");
    p.cmd("TIME");
    p.cmd("GET").arg(k.keys.job(&id));
    p.cmd("SET").arg(k.keys.job(&id)).arg(&LEASED_RECORD[..]);
    p.cmd("HGET").arg(&q).arg("flow");
    p.cmd("HINCRBY").arg(&q).arg("completed").arg(1);
    p.cmd("ZREM").arg(k.other(&format!("ql:{QUEUE}"))).arg(&id);
    p.cmd("ZADD").arg(&done).arg(now).arg(&id);
    p.cmd("ZCARD").arg(&done);
}

/// claim_due for one due schedule (ClaimDueSchedule, no lease, an `every 1h`
/// schedule due now, alone in its namespace): 11 commands.
fn claim_due_commands(p: &mut Pipeline, k: &FloorKeys, record: &[u8], now: i64) {
    let (due, leases) = (k.keys.due(), k.other("oleases"));
    let runs = k.other("rr:s0");
    p.cmd("HGET").arg(k.keys.meta()).arg("schema");
    p.cmd("TIME");
    p.cmd("ZRANGEBYSCORE")
        .arg(&leases)
        .arg("-inf")
        .arg(now)
        .arg(&["LIMIT", "0", "1"]);
    p.cmd("ZRANGEBYSCORE")
        .arg(&due)
        .arg("-inf")
        .arg(now)
        .arg(&["WITHSCORES", "LIMIT", "0", "32"]);
    p.cmd("GET").arg(k.keys.schedule("s0"));
    p.cmd("LPUSH").arg(&runs).arg(format!(
        "{}|{}|{now}|1|not_leased|scheduled|bench",
        job_id(0),
        now - 1_000
    ));
    p.cmd("LTRIM").arg(&runs).arg(0).arg(9);
    p.cmd("ZADD").arg(&due).arg(now + 3_599_000).arg("s0");
    p.cmd("SET").arg(k.keys.schedule("s0")).arg(record);
    p.cmd("ZRANGE").arg(&due).arg(0).arg(0).arg("WITHSCORES");
    p.cmd("ZRANGE").arg(&leases).arg(0).arg(0).arg("WITHSCORES");
}

/// The floor rows: enqueue_jobs, claim_jobs and ack_job over the same `n` scratch
/// jobs (each floor leaves the keys the next one reads, as the scripts do), then
/// claim_due over `n` scratch namespaces of one due schedule each; `record` is a
/// schedule record as the API writes it.
pub(crate) async fn run(env: &Env, report: &mut Report, n: u64, record: &[u8]) -> Result<()> {
    let mut conn = env.conn().await?;
    let k = FloorKeys::new(NS);
    let now = redis_now(&mut conn).await?;
    let phase = |p: &mut Pipeline, i| enqueue_commands(p, &k, i);
    measure(env, report, &mut conn, "enqueue_jobs", n, 11, phase).await?;
    let phase = |p: &mut Pipeline, i| claim_commands(p, &k, i, now);
    measure(env, report, &mut conn, "claim_jobs", n, 14, phase).await?;
    let phase = |p: &mut Pipeline, i| ack_commands(p, &k, i, now);
    measure(env, report, &mut conn, "ack_job", n, 9, phase).await?;
    let namespaces: Vec<FloorKeys> = (0..n)
        .map(|i| FloorKeys::new(&format!("{NS}{i}")))
        .collect();
    seed_due(&mut conn, &namespaces, record, now - 1_000).await?;
    let phase = |p: &mut Pipeline, i: u64| {
        claim_due_commands(p, &namespaces[i as usize], record, now);
    };
    measure(env, report, &mut conn, "claim_due", n, 11, phase).await
}

/// One due schedule `s0` in each of `namespaces` (its record, the due index and
/// the meta's schema), as the claim_due script row seeds them; not measured.
// Seeds the floor's scratch namespaces straight into Redis.
#[allow(clippy::disallowed_methods)]
async fn seed_due(
    conn: &mut MultiplexedConnection,
    namespaces: &[FloorKeys],
    record: &[u8],
    due_ms: i64,
) -> Result<()> {
    for chunk in namespaces.chunks(500) {
        let mut p = redis::pipe();
        for k in chunk {
            p.cmd("SET").arg(k.keys.schedule("s0")).arg(record).ignore();
            p.cmd("ZADD")
                .arg(k.keys.due())
                .arg(due_ms)
                .arg("s0")
                .ignore();
            p.cmd("HSET")
                .arg(k.keys.meta())
                .arg("schema")
                .arg(dueq::probe::SCHEDULE_SCHEMA)
                .ignore();
        }
        p.query_async::<()>(conn).await?;
    }
    Ok(())
}

/// `n` calls, each one MULTI/EXEC of the commands `add` puts for call `i`, one at
/// a time; the row `<script> floor` with Redis CPU per call.
// The floor is raw commands by definition: what the script's own calls cost.
#[allow(clippy::disallowed_methods)]
async fn measure(
    env: &Env,
    report: &mut Report,
    conn: &mut MultiplexedConnection,
    script: &str,
    n: u64,
    commands: u64,
    add: impl Fn(&mut Pipeline, u64),
) -> Result<()> {
    let started = std::time::Instant::now();
    let phase = async {
        for i in 0..n {
            let mut p = redis::pipe();
            p.atomic();
            add(&mut p, i);
            p.query_async::<redis::Value>(&mut *conn).await?;
        }
        Ok(Stats {
            items: n,
            calls: n,
            secs: started.elapsed().as_secs_f64(),
            ..Stats::default()
        })
    };
    let (s, cpu) = with_cpu(env, phase).await?;
    let mut row = Row::new(S, format!("{script} floor"));
    row.ops_s = Some(s.ops_s());
    report.push(
        row.note(format!(
            "the {commands} commands {script} runs for one item, raw in one MULTI/EXEC per call on scratch keys of the same shape: Redis CPU {:.1} us/call",
            cpu.redis_us
        ))
        .with("calls", n)
        .with("commands_per_call", commands)
        .with("redis_cpu_us_per_call", cpu.redis_us),
    );
    Ok(())
}
