//! Closed-loop load: `concurrency` workers each call one operation back to back for
//! `duration`; latencies are kept per call in a Vec and sorted for percentiles (no
//! histogram crate needed at these sample counts).

use std::{
    future::Future,
    time::{Duration, Instant},
};

use crate::{BenchError, Result};

#[derive(Debug, Clone, Default)]
pub(crate) struct Stats {
    /// Items done (jobs for a batch call, 1 per call otherwise).
    pub(crate) items: u64,
    pub(crate) calls: u64,
    pub(crate) secs: f64,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) p999_ms: f64,
}

impl Stats {
    pub(crate) fn ops_s(&self) -> f64 {
        if self.secs > 0.0 {
            self.items as f64 / self.secs
        } else {
            0.0
        }
    }

    /// From latencies in nanoseconds.
    pub(crate) fn from_latencies(mut lat: Vec<u64>, items: u64, secs: f64) -> Stats {
        lat.sort_unstable();
        Stats {
            items,
            calls: lat.len() as u64,
            secs,
            p50_ms: percentile(&lat, 0.50),
            p99_ms: percentile(&lat, 0.99),
            p999_ms: percentile(&lat, 0.999),
        }
    }
}

/// The `q` quantile of sorted nanosecond samples, in ms.
fn percentile(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[idx] as f64 / 1e6
}

/// Runs `concurrency` workers for `duration`. `make(i)` builds worker i's operation;
/// each call returns how many items it did (0 = nothing left: the worker stops).
pub(crate) async fn drive<M, W, F>(
    concurrency: usize,
    duration: Duration,
    mut make: M,
) -> Result<Stats>
where
    M: FnMut(usize) -> W,
    W: FnMut() -> F + Send + 'static,
    F: Future<Output = Result<u64>> + Send,
{
    let started = Instant::now();
    let deadline = started + duration;
    let mut tasks = Vec::with_capacity(concurrency);
    for i in 0..concurrency {
        let mut op = make(i);
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(4096);
            let mut items = 0u64;
            while Instant::now() < deadline {
                let t = Instant::now();
                let n = op().await?;
                if n == 0 {
                    break;
                }
                lat.push(t.elapsed().as_nanos() as u64);
                items += n;
            }
            Ok::<_, BenchError>((lat, items))
        }));
    }
    let mut all = Vec::new();
    let mut items = 0;
    for task in tasks {
        let (lat, n) = task.await??;
        all.extend(lat);
        items += n;
    }
    let secs = started.elapsed().as_secs_f64();
    Ok(Stats::from_latencies(all, items, secs))
}
