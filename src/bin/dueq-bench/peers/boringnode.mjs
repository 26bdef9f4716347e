import { Redis } from 'ioredis'
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
