//! The performance targets dueq is held to, checked against a report's rows. A target whose rows this
//! run did not measure is "n/a", neither met nor missed.

use serde_json::Value;

use super::Report;

#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(super) what: String,
    /// None: not measured in this run.
    pub(super) met: Option<bool>,
    pub(super) detail: String,
}

/// Whether a target was met, and the figures that say so.
type Check = Option<(bool, String)>;

impl Report {
    /// Compares the results with the performance targets.
    pub(crate) fn check_targets(&mut self) {
        self.check_enqueue();
        self.check_consume();
        self.check_claim_scaling();
        self.check_longpoll();
        self.check_memory();
        self.check_migrate();
        self.check_watch();
        self.check_dispatch();
        self.check_flow();
        self.check_deps();
        self.check_console();
        self.check_clients();
        self.check_tenants();
    }

    /// Issue 29 item 4: one tenant's abuse costs another at most twice its p99.
    fn check_tenants(&mut self) {
        let t = self
            .extra(
                "tenants",
                "tenant B GetJob p99 while A pages 1 MiB jobs",
                "ratio_to_alone",
            )
            .map(|r| (r <= 2.0, format!("{r:.2}x B's p99 alone")));
        self.target("tenant isolation p99 <= 2x alone", t);
    }

    /// The client libraries' workers against the BullMQ Worker drained beside each
    /// (clients.rs), and their Redis CPU per job against the worker fast path's (a
    /// library that added a round trip per job would cost Redis more).
    fn check_clients(&mut self) {
        for (row, min) in [("ts client worker", 1.5), ("python client worker", 0.5)] {
            let t = self.extra("peers", row, "bullmq_ratio").map(|r| {
                (
                    r >= min,
                    format!("{r:.2}x the bullmq Worker drained beside it"),
                )
            });
            self.target(&format!("{row} >= {min}x BullMQ Worker"), t);
        }
        // Redis's cost per job, not the count of script calls: how many acks share
        // a call depends on how they arrive, while the CPU is what a job costs.
        let fast = self.extra("consume", "worker fast path", "redis_cpu_us_per_job");
        for row in [
            "ts client worker",
            "python client worker",
            "rust client worker",
        ] {
            let t = self
                .extra("peers", row, "redis_cpu_us_per_job")
                .zip(fast)
                .filter(|&(_, f)| f > 0.0)
                .map(|(c, f)| {
                    (
                        c <= f * 1.25,
                        format!("{:.2}x ({c:.0} vs {f:.0} us/job)", c / f),
                    )
                });
            self.target(&format!("{row} Redis CPU/job <= 1.25x worker fast path"), t);
        }
    }

    fn target(&mut self, what: &str, check: Check) {
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

    fn extra(&self, section: &str, name: &str, key: &str) -> Option<f64> {
        self.row(section, name)
            .and_then(|r| r.extra.get(key))
            .and_then(Value::as_f64)
    }

    fn ratio(&self, name: &str) -> Option<f64> {
        self.row("grpc", name).and_then(|x| x.ratio)
    }

    fn ops(&self, section: &str, name: &str) -> Option<f64> {
        self.row(section, name).and_then(|x| x.ops_s)
    }

    /// gRPC against the ceiling and against BullMQ (issue 35: jobs/s at the bench's
    /// concurrency, 32 callers by default, and Redis CPU per job).
    fn check_enqueue(&mut self) {
        let at_least = |x: Option<f64>, min: f64| x.map(|x| (x >= min, format!("{x:.2}x")));
        let t = at_least(self.ratio("Enqueue"), 0.5);
        self.target("Enqueue >= 0.5x unpipelined ceiling", t);
        let t = self
            .versus(("grpc", "Enqueue"), ("peers", "bullmq Queue.add"), 1.5)
            .map(|(met, detail)| {
                let floor = self.unary_floor("bullmq Queue.add", "add");
                (met, format!("{detail}{}", floor.unwrap_or_default()))
            });
        self.target("Enqueue >= 1.5x BullMQ add", t);
        let t = self
            .extra("grpc", "Enqueue", "redis_cpu_us_per_op")
            .zip(self.extra("peers", "bullmq Queue.add", "redis_cpu_us_per_op"))
            .filter(|&(_, b)| b > 0.0)
            .map(|(d, b)| {
                (
                    d / b <= 0.5,
                    format!("{:.2}x ({d:.1} vs {b:.1} us/job)", d / b),
                )
            });
        self.target("Enqueue Redis CPU/job <= 0.5x BullMQ add", t);
        let t = at_least(self.ratio("EnqueueBatch"), 0.8);
        self.target("EnqueueBatch >= 0.8x pipelined ceiling", t);
        let t = self.versus(
            ("grpc", "EnqueueBatch"),
            ("peers", "bullmq Queue.addBulk"),
            3.0,
        );
        self.target("EnqueueBatch >= 3x BullMQ addBulk", t);
    }

    /// One row's ops/s over another's, at least `min`.
    fn versus(&self, ours: (&str, &str), peer: (&str, &str), min: f64) -> Check {
        let (d, b) = self.ops(ours.0, ours.1).zip(self.ops(peer.0, peer.1))?;
        (b > 0.0).then(|| (d / b >= min, format!("{:.2}x ({d:.0} vs {b:.0}/s)", d / b)))
    }

    /// The consume paths against BullMQ's Worker (same pre-fill, same concurrency,
    /// same Redis): each a ratio to the peer, n/a when the peer did not run.
    fn check_consume(&mut self) {
        let bullmq = self.ops("peers", "bullmq Worker");
        let bullmq_cpu = self.extra("peers", "bullmq Worker", "redis_cpu_us_per_job");
        let fast = self.ops("consume", "worker fast path");
        let fast_cpu = self.extra("consume", "worker fast path", "redis_cpu_us_per_job");
        let carried = self.ops("consume", "ClaimJob+acks");
        let carried_cpu = self.extra("consume", "ClaimJob+acks", "redis_cpu_us_per_job");
        // dueq's jobs/s against BullMQ's, with the Redis CPU of both in the detail.
        let jobs_s = |d: Option<f64>, d_cpu: Option<f64>, min: f64| {
            d.zip(bullmq).filter(|&(_, b)| b > 0.0).map(|(d, b)| {
                let cpu = match d_cpu.zip(bullmq_cpu) {
                    Some((d, b)) if b > 0.0 => {
                        format!("; Redis CPU/job {d:.0} vs {b:.0} us: {:.2}x", d / b)
                    }
                    _ => String::new(),
                };
                (
                    d / b >= min,
                    format!("{:.2}x ({d:.0} vs {b:.0} jobs/s{cpu})", d / b),
                )
            })
        };
        let cpu_at_most = |d: Option<f64>, max: f64| {
            d.zip(bullmq_cpu).filter(|&(_, b)| b > 0.0).map(|(d, b)| {
                (
                    d / b <= max,
                    format!("{:.2}x ({d:.0} vs {b:.0} us/job)", d / b),
                )
            })
        };
        // The paired rounds (peers.rs) decide when they ran: each ratio compares
        // drains made side by side; the separate rows ran minutes apart.
        let (paired_jobs, paired_cpu) = (
            self.paired("jobs_s_ratio_median", "jobs_s_ratios"),
            self.paired("redis_cpu_ratio_median", "redis_cpu_ratios"),
        );
        let median = |p: Option<(f64, String)>, met: fn(f64) -> bool| {
            p.map(|(m, each)| (met(m), format!("{m:.2}x median of paired rounds ({each})")))
        };
        let t = median(paired_jobs, |m| m >= 2.0).or_else(|| jobs_s(fast, fast_cpu, 2.0));
        self.target("worker fast path >= 2x BullMQ Worker", t);
        let t = median(paired_cpu, |m| m <= 0.4).or_else(|| cpu_at_most(fast_cpu, 0.4));
        self.target("worker fast path Redis CPU/job <= 0.4x BullMQ Worker", t);
        let t = jobs_s(carried, carried_cpu, 0.75).map(|(met, detail)| {
            (
                met,
                format!(
                    "{detail}{}",
                    self.unary_floor("bullmq Worker", "job").unwrap_or_default()
                ),
            )
        });
        self.target("ClaimJob+acks >= 0.75x BullMQ Worker", t);
        let t = cpu_at_most(carried_cpu, 1.0);
        self.target("ClaimJob+acks Redis CPU/job <= 1x BullMQ Worker", t);
        self.check_claim_latency();
        self.check_bare_tonic();
        self.check_floors();
    }

    /// The claim latency probes under the unary and the fast-path drains.
    fn check_claim_latency(&mut self) {
        let p99 = |name: &str| {
            self.row("consume", name)
                .and_then(|r| r.p99_ms)
                .map(|p| (p <= 10.0, format!("p99 {p:.2} ms")))
        };
        let (unary_p99, fast_p99) = (p99("claim latency"), p99("claim latency, worker fast path"));
        self.target(
            "claim latency p99 <= 10 ms (under ClaimJob+AckJob load)",
            unary_p99,
        );
        self.target(
            "claim latency p99 <= 10 ms (under worker fast path load)",
            fast_p99,
        );
    }

    /// dueq's layers on an empty RPC: the service's CPU per Health/Check against a
    /// bare tonic health service's, same callers, connections and calls.
    fn check_bare_tonic(&mut self) {
        let key = "service_cpu_us_per_call";
        let t = self
            .extra("consume", "empty RPC", key)
            .zip(self.extra("consume", crate::rpc_floor::BARE_ROW, key))
            .filter(|&(_, b)| b > 0.0)
            .map(|(d, b)| {
                (
                    d / b <= 1.25,
                    format!("{:.2}x ({d:.1} vs {b:.1} us/call)", d / b),
                )
            });
        self.target("empty RPC service CPU <= 1.25x bare tonic", t);
    }

    /// Each single-item script's Redis CPU per call against its floor (the same
    /// commands raw in one MULTI/EXEC: floor.rs).
    fn check_floors(&mut self) {
        use crate::script_rows::row_name;
        let key = "redis_cpu_us_per_call";
        for (script, row) in [
            ("enqueue_jobs", row_name("enqueue_jobs", 1)),
            ("claim_jobs", row_name("claim_jobs", 1)),
            ("ack_job", row_name("ack_job", 1)),
            ("claim_due", "claim_due, 1 due".to_string()),
        ] {
            let t = self
                .extra("consume", &row, key)
                .zip(self.extra("consume", &format!("{script} floor"), key))
                .filter(|&(_, f)| f > 0.0)
                .map(|(d, f)| {
                    (
                        d / f <= 2.0,
                        format!("{:.2}x ({d:.1} vs {f:.1} us/call)", d / f),
                    )
                });
            self.target(&format!("{script} Redis CPU/call <= 2x floor"), t);
        }
    }

    /// A median ratio of the paired rounds (peers.rs) and the rounds' ratios listed.
    fn paired(&self, median: &str, each: &str) -> Option<(f64, String)> {
        let row = "paired: worker fast path / bullmq Worker";
        let m = self.extra("peers", row, median)?;
        let each = self
            .row("peers", row)?
            .extra
            .get(each)?
            .as_str()?
            .to_string();
        Some((m, each))
    }

    /// The unary path's CPU floor beside BullMQ's whole operation (`what`: the peer
    /// row's op): one empty RPC's service and client CPU against the peer row's
    /// Redis and Node CPU per op. On a box where the first is the larger, no unary
    /// path can beat the peer's rate: the hop alone costs more than its whole op.
    fn unary_floor(&self, peer: &str, what: &str) -> Option<String> {
        let hop = self.extra("consume", "empty RPC", "service_cpu_us_per_call")?
            + self.extra("consume", "empty RPC", "bench_cpu_us_per_call")?;
        let bullmq = self.extra("peers", peer, "redis_cpu_us_per_op")?
            + self.extra("peers", peer, "client_cpu_us_per_op")?;
        Some(format!(
            "; one empty RPC alone costs {hop:.0} us of service+client CPU against BullMQ's whole {what} at {bullmq:.0} us"
        ))
    }

    /// Claim latency flat in the number of schedules stored.
    fn check_claim_scaling(&mut self) {
        let p50 = |n: u64| {
            self.row("claim_scaling", &format!("nothing due, {n} stored"))
                .and_then(|r| r.p50_ms)
        };
        let (lo, hi) = (self.sizes.iter().min(), self.sizes.iter().max());
        let t = lo.zip(hi).and_then(|(&lo, &hi)| {
            p50(lo).zip(p50(hi)).map(|(a, b)| {
                (
                    b <= 1.5 * a,
                    format!("p50 {b:.3} ms at {hi} vs {a:.3} ms at {lo}: {:.2}x", b / a),
                )
            })
        });
        self.target(
            "ClaimDueSchedule p50 at largest size <= 1.5x p50 at smallest (1M vs 1k schedules)",
            t,
        );
    }

    /// Idle waiters cost no Redis commands and little memory; wakes are prompt.
    fn check_longpoll(&mut self) {
        let waiters = self.waiters;
        let t = self
            .extra("longpoll", "idle Redis commands", "with_waiters_per_s")
            .zip(self.extra("longpoll", "idle Redis commands", "baseline_per_s"))
            .map(|(w, b)| {
                // Per-waiter polling would be at least one command per waiter per
                // wait (30 s); allow far less than one per waiter per minute.
                let allowed = (waiters as f64 / 60.0).max(5.0);
                (
                    w - b <= allowed,
                    format!(
                        "{w:.1}/s with {waiters} waiters vs {b:.1}/s with none (allowed +{allowed:.0}/s)"
                    ),
                )
            });
        self.target("idle waiters: no per-waiter Redis commands", t);
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
    }

    /// Redis bytes per schedule and per job.
    fn check_memory(&mut self) {
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
    }

    /// A target schedule's due slot becomes a claimable job promptly (issue 30).
    fn check_dispatch(&mut self) {
        let t = self
            .row("dispatch", "schedule target dispatch")
            .and_then(|r| r.p99_ms)
            .map(|p| (p <= 100.0, format!("p99 {p:.2} ms")));
        self.target("schedule target dispatch p99 <= 100 ms", t);
    }

    /// No Migrate script long enough to stall Redis.
    fn check_migrate(&mut self) {
        let t = self
            .extra("migrate", "longest script (SLOWLOG)", "ms")
            .map(|ms| (ms <= 10.0, format!("{ms:.2} ms")));
        self.target("migration: no script over 10 ms", t);
    }

    /// WatchJob: a change reaches a watcher soon, and open streams are cheap.
    fn check_watch(&mut self) {
        let section = crate::watch::S;
        let t = self
            .row(section, "WatchJob progress")
            .and_then(|r| r.p99_ms)
            .map(|p| (p <= 50.0, format!("p99 {p:.2} ms")));
        self.target("WatchJob progress p99 <= 50 ms", t);
        let streams = self.extra(section, "10k WatchJob streams", "streams");
        let growth = self.extra(section, "10k WatchJob streams", "rss_growth_mb");
        match streams.zip(growth) {
            Some((n, _)) if n < 10_000.0 => self.targets.push(Target {
                what: "10k WatchJob streams RSS <= 100 MB".into(),
                met: None,
                detail: format!("needs 10000 streams (--waiters), this run had {n:.0}"),
            }),
            other => {
                let t =
                    other.map(|(n, mb)| (mb <= 100.0, format!("+{mb:.1} MB for {n:.0} streams")));
                self.target("10k WatchJob streams RSS <= 100 MB", t);
            }
        }
    }
    /// Flow control (issue 32): its cost when no limit binds, slot-freed dispatch,
    /// fairness and memory per key, all against baselines of the same run.
    fn check_flow(&mut self) {
        use crate::flow::{fairness, memory, slot, throughput, S};
        let t = self
            .row(S, throughput::TARGET_ROW)
            .and_then(|r| r.ratio.zip(r.ops_s))
            .map(|(x, ops)| {
                (
                    x >= 0.9,
                    format!("{x:.2}x ({ops:.0} jobs/s, medians of paired rounds)"),
                )
            });
        self.target("flow limits not binding >= 0.9x unlimited", t);
        let p99 = self.row(S, slot::SLOT_ROW).and_then(|r| r.p99_ms);
        let calls = self.extra(S, slot::FAST_ROW, "script_calls_per_job");
        let stalled = self
            .row(S, slot::FAST_ROW)
            .and_then(|r| r.extra.get("stalled"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let t = p99.zip(calls).map(|(p, c)| {
            let fast = if stalled {
                "fast path STALLED".to_string()
            } else {
                format!("fast path {c:.2} script calls/job (<= 1)")
            };
            (
                p <= 5.0 && c <= 1.0 && !stalled,
                format!("p99 {p:.2} ms; {fast}"),
            )
        });
        self.target("flow slot freed -> dispatch p99 <= 5 ms", t);
        let t = self
            .extra(S, fairness::JAIN_ROW, "jain")
            .map(|j| (j >= 0.99, format!("{j:.4}")));
        self.target("flow fairness Jain >= 0.99", t);
        let t = self
            .extra(S, memory::ACTIVE_ROW, "bytes")
            .map(|b| (b <= 200.0, format!("{b:.0} B")));
        self.target("flow active key <= 200 B", t);
        let t = self.extra(S, memory::IDLE_ROW, "flow_keys").map(|k| {
            let left = self
                .extra(S, memory::IDLE_ROW, "bytes_vs_keyless")
                .unwrap_or(0.0);
            (
                k == 0.0,
                format!("{k:.0} flow keys left; used_memory {left:+.0} B vs the keyless run"),
            )
        });
        self.target("flow idle keys 0 bytes", t);
    }

    /// Job dependencies (issue 34): a fan-in costs its children no extra script
    /// call beyond what plain jobs drained the same way cost, and no graph script
    /// holds Redis for 10 ms.
    fn check_deps(&mut self) {
        use crate::deps::{FAN_IN_ROW, LONGEST, PLAIN_ROW, S};
        let key = "script_calls_per_job";
        let t = self
            .extra(S, FAN_IN_ROW, key)
            .zip(self.extra(S, PLAIN_ROW, key))
            .map(|(flow, plain)| {
                (
                    flow - plain <= 1.0,
                    format!(
                        "{:+.3} ({flow:.3} vs {plain:.3} script calls/job)",
                        flow - plain
                    ),
                )
            });
        self.target("deps fan-in extra script calls/job <= 1", t);
        let longest = self
            .rows
            .iter()
            .filter(|r| r.section == S)
            .filter_map(|r| r.extra.get(LONGEST).and_then(Value::as_f64))
            .fold(None, |most: Option<f64>, us| {
                Some(most.map_or(us, |m| m.max(us)))
            });
        let t = longest.map(|us| (us <= 10_000.0, format!("longest {:.2} ms", us / 1e3)));
        self.target("deps script <= 10 ms", t);
    }

    /// The web console (issue 33): every page's p95, ten live tabs' Redis
    /// commands/s against one tab's (net of the idle rate), the longest script of
    /// the page runs; each target names its scale when it is not the issue's.
    fn check_console(&mut self) {
        use crate::console::{
            LONGEST, LONGEST_ROW, NET_RATIO, P95, RAW_RATIO, S, SCALE_ROW, SCALE_SUFFIX, TABS_ROW,
        };
        let suffix = self
            .row(S, SCALE_ROW)
            .and_then(|r| r.extra.get(SCALE_SUFFIX))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let worst = self
            .rows
            .iter()
            .filter(|r| r.section == S)
            .filter_map(|r| Some((r.extra.get(P95)?.as_f64()?, r.name.clone())))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        let t = worst.map(|(ms, name)| (ms <= 50.0, format!("worst p95 {ms:.2} ms ({name})")));
        self.target(&format!("console page p95 <= 50 ms{suffix}"), t);
        let t = self
            .extra(S, TABS_ROW, NET_RATIO)
            .zip(self.extra(S, TABS_ROW, RAW_RATIO))
            .map(|(net, raw)| (net <= 1.1, format!("{net:.3}x net of idle ({raw:.3}x raw)")));
        self.target(
            &format!("console tabs Redis cmds/s <= 1.1x one tab{suffix}"),
            t,
        );
        let t = self
            .extra(S, LONGEST_ROW, LONGEST)
            .map(|us| (us <= 5_000.0, format!("longest {:.2} ms", us / 1e3)));
        self.target(&format!("console Redis script <= 5 ms{suffix}"), t);
    }
}
