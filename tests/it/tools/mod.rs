//! What operators and client authors run: the `dueq` binary (its logs, `dueq dev`,
//! `dueq health`, the CLI), its /metrics, the monitor's log lines, the bench's smoke
//! run, and the client examples in Python, Node and Rust.

mod bench_smoke;
pub(crate) mod binary;
pub(crate) mod cli;
mod compose;
mod dev;
mod examples;
mod health_command;
mod metrics;
mod monitor;
mod profile;
mod traces;
