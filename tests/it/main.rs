//! dueq's integration tests: one binary, a module per area, one shared harness.
//!
//! Every test starts its own redis-server and its own service, so tests run in
//! parallel threads of this one process without sharing anything.

mod common;

mod auth;
mod bad_input;
mod bench_smoke;
mod binary;
mod claim;
mod cli;
mod cluster;
mod concurrency;
mod dev;
mod doc_examples;
mod dst;
mod examples;
mod faults;
mod fd_exhaustion;
mod health_command;
mod jobs_admin;
mod jobs_crash;
mod jobs_dedup;
mod jobs_lifecycle;
mod jobs_migrate;
mod jobs_occurrence_lease;
mod jobs_retention;
mod jobs_validation;
mod longpoll;
mod metrics;
mod migrate;
mod monitor;
mod queue_ops;
mod quotas;
mod redis_tls;
mod reply_budgets;
mod schedule_api;
mod schedule_backfill;
mod schedule_jitter;
mod schedule_overlap;
mod schedule_policies;
mod schedule_runs;
mod schedule_trigger;
mod tls;
mod transport_limits;
mod work_stream;
