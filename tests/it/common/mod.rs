//! Test harness: a real redis-server on a free port and the real service in-process
//! on another, talked to over real gRPC. No mocks.

mod admin;
mod certs;
mod cluster;
mod flow;
mod jobs;
mod layout;
mod metrics;
mod patience;
mod raw;
mod redis_server;
mod schedules;
mod service;
mod store;
pub mod tools;

pub use admin::*;
pub use certs::*;
pub use cluster::*;
pub use dueq::proto;
pub use flow::*;
pub use jobs::*;
pub use layout::*;
pub use metrics::*;
pub use patience::*;
pub use raw::*;
pub use redis_server::*;
pub use schedules::*;
pub use service::*;
pub use store::*;
