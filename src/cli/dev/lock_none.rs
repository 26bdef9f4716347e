//! Where flock(2) is not available, the data folder is not locked: keep one
//! `dueq dev` per folder by hand (docs/operations.md).

use std::path::Path;

/// Nothing held.
#[derive(Debug)]
pub(super) struct DataLock;

/// Always granted.
pub(super) fn lock(_dir: &Path) -> Result<DataLock, String> {
    Ok(DataLock)
}
