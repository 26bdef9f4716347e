//! A redis-server of the bench's own: on a free port, with no persistence (so it
//! writes nothing to its directory, the system's temp dir), so the bench may flush it
//! between families.

use std::process::{Child, Command, Stdio};

use crate::{binaries, local::free_port, Result};

pub(crate) struct OwnRedis {
    child: Child,
    pub(crate) url: String,
}

impl OwnRedis {
    pub(crate) fn start() -> Result<OwnRedis> {
        let binary = binaries::on_path("redis-server")
            .ok_or("redis-server not found on PATH (or pass --redis-url)")?;
        let port = free_port()?;
        let dir = std::env::temp_dir();
        let child = Command::new(binary)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start redis-server: {e}"))?;
        Ok(OwnRedis {
            child,
            url: format!("redis://127.0.0.1:{port}"),
        })
    }

    pub(crate) fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
