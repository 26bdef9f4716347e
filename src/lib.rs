//! dueq: a gRPC job-queue and recurring-schedule service backed by Redis.
//!
//! The library's surface is deliberate and small: the generated protocol (`proto`),
//! the service's configuration, logging and entry point (`config`, `logging`, `server`), and `probe`, the
//! one door for what runs beside the service and must touch its store directly (the
//! `dueq-bench` tool, and the integration tests' fixtures: a clock jump, an older
//! layout). Everything else is private to the crate; `docs/DESIGN.md` describes the
//! layers and the invariants the code cites by number.
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub mod proto {
    //! Generated protobuf and gRPC code for `dueq.v1`.
    #![allow(clippy::all, missing_docs, unreachable_pub)]
    tonic::include_proto!("dueq.v1");

    /// Encoded `FileDescriptorSet` served by gRPC reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/dueq_descriptor.bin"));
}

pub mod config;
pub mod logging;
pub mod probe;
pub mod server;

mod accept;
mod api;
mod auth;
mod clock;
mod connections;
mod context;
mod domain;
mod error;
mod health;
mod jobs;
mod layers;
mod longpoll;
mod metrics;
mod migrate;
mod monitor;
mod namespaces;
mod rpc;
mod schedules;
mod store;
mod sync;
mod timing;
mod tls;

#[cfg(test)]
mod testing;
