//! The dueq service as a child process (`dueq serve`), so its RSS and CPU are its
//! own, apart from the bench's client side, as they would be in production.

use std::{
    ffi::OsString,
    net::SocketAddr,
    path::Path,
    process::{Child, Command, ExitStatus, Stdio},
};

use crate::{local::PREFIX, Result};

pub(crate) struct Service {
    child: Child,
}

impl Service {
    /// Starts `dueq serve` from `binary` on `listen`. Every setting is passed as a
    /// flag, so DUEQ_* variables in the environment cannot change what is measured.
    pub(crate) fn start(binary: &Path, listen: SocketAddr, redis_url: &str) -> Result<Service> {
        Service::start_with(binary, listen, redis_url, &[])
    }

    /// As `start`, with `extra` flags after the common ones (the security family's
    /// TLS and auth file).
    pub(crate) fn start_with(
        binary: &Path,
        listen: SocketAddr,
        redis_url: &str,
        extra: &[OsString],
    ) -> Result<Service> {
        let child = Command::new(binary)
            .arg("serve")
            .args(["--listen", &listen.to_string()])
            .args(["--redis-url", redis_url])
            .args(["--key-prefix", PREFIX])
            .args(["--health-interval", "200ms", "--max-batch", "10000"])
            .args(["--shutdown-grace", "2s", "--pool-size", "4"])
            .args(extra)
            .env("DUEQ_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {} serve: {e}", binary.display()))?;
        Ok(Service { child })
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its exit status, if it has exited.
    pub(crate) fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    pub(crate) fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
