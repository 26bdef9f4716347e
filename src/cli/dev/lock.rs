//! One `dueq dev` per data folder (issue 29). Two runs on one folder start two
//! redis-servers appending to one AOF, which corrupts the store (jobs counted but not
//! listed, pending forever). The folder is therefore locked: an advisory `flock` on
//! `LOCK_FILE` inside it, taken before redis-server starts and held for the life of
//! the run. The holder writes its pid into the file so that a second run can say who
//! holds it. The kernel releases the lock when the holder's process ends, however it
//! ends (a SIGKILL included), so a crashed run never leaves the folder locked; the
//! pid left in the file is only read while the lock is held, i.e. while it is true.
//! The lock's file descriptor is close-on-exec: redis-server does not inherit it.

use std::{
    fs::{File, OpenOptions},
    io::{Read, Seek, SeekFrom, Write},
    os::fd::AsRawFd,
    path::Path,
};

/// The lock file's name inside the data folder.
pub(super) const LOCK_FILE: &str = "dueq-dev.lock";

/// The data folder's lock, held until dropped (or the process ends).
#[derive(Debug)]
pub(super) struct DataLock {
    _file: File,
}

/// Takes the data folder's lock, or says why not: which process holds it.
pub(super) fn lock(dir: &Path) -> Result<DataLock, String> {
    let path = dir.join(LOCK_FILE);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| format!("cannot open the lock file {}: {e}", path.display()))?;
    // SAFETY: flock on a descriptor this function owns; it touches no memory.
    let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if locked != 0 {
        let error = std::io::Error::last_os_error();
        if error.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(format!("cannot lock {}: {error}", path.display()));
        }
        let mut holder = String::new();
        let _ = file.read_to_string(&mut holder);
        let holder = match holder.trim() {
            "" => "another process".to_owned(),
            pid => format!("process {pid}"),
        };
        return Err(format!(
            "the data folder {} is in use by another `dueq dev` ({holder} holds {}); \
             stop that run, or give this one its own folder with --data-dir \
             (two redis-servers on one AOF corrupt the store)",
            dir.display(),
            path.display()
        ));
    }
    let pid = std::process::id();
    file.set_len(0)
        .and_then(|()| file.seek(SeekFrom::Start(0)))
        .and_then(|_| writeln!(file, "{pid}"))
        .and_then(|()| file.flush())
        .map_err(|e| format!("cannot write the lock file {}: {e}", path.display()))?;
    Ok(DataLock { _file: file })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_one_folder_is_refused_naming_the_holder_and_freed_on_drop() {
        let dir = std::env::temp_dir().join(format!("dueq-dev-lock-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("dir");
        let held = lock(&dir).expect("the first lock");
        let refused = lock(&dir).expect_err("a second lock on the same folder");
        assert!(
            refused.contains(&format!("process {}", std::process::id())),
            "{refused}"
        );
        drop(held);
        let again = lock(&dir).expect("free again once the holder let go");
        drop(again);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
