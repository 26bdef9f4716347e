//! Finding the programs the bench starts: the `dueq` service, `redis-server`, and
//! (for peers) `node` and `npm`.

use std::path::{Path, PathBuf};

use crate::Result;

/// `name` in a directory of PATH, if there is one.
pub(crate) fn on_path(name: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

/// The `dueq` binary to serve from: `given` (--dueq-bin or DUEQ_BIN), else the one
/// next to this executable, where cargo puts every binary of the package it builds.
pub(crate) fn dueq(given: Option<&Path>) -> Result<PathBuf> {
    if let Some(path) = given {
        if path.is_file() {
            return Ok(path.to_owned());
        }
        return Err(format!("--dueq-bin / DUEQ_BIN: no file at {}", path.display()).into());
    }
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find this executable, to look for dueq next to it: {e}"))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    let beside = dir.join(format!("dueq{}", std::env::consts::EXE_SUFFIX));
    if beside.is_file() {
        return Ok(beside);
    }
    // The profile this bench was built with is the one whose dueq belongs next to it.
    let release = if cfg!(debug_assertions) {
        ""
    } else {
        " --release"
    };
    Err(format!(
        "the dueq binary is not at {}: build it with `cargo build{release} --bin dueq` \
         (or `cargo build{release} --bins` for both), or pass --dueq-bin PATH (env DUEQ_BIN)",
        beside.display()
    )
    .into())
}
