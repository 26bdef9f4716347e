//! `lua/schedule_gauges.lua`: a namespace's schedule gauges for /metrics, in O(log N).

use std::time::Duration;

use super::prelude::*;

script!(ScheduleGauges: "schedule_gauges", Core, Arity::Exactly(4), Arity::Exactly(1));

pub(crate) struct ScheduleGauges {
    /// `--overdue-after`.
    pub(crate) overdue_after: Duration,
}

/// What the script counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ScheduleCounts {
    pub(crate) stored: u64,
    pub(crate) active: u64,
    pub(crate) overdue: u64,
}

impl Operation for ScheduleGauges {
    type Output = ScheduleCounts;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        let overdue_ms = i64::try_from(self.overdue_after.as_millis()).unwrap_or(i64::MAX);
        call.key(keys.meta())
            .key(keys.ids())
            .key(keys.due())
            .key(keys.target_due())
            .arg("overdue_ms", overdue_ms);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let counts = ScheduleCounts {
            stored: reply.count()?,
            active: reply.count()?,
            overdue: reply.count()?,
        };
        reply.finish()?;
        Ok(counts)
    }
}

#[cfg(test)]
pub(super) fn sample() -> ScheduleGauges {
    ScheduleGauges {
        overdue_after: Duration::from_secs(60),
    }
}
