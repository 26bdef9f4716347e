//! `lua/list_dead_groups.lua`: a page of a namespace's dead jobs grouped by error
//! (issue 33), the largest group first.

use super::{job_head, prelude::*};

script!(ListDeadGroups<'_>: "list_dead_groups", Job, Arity::Exactly(2), Arity::Exactly(11));

/// Most groups one call reads (its run time is bounded by it).
pub(crate) const MAX_PAGE: usize = 1000;

pub(crate) struct ListDeadGroups<'a> {
    /// Only this queue's groups ("" = every queue).
    pub(crate) queue: &'a str,
    /// Groups to skip (the page token).
    pub(crate) offset: u64,
    /// At most [`MAX_PAGE`] (larger values are capped).
    pub(crate) limit: usize,
}

/// One group of dead jobs: same queue, same error fingerprint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeadGroup {
    pub(crate) fingerprint: String,
    pub(crate) queue: String,
    pub(crate) count: u64,
    /// Epoch ms the group's oldest and newest jobs died (`None` if it emptied
    /// while read).
    pub(crate) first_seen_ms: Option<i64>,
    pub(crate) last_seen_ms: Option<i64>,
    /// The last job that joined the group and its (un-normalised) message.
    pub(crate) sample_job_id: String,
    pub(crate) sample_error: String,
}

/// A page of groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeadGroupPage {
    pub(crate) groups: Vec<DeadGroup>,
    /// The offset of the next page, when groups follow.
    pub(crate) next_offset: Option<u64>,
}

impl Operation for ListDeadGroups<'_> {
    type Output = DeadGroupPage;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg("queue", self.queue)
            .arg("offset", self.offset)
            .arg("limit", self.limit.clamp(1, MAX_PAGE));
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let more = reply.flag()?;
        let n = reply.count()?;
        let mut groups = Vec::with_capacity(usize::try_from(n).unwrap_or(0).min(MAX_PAGE));
        for _ in 0..n {
            groups.push(DeadGroup {
                fingerprint: reply.text()?,
                queue: reply.text()?,
                count: reply.count()?,
                first_seen_ms: reply.opt_int()?,
                last_seen_ms: reply.opt_int()?,
                sample_job_id: reply.text()?,
                sample_error: reply.text()?,
            });
        }
        reply.finish()?;
        let next_offset = more.then(|| self.offset + groups.len() as u64);
        Ok(DeadGroupPage {
            groups,
            next_offset,
        })
    }
}

#[cfg(test)]
pub(super) fn sample() -> ListDeadGroups<'static> {
    ListDeadGroups {
        queue: "",
        offset: 0,
        limit: 10,
    }
}
