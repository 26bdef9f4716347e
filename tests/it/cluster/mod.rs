//! dueq on Redis Cluster and Redis Sentinel: real clusters of redis-server processes
//! the harness starts (tests/it/common/cluster.rs), the real service over gRPC.

mod basics;
mod config;
mod dispatch_failover;
mod failover;
mod harness;
mod load;
mod routing;
mod sentinel;
mod tls;
mod wait;
mod wait_kill;
mod wakeups;
mod watch;
