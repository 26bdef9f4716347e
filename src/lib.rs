//! dueq: a gRPC job-queue and recurring-schedule service backed by Redis.
#![forbid(unsafe_code)]

pub mod proto {
    //! Generated protobuf and gRPC code for `dueq.v1`.
    #![allow(clippy::all, missing_docs)]
    tonic::include_proto!("dueq.v1");

    /// Encoded `FileDescriptorSet` served by gRPC reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/dueq_descriptor.bin"));
}

pub mod api;
pub mod clock;
pub mod config;
pub mod domain;
pub mod jobs;
pub mod migrate;
pub mod monitor;
pub mod probe;
pub mod schedules;
pub mod server;
pub mod store;
pub mod timing;
pub mod wake;
