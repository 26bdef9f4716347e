//! Never an orphaned redis-server, however dueq ends.
//!
//! A clean stop (Ctrl-C, SIGTERM) sends SHUTDOWN itself (see `mod.rs`); this covers the
//! end nothing can catch, SIGKILL (or a crash) of dueq. Chosen mechanism, on Linux:
//! the child asks the kernel, between fork and exec, for SIGTERM when its parent dies
//! (`prctl(PR_SET_PDEATHSIG)`). Why this one:
//! - it needs no cooperation from dueq at the moment it dies, which SIGKILL rules out;
//! - SIGTERM makes redis-server shut down as SHUTDOWN does (the AOF fsynced and closed),
//!   so even a killed dueq leaves complete data behind;
//! - the alternatives are weaker: a shared process group only helps when the whole group
//!   is signalled (a `kill -9 <pid>` is not), and a watcher process is one more process
//!   that can itself be killed.
//!
//! The signal follows the *thread* that forked, not the process, so the child must be
//! spawned from a thread that lives as long as dueq: the main thread (`dueq dev` runs on
//! it, inside the runtime's `block_on`). Elsewhere than Linux there is no such request;
//! there a SIGKILLed `dueq dev` leaves its redis-server running (see `redis.rs`).

use tokio::process::Command;

/// Makes `command`'s child receive SIGTERM when dueq dies (Linux).
#[cfg(target_os = "linux")]
pub(super) fn terminate_with_parent(command: &mut Command) {
    let parent = std::process::id();
    // SAFETY: the closure runs in the forked child before exec and calls only
    // async-signal-safe functions (prctl, getppid); it allocates nothing.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // dueq may have died between fork and prctl: then nobody would signal us.
            if libc::getppid() as u32 != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
pub(super) fn terminate_with_parent(_command: &mut Command) {}
