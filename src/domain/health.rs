//! A namespace's store, as the O(1) status check sees it: which layout it is in,
//! whether it needs Migrate, and whether its due index lost entries.

use std::fmt;

/// The schedule store schema this build reads and writes (meta field `schema`). The
/// pre-index layout is 1; schema 2 kept each schedule as a hash; schema 3 packs it.
pub(crate) const SCHEDULE_SCHEMA: u32 = 3;

/// The job layout this build reads and writes (meta field `jobs`). Layout 1 kept a
/// hash per job and sorted-set indexes.
pub(crate) const JOB_LAYOUT: u32 = 2;

/// How a namespace lists its schedule ids, which tells the schedule layouts apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Listing {
    /// No listing: an empty (or never used) namespace.
    None,
    /// A set of ids: the pre-index layout (schema 1).
    Set,
    /// One sorted set of every id: schema 2.
    SortedSet,
    /// Schema 3's leaves under a sorted set of boundaries.
    Tree,
    /// Something else sits where the listing should be: not dueq's.
    Foreign(String),
}

/// Which part of a namespace is stored in another layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    Schedules,
    Jobs,
}

/// The layout version a refused namespace is in, as its store says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    Version(u32),
    /// Metadata is missing but data is there (deleted or evicted).
    MetaMissing,
}

impl Found {
    pub(crate) fn parse(text: &str) -> Self {
        text.parse().map_or(Found::MetaMissing, Found::Version)
    }
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Found::Version(v) => write!(f, "{v}"),
            Found::MetaMissing => f.write_str("unknown"),
        }
    }
}

impl NeedsMigrate {
    /// Which calls the refusal covers.
    pub(crate) fn layout_calls(&self) -> &'static str {
        match self.layout {
            Layout::Schedules => "schedule",
            Layout::Jobs => "job",
        }
    }
}

/// Why a namespace's calls are refused until Migrate runs: the one wording of it,
/// used by errors, the status RPC and the monitor's log lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NeedsMigrate {
    pub(crate) layout: Layout,
    pub(crate) found: Found,
}

impl fmt::Display for NeedsMigrate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.layout {
            Layout::Schedules => {
                let what = match self.found {
                    Found::Version(1) => " (the pre-index layout)",
                    Found::MetaMissing => " (its metadata is missing)",
                    Found::Version(_) => "",
                };
                write!(
                    f,
                    "its store has schema {}{what}, this dueq uses schema {SCHEDULE_SCHEMA}",
                    self.found
                )
            }
            Layout::Jobs if self.found == Found::MetaMissing => write!(
                f,
                "its job metadata (the job layout and the queues' job counters) is missing while \
                 jobs are stored (deleted, evicted or a partial restore?); Migrate rebuilds it \
                 from the job records"
            ),
            Layout::Jobs => write!(
                f,
                "its jobs are stored in job layout {}, this dueq uses job layout {JOB_LAYOUT}",
                self.found
            ),
        }
    }
}

/// O(1) facts about one namespace's store.
#[derive(Debug, Clone)]
pub(crate) struct NamespaceHealth {
    /// The meta `schema` field, if any.
    pub(crate) schema: Option<String>,
    pub(crate) listing: Listing,
    /// The meta `indexed` count, if recorded.
    pub(crate) expected_index: Option<u64>,
    pub(crate) index_size: u64,
    /// Remaining ttl of a Migrate lock, if one is held.
    pub(crate) lock_ttl_ms: Option<i64>,
    /// Ids in the listing.
    pub(crate) listed: u64,
    /// The meta `jobs` field (the job layout), if any.
    pub(crate) jobs_layout: Option<String>,
    /// Meta holds `job_seq`, which only job layout 1 kept.
    pub(crate) legacy_jobs: bool,
    /// The jobs marker exists: the namespace has held jobs (its copy of the layout
    /// outlives a lost meta).
    pub(crate) jobs_marker: bool,
    /// The namespace holds jobs: the jobs marker exists, or, lost together with
    /// meta, the data shows them (its finished set, or the ready lists, delayed,
    /// leased or dead sets or first listing bucket of its first registered queues;
    /// lib/job.lua `held_probe`).
    pub(crate) jobs_held: bool,
    /// The namespace's job sequence (meta `gseq`): it only rises, so a lower value
    /// than one seen before means the store was rolled back.
    pub(crate) job_sequence: u64,
}

impl NamespaceHealth {
    /// The schema version: recorded in meta, 1 for the pre-index layout (which has
    /// no meta), 0 for a namespace with no data or with its meta gone.
    pub(crate) fn schema_version(&self) -> u32 {
        match (&self.schema, &self.listing) {
            (Some(v), _) => v.parse().unwrap_or(0),
            (None, Listing::Set) => 1,
            // Only jobs: no schedule to convert, so the schedules are current.
            (None, Listing::None) if self.jobs_layout.is_some() => SCHEDULE_SCHEMA,
            _ => 0,
        }
    }

    /// Whether the schedule scripts refuse this namespace until Migrate runs (the
    /// same judgement as lua/lib/guard.lua).
    pub(crate) fn needs_migrate(&self) -> bool {
        match (&self.schema, &self.listing) {
            (_, Listing::Set) | (_, Listing::Foreign(_)) => true,
            (None, Listing::SortedSet) | (None, Listing::Tree) => true,
            // Schema 2 without a listing holds no schedule record to convert: the
            // guard records it as current in passing.
            (Some(v), Listing::None) if v == "2" => false,
            (Some(_), _) => self.schema_version() != SCHEDULE_SCHEMA,
            (None, Listing::None) => false,
        }
    }

    /// The job layout version: recorded in meta, 1 when layout 1's counter is there
    /// instead, 0 for a namespace that never held jobs.
    pub(crate) fn jobs_layout_version(&self) -> u32 {
        match (&self.jobs_layout, self.legacy_jobs) {
            (Some(v), _) => v.parse().unwrap_or(0),
            (None, true) => 1,
            (None, false) => 0,
        }
    }

    /// Whether the job scripts refuse this namespace until Migrate runs (the same
    /// judgement as `jobs_guard` in lua/lib/job.lua).
    pub(crate) fn jobs_need_migrate(&self) -> bool {
        match &self.jobs_layout {
            Some(v) => v.parse::<u32>().ok() != Some(JOB_LAYOUT),
            None => self.legacy_jobs || self.jobs_held,
        }
    }

    /// Meta lost its job fields while jobs are stored: Migrate rebuilds them from
    /// the records.
    pub(crate) fn jobs_meta_lost(&self) -> bool {
        self.jobs_layout.is_none() && !self.legacy_jobs && self.jobs_held
    }

    /// Meta lost its schedule fields while schedules are listed.
    pub(crate) fn schedules_meta_lost(&self) -> bool {
        self.schema.is_none() && matches!(self.listing, Listing::Tree)
    }

    /// What refuses this namespace's calls, schedules first.
    pub(crate) fn refusals(&self) -> Vec<NeedsMigrate> {
        let mut out = Vec::new();
        if self.needs_migrate() {
            // The same version the guard names in its refusal.
            let found = match (&self.schema, &self.listing) {
                (None, Listing::Set) => Found::Version(1),
                (None, _) => Found::MetaMissing,
                (Some(v), _) => Found::parse(v),
            };
            out.push(NeedsMigrate {
                layout: Layout::Schedules,
                found,
            });
        }
        if self.jobs_need_migrate() {
            let found = if self.jobs_meta_lost() {
                Found::MetaMissing
            } else {
                Found::Version(self.jobs_layout_version())
            };
            out.push(NeedsMigrate {
                layout: Layout::Jobs,
                found,
            });
        }
        out
    }

    /// The due index holds fewer entries than active schedules (reported even while a
    /// Migrate rebuilds it).
    pub(crate) fn index_damaged(&self) -> bool {
        !self.needs_migrate() && self.expected_index.unwrap_or(0) > self.index_size
    }

    /// Entries the due index lacks, by the O(1) count the scripts keep. Meaningful
    /// only for a current namespace that no Migrate is rebuilding.
    pub(crate) fn missing_entries(&self) -> u64 {
        if self.needs_migrate() || self.lock_ttl_ms.is_some() {
            return 0;
        }
        self.expected_index
            .unwrap_or(0)
            .saturating_sub(self.index_size)
    }

    /// The one-word judgement the monitor logs and the status RPC reports.
    pub(crate) fn finding(&self) -> Finding {
        if let Some(first) = self.refusals().into_iter().next() {
            return Finding::NeedsMigrate(first);
        }
        match self.missing_entries() {
            0 => Finding::Healthy,
            missing => Finding::Damaged(missing),
        }
    }
}

/// What a check of a namespace found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Finding {
    Healthy,
    NeedsMigrate(NeedsMigrate),
    /// Entries the due index is missing.
    Damaged(u64),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_says_what_was_found_and_what_this_build_uses() {
        assert_eq!(Found::parse("1"), Found::Version(1));
        assert_eq!(Found::parse("unknown"), Found::MetaMissing);
        let schedules = |found| {
            NeedsMigrate {
                layout: Layout::Schedules,
                found,
            }
            .to_string()
        };
        assert_eq!(
            schedules(Found::Version(1)),
            "its store has schema 1 (the pre-index layout), this dueq uses schema 3"
        );
        assert_eq!(
            schedules(Found::MetaMissing),
            "its store has schema unknown (its metadata is missing), this dueq uses schema 3"
        );
        let jobs = NeedsMigrate {
            layout: Layout::Jobs,
            found: Found::Version(1),
        };
        assert_eq!(
            jobs.to_string(),
            "its jobs are stored in job layout 1, this dueq uses job layout 2"
        );
    }
}
