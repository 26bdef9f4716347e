//! Raw Redis commands, pipelines and scripts, for what the tests do to Redis behind
//! the service's back: inspect what it holds, inject faults, lay out older data.

// clippy.toml keeps raw Redis commands in src/store/; one clippy.toml serves the whole
// package, so the tests reach them through these three, which carry its one allow.
#![allow(clippy::disallowed_methods)]

use deadpool_redis::redis;

/// A raw Redis command, `redis::cmd`.
pub fn cmd(name: &str) -> redis::Cmd {
    redis::cmd(name)
}

/// A raw Redis pipeline, `redis::pipe`.
pub fn pipe() -> redis::Pipeline {
    redis::pipe()
}

/// A Lua script of the test's own (an older layout's), `redis::Script::new`.
pub fn lua_script(code: &str) -> redis::Script {
    redis::Script::new(code)
}
