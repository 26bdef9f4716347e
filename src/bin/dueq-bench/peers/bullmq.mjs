import { Queue, Worker } from 'bullmq'
import { Redis } from 'ioredis'
import { performance } from 'node:perf_hooks'
const url = new URL(process.env.REDIS_URL)
const C = Number(process.env.CONCURRENCY), MS = Number(process.env.DURATION_MS), B = Number(process.env.BATCH)
const PREFILL = Number(process.env.PREFILL || 0)
// Which phases run: the paired rounds (peers.rs) run the Worker's drain alone.
const PHASES = (process.env.PHASES || 'add,bulk,worker').split(',')
const connection = { host: url.hostname, port: Number(url.port) }
const q = new Queue('dueqbench', { connection })
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
// A Worker (concurrency C, no-op processor) drains PREFILL jobs added beforehand
// (not measured) with removeOnComplete, as dueq's consume family drains its own.
async function drain() {
  const wq = new Queue('dueqbenchworker', { connection })
  await wq.waitUntilReady()
  for (let done = 0; done < PREFILL; done += 1000) {
    const k = Math.min(1000, PREFILL - done)
    await wq.addBulk(Array.from({ length: k }, () => ({ name: 'bench', data, opts: { removeOnComplete: true } })))
  }
  let n = 0, resolveAll
  const all = new Promise(r => { resolveAll = r })
  const w = new Worker('dueqbenchworker', async () => {}, {
    connection, concurrency: C, autorun: false, removeOnComplete: { count: 0 },
  })
  w.on('completed', () => { if (++n >= PREFILL) resolveAll() })
  await w.waitUntilReady()
  const r0 = await redisCpu(), c0 = process.cpuUsage(), t0 = performance.now()
  w.run()
  let timer
  const cap = new Promise(r => { timer = setTimeout(r, 600000) })
  await Promise.race([all, cap])
  clearTimeout(timer)
  const secs = (performance.now() - t0) / 1000
  const c1 = process.cpuUsage(c0), r1 = await redisCpu()
  await w.close(true)
  await wq.obliterate({ force: true }).catch(() => {})
  await wq.close()
  return { ops_per_s: n / secs, jobs: n, prefill: PREFILL, secs,
    redis_cpu_us_per_op: (r1 - r0) * 1e6 / Math.max(1, n), client_cpu_us_per_op: (c1.user + c1.system) / Math.max(1, n) }
}
const data = { n: 1 }
const add = PHASES.includes('add') ? await phase(() => q.add('bench', data), 1) : undefined
const bulk = PHASES.includes('bulk')
  ? await phase(() => q.addBulk(Array.from({ length: B }, () => ({ name: 'bench', data }))), B)
  : undefined
const worker = PHASES.includes('worker') && PREFILL > 0 ? await drain() : undefined
console.log(JSON.stringify({ add, bulk, worker }))
await q.close()
probe.disconnect()
