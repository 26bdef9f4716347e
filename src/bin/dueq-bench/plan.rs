//! The sizes every family runs with: the flags, or the defaults of a full or a
//! smoke run.

use std::time::Duration;

use crate::cli::{BenchArgs, Family};

#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) smoke: bool,
    pub(crate) duration: Duration,
    pub(crate) concurrency: usize,
    pub(crate) sizes: Vec<u64>,
    pub(crate) peer_sizes: Vec<u64>,
    pub(crate) peers: bool,
    pub(crate) waiters: u64,
    pub(crate) records: u64,
    /// Jobs pre-filled before the consume phases (dueq's and BullMQ's Worker).
    pub(crate) prefill: u64,
    /// Work streams of the fast-path drain; None: one.
    pub(crate) work_streams: Option<usize>,
    pub(crate) migrate: u64,
    /// Jobs loaded for the console family.
    pub(crate) console_jobs: u64,
    /// Samples per latency point in claim scaling.
    pub(crate) samples: usize,
    /// Jobs per EnqueueBatch call (and per pipeline in the ceiling).
    pub(crate) batch: usize,
    /// Families to run; empty: all.
    pub(crate) only: Vec<Family>,
}

impl Plan {
    pub(crate) fn from_args(args: &BenchArgs) -> Plan {
        let smoke = args.smoke;
        let pick = |v: &Vec<u64>, smoke_v: &[u64], full: &[u64]| {
            if !v.is_empty() {
                v.clone()
            } else if smoke {
                smoke_v.to_vec()
            } else {
                full.to_vec()
            }
        };
        Plan {
            smoke,
            duration: args.duration.unwrap_or(if smoke {
                Duration::from_millis(300)
            } else {
                Duration::from_secs(5)
            }),
            concurrency: args
                .concurrency
                .unwrap_or(if smoke { 4 } else { 32 })
                .max(1),
            sizes: pick(
                &args.sizes,
                &[100, 1_000],
                &[1_000, 10_000, 100_000, 1_000_000],
            ),
            peer_sizes: pick(&args.peer_sizes, &[100, 1_000], &[1_000, 10_000, 100_000]),
            peers: args.peers,
            waiters: args.waiters.unwrap_or(if smoke { 50 } else { 10_000 }),
            records: args
                .records
                .unwrap_or(if smoke { 1_000 } else { 100_000 })
                .max(1),
            prefill: args
                .prefill
                .unwrap_or(if smoke { 200 } else { 50_000 })
                .max(1),
            work_streams: args.work_streams,
            migrate: args
                .migrate
                .unwrap_or(if smoke { 1_000 } else { 1_000_000 })
                .max(1),
            console_jobs: args
                .console_jobs
                .unwrap_or(if smoke { 2_000 } else { 1_000_000 })
                .max(1),
            samples: if smoke { 30 } else { 500 },
            batch: args.batch.unwrap_or(100).max(1),
            only: args.only.clone(),
        }
    }

    /// Whether `family` runs; the grpc ratios divide by the ceiling, so grpc brings it.
    pub(crate) fn runs(&self, family: Family) -> bool {
        self.only.is_empty()
            || self.only.contains(&family)
            || (family == Family::Ceiling && self.only.contains(&Family::Grpc))
    }
}
