//! `lua/migrate_apply.lua`: write one batch of Migrate's decisions, each re-checked
//! against the record's state as it was scanned.

use super::{migrate_scan::RecordVersion, prelude::*, schedule_head, under_lock};

script!(MigrateApply<'_>: 
    "migrate_apply",
    Schedule,
    Arity::Exactly(5),
    Arity::Groups { fixed: 3, group: 4 }
);

/// Most decisions one call writes. Writing costs more per record than reading (pack,
/// SET, list, index): at 50 the longest apply script of a 1M-schedule upgrade printed
/// 5.66 ms alone and 9.46 ms in the full bench run, too close to the 10 ms bound.
pub(crate) const APPLY_STEP: usize = 32;

/// What a record's index entries should be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// Active with this next run.
    Index(i64),
    /// Active, but its next run had to be computed: write it, then index it.
    Schedule(i64),
    /// Active with no slot left: mark completed.
    Complete,
    /// Paused or completed: listed, not indexed.
    Unindex,
}

#[derive(Debug, Clone)]
pub(crate) struct Decision {
    pub(crate) id: String,
    /// The record's state as scanned.
    pub(crate) version: RecordVersion,
    pub(crate) action: Action,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ApplyCounts {
    pub(crate) indexed: u64,
    pub(crate) repaired: u64,
    pub(crate) removed: u64,
    pub(crate) skipped: u64,
    /// Records rewritten from a hash (schema 1 and 2) into the packed record.
    pub(crate) converted: u64,
}

impl std::ops::AddAssign for ApplyCounts {
    fn add_assign(&mut self, other: Self) {
        self.indexed += other.indexed;
        self.repaired += other.repaired;
        self.removed += other.removed;
        self.skipped += other.skipped;
        self.converted += other.converted;
    }
}

/// At most [`APPLY_STEP`] decisions.
pub(crate) struct MigrateApply<'a> {
    pub(crate) token: &'a str,
    pub(crate) decisions: &'a [Decision],
}

impl Operation for MigrateApply<'_> {
    /// `None` when the lock was lost (nothing written).
    type Output = Option<ApplyCounts>;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        schedule_head(keys, call);
        call.key(keys.due())
            .key(keys.migrate_lock())
            .arg("token", self.token);
        for d in self.decisions {
            call.arg("id", &d.id).arg("state", d.version.as_str());
            match d.action {
                Action::Index(ms) => call.arg("action", "index").arg("ms", ms),
                Action::Schedule(ms) => call.arg("action", "schedule").arg("ms", ms),
                Action::Complete => call.arg("action", "complete").arg("ms", ""),
                Action::Unindex => call.arg("action", "unindex").arg("ms", ""),
            };
        }
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let counts = if under_lock(&mut reply)? {
            Some(ApplyCounts {
                indexed: reply.count()?,
                repaired: reply.count()?,
                removed: reply.count()?,
                skipped: reply.count()?,
                converted: reply.count()?,
            })
        } else {
            None
        };
        reply.finish()?;
        Ok(counts)
    }
}

#[cfg(test)]
pub(super) fn sample() -> MigrateApply<'static> {
    use std::sync::LazyLock;
    static DECISIONS: LazyLock<Vec<Decision>> = LazyLock::new(|| {
        vec![Decision {
            id: "s".into(),
            version: RecordVersion("1|active|1|0".into()),
            action: Action::Index(1),
        }]
    });
    MigrateApply {
        token: "t",
        decisions: &DECISIONS,
    }
}
