//! Peers on the same Redis: BullMQ (Queue.add, Queue.addBulk) and @boringnode/queue
//! 0.6 (claimDueSchedule with 1k/10k/100k schedules), installed with npm into a temp
//! folder and driven by small Node scripts written here; each prints one JSON line.

use std::{path::Path, process::Stdio, time::Duration};

use serde_json::Value;
use tokio::process::Command;

use super::{
    env::Env,
    report::{Report, Row},
    Plan, Result,
};

const S: &str = "peers";

const SHIM: &str = r#"import { register } from 'node:module'
import fsp from 'node:fs/promises'
if (typeof fsp.glob !== 'function') {
  register('./node20-shim-hooks.mjs', import.meta.url)
}
"#;

const SHIM_HOOKS: &str = r#"const SHIM = new URL('./node20-fs-promises.mjs', import.meta.url).href
export async function resolve(specifier, context, next) {
  if ((specifier === 'fs/promises' || specifier === 'node:fs/promises') &&
      context.parentURL && context.parentURL.includes('/@boringnode/queue/')) {
    return { url: SHIM, shortCircuit: true }
  }
  return next(specifier, context)
}
"#;

const SHIM_FS: &str = r#"export * from 'node:fs/promises'
import fsp from 'node:fs/promises'
export default fsp
export async function* glob(pattern) {
  throw new Error(`fs/promises.glob unavailable on Node ${process.version} (${pattern})`)
}
"#;

const BULLMQ: &str = r#"import { Queue } from 'bullmq'
import { Redis } from 'ioredis'
import { performance } from 'node:perf_hooks'
const url = new URL(process.env.REDIS_URL)
const C = Number(process.env.CONCURRENCY), MS = Number(process.env.DURATION_MS), B = Number(process.env.BATCH)
const q = new Queue('dueqbench', { connection: { host: url.hostname, port: Number(url.port) } })
await q.waitUntilReady()
const pct = (s, p) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]
// A separate connection reads Redis's CPU clock around each phase.
const probe = new Redis(Number(url.port), url.hostname)
const redisCpu = async () => {
  const info = await probe.info('cpu')
  const get = k => Number((info.match(new RegExp(k + ':([0-9.]+)')) || [0, 0])[1])
  return get('used_cpu_user') + get('used_cpu_sys')
}
async function phase(op, items) {
  const lat = []; let n = 0
  const r0 = await redisCpu(), c0 = process.cpuUsage()
  const t0 = performance.now(), end = t0 + MS
  await Promise.all(Array.from({ length: C }, async () => {
    while (performance.now() < end) { const t = performance.now(); await op(); lat.push(performance.now() - t); n += items }
  }))
  const secs = (performance.now() - t0) / 1000
  const c1 = process.cpuUsage(c0), r1 = await redisCpu()
  lat.sort((a, b) => a - b)
  return { ops_per_s: n / secs, p50_ms: pct(lat, 0.5), p99_ms: pct(lat, 0.99), p999_ms: pct(lat, 0.999), calls: lat.length,
    redis_cpu_us_per_op: (r1 - r0) * 1e6 / Math.max(1, n), client_cpu_us_per_op: (c1.user + c1.system) / Math.max(1, n) }
}
const data = { n: 1 }
const add = await phase(() => q.add('bench', data), 1)
const bulk = await phase(() => q.addBulk(Array.from({ length: B }, () => ({ name: 'bench', data }))), B)
console.log(JSON.stringify({ add, bulk }))
await q.close()
probe.disconnect()
"#;

const BORINGNODE: &str = r#"import { Redis } from 'ioredis'
import { performance } from 'node:perf_hooks'
import { QueueManager } from '@boringnode/queue'
import { redis } from '@boringnode/queue/drivers/redis_adapter'
const SIZES = process.env.SIZES.split(',').map(Number), SAMPLES = Number(process.env.SAMPLES)
const out = []
const pct = (s, p) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]
const stats = (lat) => { lat.sort((a, b) => a - b); return { p50_ms: pct(lat, 0.5), p99_ms: pct(lat, 0.99), p999_ms: pct(lat, 0.999), n: lat.length } }
for (const N of SIZES) {
  // A nothing-due claim walks every schedule: fewer samples at large sizes.
  const K = Math.max(5, Math.min(SAMPLES, Math.floor(200000 / N)))
  const connection = new Redis(process.env.REDIS_URL, { keyPrefix: `bnbench${N}::` })
  await QueueManager.init({ default: 'redis', adapters: { redis: redis(connection) }, autoLoadJobs: false })
  const adapter = QueueManager.use()
  const t0 = performance.now()
  for (let i = 0; i < N; i += 200) {
    const ops = []
    for (let j = i; j < Math.min(i + 200, N); j++) {
      ops.push((async () => {
        const id = `bench-${j}`
        await adapter.upsertSchedule({ id, name: 'BenchJob', payload: { j }, everyMs: 3_600_000, timezone: 'UTC' })
        await adapter.updateSchedule(id, { nextRunAt: new Date(Date.now() + 3_600_000) })
      })())
    }
    await Promise.all(ops)
  }
  const seed_s = (performance.now() - t0) / 1000
  for (let i = 0; i < 5; i++) await adapter.claimDueSchedule()
  const none = []
  for (let i = 0; i < K; i++) { const t = performance.now(); const s = await adapter.claimDueSchedule(); none.push(performance.now() - t); if (s) throw new Error('unexpected due schedule') }
  const one = []
  const id = `bench-${Math.floor(N / 2)}`
  for (let i = 0; i < K; i++) {
    await adapter.updateSchedule(id, { nextRunAt: new Date(Date.now() - 1000) })
    const t = performance.now(); const s = await adapter.claimDueSchedule(); one.push(performance.now() - t)
    if (!s) throw new Error('due schedule not claimed')
  }
  out.push({ size: N, seed_s, none: stats(none), one: stats(one) })
  await QueueManager.destroy()
  await connection.quit()
}
console.log(JSON.stringify({ claims: out }))
"#;

fn on_path(bin: &str) -> bool {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|p| p.join(bin).is_file()))
        .unwrap_or(false)
}

async fn node(
    dir: &Path,
    script: &str,
    envs: &[(&str, String)],
    timeout: Duration,
) -> Result<Value> {
    let mut cmd = Command::new("node");
    cmd.current_dir(dir)
        .arg("--import")
        .arg("./node20-shim.mjs")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(timeout, cmd.output())
        .await
        .map_err(|_| format!("{script} timed out after {timeout:?}"))??;
    if !out.status.success() {
        return Err(format!(
            "{script} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into());
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .ok_or_else(|| format!("{script} printed no JSON"))?;
    Ok(serde_json::from_str(line)?)
}

fn f(v: &Value, path: &[&str]) -> Option<f64> {
    let mut v = v;
    for p in path {
        v = v.get(*p)?;
    }
    v.as_f64()
}

fn peer_row(name: &str, v: &Value, with_ops: bool) -> Row {
    let mut row = Row::new(S, name);
    if with_ops {
        row.ops_s = f(v, &["ops_per_s"]);
    }
    if let Some((redis, client)) =
        f(v, &["redis_cpu_us_per_op"]).zip(f(v, &["client_cpu_us_per_op"]))
    {
        row = row
            .with("redis_cpu_us_per_op", redis)
            .with("client_cpu_us_per_op", client)
            .and_note(format!(
                "CPU/op: Redis {redis:.0} us, Node client {client:.0} us"
            ));
    }
    row.p50_ms = f(v, &["p50_ms"]);
    row.p99_ms = f(v, &["p99_ms"]);
    row.p999_ms = f(v, &["p999_ms"]);
    row
}

pub async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    if !plan.peers {
        report.note(S, "skipped (run with --peers)");
        return Ok(());
    }
    if !on_path("node") || !on_path("npm") {
        report.note(S, "skipped: node or npm not found on PATH");
        return Ok(());
    }
    let dir = std::env::temp_dir().join(format!("dueq-bench-peers-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let result = run_in(plan, env, report, &dir).await;
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = result {
        report.note(S, format!("peers failed: {e}"));
    }
    Ok(())
}

async fn run_in(plan: &Plan, env: &Env, report: &mut Report, dir: &Path) -> Result<()> {
    for (name, text) in [
        (
            "package.json",
            "{\"name\":\"dueq-bench-peers\",\"private\":true,\"type\":\"module\"}\n",
        ),
        ("node20-shim.mjs", SHIM),
        ("node20-shim-hooks.mjs", SHIM_HOOKS),
        ("node20-fs-promises.mjs", SHIM_FS),
        ("bullmq.mjs", BULLMQ),
        ("boringnode.mjs", BORINGNODE),
    ] {
        std::fs::write(dir.join(name), text)?;
    }
    let install = tokio::time::timeout(
        Duration::from_secs(300),
        Command::new("npm")
            .current_dir(dir)
            .args(["install", "--no-audit", "--no-fund", "--loglevel=error"])
            .args(["bullmq", "@boringnode/queue@0.6.0", "ioredis"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .map_err(|_| "npm install timed out")??;
    if !install.status.success() {
        return Err(format!(
            "npm install failed: {}",
            String::from_utf8_lossy(&install.stderr).trim()
        )
        .into());
    }
    let url = env.redis_url.clone();
    let v = node(
        dir,
        "bullmq.mjs",
        &[
            ("REDIS_URL", url.clone()),
            ("CONCURRENCY", plan.concurrency.to_string()),
            ("DURATION_MS", plan.duration.as_millis().to_string()),
            ("BATCH", plan.batch.to_string()),
        ],
        Duration::from_secs(120),
    )
    .await?;
    if let Some(add) = v.get("add") {
        report
            .push(peer_row("bullmq Queue.add", add, true).and_note("same concurrency, same Redis"));
    }
    if let Some(bulk) = v.get("bulk") {
        report.push(
            peer_row("bullmq Queue.addBulk", bulk, true)
                .and_note(format!("{} jobs per call; ops = jobs", plan.batch)),
        );
    }
    env.reset().await?;
    let sizes: Vec<String> = plan.peer_sizes.iter().map(u64::to_string).collect();
    let v = node(
        dir,
        "boringnode.mjs",
        &[
            ("REDIS_URL", url),
            ("SIZES", sizes.join(",")),
            ("SAMPLES", plan.samples.min(200).to_string()),
        ],
        Duration::from_secs(1200),
    )
    .await?;
    for c in v
        .get("claims")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let size = f(c, &["size"]).unwrap_or(0.0) as u64;
        let seed = f(c, &["seed_s"]).unwrap_or(0.0);
        if let Some(none) = c.get("none") {
            report.push(
                peer_row(
                    &format!("boringnode claimDueSchedule, nothing due, {size}"),
                    none,
                    false,
                )
                .with("stored", size)
                .note(format!("seeded through its adapter in {seed:.1}s")),
            );
        }
        if let Some(one) = c.get("one") {
            report.push(
                peer_row(
                    &format!("boringnode claimDueSchedule, one due, {size}"),
                    one,
                    false,
                )
                .with("stored", size),
            );
        }
    }
    env.reset().await?;
    Ok(())
}
