//! dueq's integration tests: one binary, a folder per area, one shared harness.
//!
//! Every test starts its own redis-server and its own service, so tests run in
//! parallel threads of this one process without sharing anything.
//!
//! The areas (run one with `cargo test --test it <area>::`):
//! - `common/`     the harness: redis-server, the service, clients, patience, programs
//! - `schedules/`  the schedule API, claiming occurrences, policies, long-polls, DST
//! - `flow/`       flow control: concurrency keys, rates, fairness, no over-admission
//! - `deps/`       job dependencies: flows of jobs, their rules, results, retention
//! - `jobs/`       the job lifecycle, dedup, retention, admin, the Work stream, crashes
//! - `filters/`    ListJobs' filter and the bulk actions (RetryJobs, CancelJobs, DeleteJobs)
//! - `queues/`     queue inspection and controls, per-namespace quotas
//! - `deadgroups/` dead letters grouped by error: listing, group retry and purge, Migrate
//! - `audit/`      the audit log: records of audited calls, ListAuditEvents
//! - `workers/`    worker sessions across replicas, expiring leases: ListWorkers
//! - `migrate/`    Migrate: older layouts (schedules and jobs), repair, imports
//! - `cluster/`    Redis Cluster and Sentinel, failover
//! - `console/`    the web console: pages, sign-in, roles, CSRF, actions, live
//!   updates; and in Chromium (ignored: needs chromium and node)
//! - `security/`   authentication and authorisation, TLS to clients and to Redis
//! - `edge/`       bad input, Redis faults, transport limits, reply budgets, fds
//! - `clients/`    the client libraries' conformance suite (clients/conformance/),
//!   each case run for Python, TypeScript and Rust
//! - `tools/`      the binary and its commands (dev, health, the CLI), /metrics, the
//!   monitor's logs, the bench's smoke run, the client examples
//! - `doc_examples.rs`     the examples of README.md and docs/ run as written
//!
//! Tests that need a program besides cargo and redis-server (grpcurl, node and npm,
//! python3 with grpcio, `script`) are `#[ignore = "needs <program>"]`: a plain
//! `cargo test` leaves them out and counts them as ignored; `cargo test --
//! --include-ignored` (what CI runs) runs them, and a missing program fails the test
//! with how to install it (`common::tools::require`). None passes without running.

// The decisions clippy.toml lists hold here too: no fixed sleeps (wait on an
// observable fact, common/patience.rs), the host clock not read behind the service's
// back. Raw Redis commands, which the tests use for inspection and fault injection,
// go through common::cmd and common::pipe.
#![warn(clippy::disallowed_methods)]

mod common;

mod audit;
mod clients;
mod cluster;
mod console;
mod deadgroups;
mod deps;
mod doc_examples;
mod edge;
mod filters;
mod flow;
mod jobs;
mod migrate;
mod queues;
mod schedules;
mod security;
mod tools;
mod workers;
