//! Store operations behind Migrate's job phase: converting layout-1 jobs (a hash per
//! job, sorted-set ready and listing indexes) to layout 2 (`lua/lib/job.lua`), one
//! bounded script call at a time, each checking Migrate's lock.

use super::{
    reply::{bytes, int, text},
    scripts, Store, StoreError,
};

/// Most jobs one `migrate_jobs` call converts, so no single script holds Redis long.
pub const JOBS_PER_CALL: usize = 50;

/// Which layout-1 keys a SCAN looks for.
#[derive(Debug, Clone, Copy)]
pub enum LegacyKeys {
    /// Ready sets `qr:<queue>` (zsets).
    ReadySets,
    /// Job records `j:<id>` still stored as hashes.
    JobHashes,
    /// Listing sets `qj:<queue>` (zsets).
    Listings,
}

/// Walks a namespace's layout-1 keys of one kind, a SCAN step at a time.
#[derive(Debug)]
pub struct LegacyWalk {
    kind: LegacyKeys,
    /// The next SCAN cursor; `None` once the scan has come back to 0.
    cursor: Option<u64>,
}

impl LegacyWalk {
    pub fn new(kind: LegacyKeys) -> Self {
        LegacyWalk {
            kind,
            cursor: Some(0),
        }
    }

    /// The keys of the next SCAN step (possibly none), or `None` when the walk is over.
    pub async fn next(
        &mut self,
        store: &Store,
        namespace: &str,
        count: u32,
    ) -> Result<Option<Vec<Vec<u8>>>, StoreError> {
        let Some(cursor) = self.cursor else {
            return Ok(None);
        };
        let (next, found) = store
            .scan_legacy_jobs(namespace, self.kind, cursor, count)
            .await?;
        self.cursor = (next != 0).then_some(next);
        Ok(Some(found))
    }
}

/// One step of the conversion (see the modes in `lua/migrate_jobs.lua`).
#[derive(Debug)]
pub enum JobStep<'a> {
    /// Take (and remove) the first members of a ready set, in claim order. Dry runs
    /// do not use it: the `Records` pass counts every job a dry run would convert.
    Ready { set: &'a [u8] },
    /// Convert these jobs, by id.
    Records(&'a [String]),
    /// Unlink these keys.
    Drop(&'a [Vec<u8>]),
    /// Record job layout 2.
    Finish,
}

/// What one step did.
#[derive(Debug, Default)]
pub struct JobStepCounts {
    pub converted: u64,
    /// Pending jobs appended to their ready lists.
    pub pushed: u64,
    /// Members left in the ready set (a `Ready` step).
    pub remaining: u64,
    /// (job id, reason) of records that could not be converted (left as they were).
    pub problems: Vec<(String, String)>,
}

impl Store {
    /// One SCAN step over the namespace's layout-1 keys of one kind.
    async fn scan_legacy_jobs(
        &self,
        namespace: &str,
        kind: LegacyKeys,
        cursor: u64,
        count: u32,
    ) -> Result<(u64, Vec<Vec<u8>>), StoreError> {
        let keys = self.keys(namespace);
        let (ready, listing) = keys.legacy_job_index_prefixes();
        // Prefixes and namespaces hold no glob characters (both are validated).
        let (pattern, kind) = match kind {
            LegacyKeys::ReadySets => (format!("{ready}*"), "zset"),
            LegacyKeys::JobHashes => (format!("{}*", keys.job_prefix()), "hash"),
            LegacyKeys::Listings => (format!("{listing}*"), "zset"),
        };
        self.scan_keys(cursor, &pattern, count, Some(kind)).await
    }

    /// The job ids of job keys found by [`Store::scan_legacy_jobs`].
    pub fn job_ids_of(&self, namespace: &str, found: &[Vec<u8>]) -> Vec<String> {
        let prefix = self.keys(namespace).job_prefix().into_bytes();
        found
            .iter()
            .filter_map(|key| key.strip_prefix(prefix.as_slice()))
            .filter_map(|id| String::from_utf8(id.to_vec()).ok())
            .collect()
    }

    /// Runs one conversion step under Migrate's lock. `None`: the lock was lost and
    /// nothing was written.
    pub async fn migrate_jobs(
        &self,
        namespace: &str,
        token: &str,
        dry_run: bool,
        step: JobStep<'_>,
    ) -> Result<Option<JobStepCounts>, StoreError> {
        let keys = self.keys(namespace);
        let (meta, lock, prefixes) = (keys.meta(), keys.migrate_lock(), keys.job_prefixes());
        let mut script_keys: Vec<&[u8]> = vec![meta.as_bytes(), lock.as_bytes()];
        let mode = match &step {
            JobStep::Ready { .. } => "ready",
            JobStep::Records(_) => "records",
            JobStep::Drop(_) => "drop",
            JobStep::Finish => "finish",
        };
        let dry = if dry_run { "1" } else { "0" };
        let mut args: Vec<&[u8]> = vec![token.as_bytes(), dry.as_bytes(), mode.as_bytes()];
        args.extend(prefixes.args());
        let take = JOBS_PER_CALL.to_string();
        match &step {
            JobStep::Ready { set } => {
                script_keys.push(set);
                args.push(take.as_bytes());
            }
            JobStep::Records(ids) => args.extend(ids.iter().map(|id| id.as_bytes())),
            JobStep::Drop(found) => script_keys.extend(found.iter().map(Vec::as_slice)),
            JobStep::Finish => {}
        }
        let Some(items) = self
            .eval_under_lock(
                &scripts::MIGRATE_JOBS,
                &script_keys,
                &args,
                "migrate jobs reply",
            )
            .await?
        else {
            return Ok(None);
        };
        let count = |i: usize| {
            items
                .get(i)
                .and_then(int)
                .and_then(|n| u64::try_from(n).ok())
                .unwrap_or(0)
        };
        let problems = items
            .get(4..)
            .unwrap_or_default()
            .chunks_exact(2)
            .map(|pair| {
                let id = bytes(&pair[0]).map(|b| String::from_utf8_lossy(&b).into_owned());
                (id.unwrap_or_default(), text(&pair[1]).unwrap_or_default())
            })
            .collect();
        Ok(Some(JobStepCounts {
            converted: count(1),
            pushed: count(2),
            remaining: count(3),
            problems,
        }))
    }
}
