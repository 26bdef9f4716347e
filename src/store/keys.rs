//! The Redis key layout. Nothing outside this module builds a key.
//!
//! Every key of a namespace carries the hash tag `{<namespace>}` so that Redis Cluster
//! puts all of them in one slot and every script touches a single slot (invariant 6).
//! The prefix and the namespace are validated to hold no `{`, `}` or other characters
//! that could move the tag; ids come last, after a fixed per-kind infix, so no id can
//! produce another record's key or an internal key:
//!
//! | key                          | type | holds                                      |
//! |------------------------------|------|--------------------------------------------|
//! | `<prefix>:{<ns>}:meta`       | hash | namespace metadata (`schema` version)      |
//! | `<prefix>:{<ns>}:due`        | zset | schedule id -> next run (epoch ms)         |
//! | `<prefix>:{<ns>}:lt`         | zset | listing: leaf boundary ids -> 0 (lex)      |
//! | `<prefix>:{<ns>}:lk:<id>`    | zset | listing leaf: <= 120 ids from its boundary |
//! | `<prefix>:{<ns>}:s:<id>`     | str  | the schedule record, packed (canonical)    |
//! | `<prefix>:{<ns>}:migrate_lock` | string | Migrate's lease (token, with a TTL)      |
//!
//! Schema 2 kept each schedule as a hash and listed them in `<prefix>:{<ns>}:ids`, a
//! zset of every id; the pre-index layout (schema 1) had the same hashes, `:ids` as a
//! SET, no `:due` and no `:meta`. Migrate upgrades both. Scripts are still handed
//! `:ids`, to recognise those layouts and to derive the listing keys from it.
//! | `<prefix>:{<ns>}:j:<id>`     | str  | the job record, packed (canonical)         |
//! | `<prefix>:{<ns>}:jp:<id>`    | str  | a payload over 1 KiB, out of its record    |
//! | `<prefix>:{<ns>}:rl:<prio>:<queue>` | list | ready job numbers of one priority, FIFO |
//! | `<prefix>:{<ns>}:rp:<queue>` | zset | priorities with a ready list -> -priority  |
//! | `<prefix>:{<ns>}:qd:<queue>` | zset | delayed jobs: id -> run at (epoch ms)      |
//! | `<prefix>:{<ns>}:ql:<queue>` | zset | leased jobs: id -> lease deadline (ms)     |
//! | `<prefix>:{<ns>}:lb:<n/64>:<queue>` | hash | listing: job number mod 64 -> id    |
//! | `<prefix>:{<ns>}:dd:<key>`   | str  | dedup key -> job id, with the dedup TTL    |
//! | `<prefix>:{<ns>}:jdone`      | zset | finished job id -> finish time, retention  |
//! | `<prefix>:{<ns>}:o:<occ id>` | hash | a leased schedule occurrence               |
//! | `<prefix>:{<ns>}:oleases`    | zset | leased occurrence id -> lease deadline     |
//!
//! Every variable part (id, queue, dedup key) is the last part of its key and follows
//! an infix no other kind of key uses, so `qd:a` can only be queue `a`'s delayed set.
//! Where a number sits between the infix and the queue (`rl:`, `lb:`), it holds no
//! `:`, so the first `:` after it ends it. `lua/lib/job.lua` describes the job layout
//! (layout 2); layout 1 kept a hash per job and the sorted sets `qr:<queue>` (ready)
//! and `qj:<queue>` (listing), which Migrate converts.

/// Schema version of the layout above (the pre-index layout is version 1).
pub const SCHEMA_VERSION: u32 = 3;

/// Version of the job layout (meta field `jobs`); layout 1 had no such field and kept
/// `job_seq` in meta instead.
pub const JOBS_LAYOUT: u32 = 2;

/// Keys of one namespace.
#[derive(Debug, Clone)]
pub struct NamespaceKeys {
    base: String,
}

impl NamespaceKeys {
    /// `prefix` and `namespace` must already be validated (see `api::validate`).
    pub fn new(prefix: &str, namespace: &str) -> Self {
        Self {
            base: format!("{prefix}:{{{namespace}}}:"),
        }
    }

    pub fn meta(&self) -> String {
        format!("{}meta", self.base)
    }

    pub fn due(&self) -> String {
        format!("{}due", self.base)
    }

    pub fn ids(&self) -> String {
        format!("{}ids", self.base)
    }

    pub fn migrate_lock(&self) -> String {
        format!("{}migrate_lock", self.base)
    }

    /// The listing's boundaries (lua/lib/schedule.lua keeps it; tests and the bench
    /// read it).
    pub fn listing_top(&self) -> String {
        format!("{}lt", self.base)
    }

    /// The listing leaf whose lowest possible id is `boundary`.
    pub fn listing_leaf(&self, boundary: &str) -> Vec<u8> {
        let mut key = format!("{}lk:", self.base).into_bytes();
        key.extend_from_slice(boundary.as_bytes());
        key
    }

    /// The prefix a schedule id is appended to; scripts that visit many schedules
    /// build their keys from it.
    pub fn schedule_prefix(&self) -> String {
        format!("{}s:", self.base)
    }

    /// Leased schedule occurrences scored by lease deadline.
    pub fn occurrence_leases(&self) -> String {
        format!("{}oleases", self.base)
    }

    /// The prefix an occurrence id is appended to for its lease record.
    pub fn occurrence_prefix(&self) -> String {
        format!("{}o:", self.base)
    }

    /// Finished (completed, dead, cancelled) job ids scored by finish time.
    pub fn jobs_done(&self) -> String {
        format!("{}jdone", self.base)
    }

    /// The key prefixes job scripts append ids, queue names and dedup keys to, in
    /// the order every job script expects them as ARGV[1..=6].
    pub fn job_prefixes(&self) -> JobPrefixes {
        JobPrefixes([
            self.job_prefix(),
            // Ready lists are `rl:<priority>:<queue>`, their priorities `rp:<queue>`.
            format!("{}r", self.base),
            format!("{}qd:", self.base),
            format!("{}ql:", self.base),
            format!("{}lb:", self.base),
            format!("{}dd:", self.base),
        ])
    }

    /// The prefix a job id is appended to for its record.
    pub fn job_prefix(&self) -> String {
        format!("{}j:", self.base)
    }

    /// The key of one job, as raw bytes.
    pub fn job(&self, id: &str) -> Vec<u8> {
        let mut key = self.job_prefix().into_bytes();
        key.extend_from_slice(id.as_bytes());
        key
    }

    /// The prefixes of the layout-1 job indexes Migrate converts: ready sets
    /// (`qr:<queue>`) and listings (`qj:<queue>`).
    pub fn legacy_job_index_prefixes(&self) -> (String, String) {
        (format!("{}qr:", self.base), format!("{}qj:", self.base))
    }

    /// The key of one schedule, as raw bytes (ids are arbitrary UTF-8).
    pub fn schedule(&self, id: &str) -> Vec<u8> {
        let mut key = self.schedule_prefix().into_bytes();
        key.extend_from_slice(id.as_bytes());
        key
    }
}

/// Job key prefixes: job, ready, delayed, leased, listing, dedup.
#[derive(Debug, Clone)]
pub struct JobPrefixes(pub [String; 6]);

impl JobPrefixes {
    pub fn args(&self) -> impl Iterator<Item = &[u8]> {
        self.0.iter().map(|p| p.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_never_alias_internal_keys() {
        let keys = NamespaceKeys::new("dueq", "ns");
        for id in [
            "due", "ids", "meta", "", ":due", "}{due", "x}{y", "{ns}:due",
        ] {
            let key = keys.schedule(id);
            assert!(key.starts_with(b"dueq:{ns}:s:"));
            for internal in [
                keys.due(),
                keys.ids(),
                keys.meta(),
                keys.migrate_lock(),
                keys.listing_top(),
            ] {
                assert_ne!(key, internal.as_bytes());
            }
            assert_ne!(key, keys.listing_leaf(id));
            assert!(keys.listing_leaf(id).starts_with(b"dueq:{ns}:lk:"));
        }
    }

    #[test]
    fn job_keys_never_alias_each_other_or_internal_keys() {
        let keys = NamespaceKeys::new("dueq", "ns");
        let prefixes = keys.job_prefixes().0;
        let internal = [
            keys.due(),
            keys.ids(),
            keys.meta(),
            keys.jobs_done(),
            keys.occurrence_leases(),
            keys.listing_top(),
        ];
        for id in ["jdone", "qr:a", "", "}{x", "s:x", "j:x"] {
            for (i, p) in prefixes.iter().enumerate() {
                let key = format!("{p}{id}");
                assert!(!internal.contains(&key));
                // No other prefix is a prefix of this one: kinds never overlap.
                for (j, q) in prefixes.iter().enumerate() {
                    if i != j {
                        assert!(!key.starts_with(q.as_str()), "{key} under {q}");
                    }
                }
                assert!(!key.starts_with(&keys.schedule_prefix()));
                assert!(!key.as_bytes().starts_with(&keys.listing_leaf("")));
                assert!(!key.starts_with(&keys.occurrence_prefix()));
            }
        }
        assert_eq!(keys.job("x"), b"dueq:{ns}:j:x");
    }

    #[test]
    fn every_key_shares_the_namespace_hash_tag() {
        let keys = NamespaceKeys::new("dueq", "tenant-1");
        let mut all = vec![keys.due(), keys.ids(), keys.meta(), keys.schedule_prefix()];
        all.extend([
            keys.jobs_done(),
            keys.occurrence_leases(),
            keys.occurrence_prefix(),
        ]);
        all.extend(keys.job_prefixes().0);
        for key in all {
            let open = key.find('{').unwrap_or(usize::MAX);
            let close = key.find('}').unwrap_or(usize::MAX);
            assert_eq!(&key[open + 1..close], "tenant-1");
        }
    }
}
