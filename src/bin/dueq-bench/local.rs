//! The two facts every part of the bench's environment shares: the key prefix of what
//! it writes through dueq, and how it finds a free local port. A leaf, so `env`,
//! `own_redis` and `service` can all use them without importing each other.

use std::net::TcpListener;

use crate::Result;

/// Key prefix of everything the bench writes through dueq.
pub(crate) const PREFIX: &str = "dueqbench";

/// A port free on 127.0.0.1 now (the OS picks it).
pub(crate) fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}
