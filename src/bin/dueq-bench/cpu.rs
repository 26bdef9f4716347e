//! Where the CPU went during a phase: the service, Redis and the bench client each
//! report their own, so a throughput figure says which process bounded it.

use deadpool_redis::redis::aio::MultiplexedConnection;

use crate::{
    procfs::process_cpu_s,
    redis_info::{command_calls, info, info_field},
    Result,
};

/// CPU spent so far by the service, Redis and the bench itself, in seconds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CpuSnapshot {
    service: f64,
    redis: f64,
    bench: f64,
    /// Script calls Redis has run (FCALL, FCALL_RO, and EVALSHA and EVAL for the
    /// bench's own seeding tools, in INFO commandstats).
    script_calls: u64,
}

/// CPU per operation between two snapshots, in microseconds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CpuPerOp {
    pub(crate) service_us: f64,
    pub(crate) redis_us: f64,
    pub(crate) bench_us: f64,
    /// Script calls per operation: below 1 for Enqueue when concurrent calls share
    /// script calls.
    pub(crate) script_calls: f64,
}

impl CpuSnapshot {
    /// Now, for the service process `service_pid` and the Redis behind `conn`.
    pub(crate) async fn take(
        conn: &mut MultiplexedConnection,
        service_pid: u32,
    ) -> Result<CpuSnapshot> {
        let cpu = info(conn, "cpu").await?;
        let stats = info(conn, "commandstats").await?;
        let field = |name: &str| {
            info_field(&cpu, name)
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        Ok(CpuSnapshot {
            service: process_cpu_s(Some(service_pid)).await,
            redis: field("used_cpu_user") + field("used_cpu_sys"),
            bench: process_cpu_s(None).await,
            script_calls: command_calls(&stats, is_script_call),
        })
    }

    pub(crate) fn per_op(&self, later: &CpuSnapshot, ops: u64) -> CpuPerOp {
        let per = |a: f64, b: f64| (b - a).max(0.0) * 1e6 / ops.max(1) as f64;
        CpuPerOp {
            service_us: per(self.service, later.service),
            redis_us: per(self.redis, later.redis),
            bench_us: per(self.bench, later.bench),
            script_calls: later.script_calls.saturating_sub(self.script_calls) as f64
                / ops.max(1) as f64,
        }
    }
}

/// Whether an INFO commandstats line counts script calls: dueq's functions (FCALL,
/// FCALL_RO) or a script sent whole (EVALSHA, EVAL).
pub(crate) fn is_script_call(line: &str) -> bool {
    [
        "cmdstat_fcall:",
        "cmdstat_fcall_ro:",
        "cmdstat_evalsha:",
        "cmdstat_eval:",
    ]
    .iter()
    .any(|c| line.starts_with(c))
}
