//! `lua/migrate_graph.lua`: Migrate's check and repair of job dependencies (issue
//! 34) over a namespace's running flows, one bounded step per call; a dry run only
//! counts.

use super::{job_head, prelude::*, under_lock};

script!(MigrateGraph<'_>: "migrate_graph", Job, Arity::Exactly(3), Arity::Exactly(14));

/// Where a walk over the running flows continues.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct GraphCursor {
    /// The flow's created ms as Redis printed it ("" = from the first flow).
    pub(crate) score: String,
    pub(crate) flow: String,
    /// Nodes of that flow already checked.
    pub(crate) index: u64,
}

pub(crate) struct MigrateGraph<'a> {
    pub(crate) token: &'a str,
    pub(crate) dry_run: bool,
    pub(crate) cursor: &'a GraphCursor,
    pub(crate) batch: u32,
}

/// What one call found (and, unless a dry run, repaired).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct GraphReply {
    /// `None` once every running flow was visited.
    pub(crate) next: Option<GraphCursor>,
    pub(crate) visited: u64,
    /// Waiting nodes whose dependencies had all finished (or one failed under rule
    /// cancel or skip): placed by their rule.
    pub(crate) stranded: u64,
    /// Finished nodes whose dependents were never told: settled.
    pub(crate) untold: u64,
    /// Waiting nodes with a wrong count of unfinished dependencies: recounted.
    pub(crate) miscounted: u64,
    /// Graph work was queued or a flow finished: the namespace goes into the prune
    /// due-set.
    pub(crate) register: bool,
    /// Why the call checked nothing.
    pub(crate) problem: Option<String>,
}

impl Operation for MigrateGraph<'_> {
    /// `None` when the lock was lost (nothing written).
    type Output = Option<GraphReply>;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.key(keys.migrate_lock())
            .arg("token", self.token)
            .arg("dry_run", if self.dry_run { "1" } else { "0" })
            .arg("score", self.cursor.score.as_str())
            .arg("flow", self.cursor.flow.as_str())
            .arg("index", self.cursor.index)
            .arg("batch", self.batch.max(1));
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        if !under_lock(&mut reply)? {
            reply.finish()?;
            return Ok(None);
        }
        let done = reply.flag()?;
        let cursor = GraphCursor {
            score: reply.text()?,
            flow: reply.text()?,
            index: reply.count()?,
        };
        let mut out = GraphReply {
            next: (!done).then_some(cursor),
            visited: reply.count()?,
            stranded: reply.count()?,
            untold: reply.count()?,
            miscounted: reply.count()?,
            register: reply.flag()?,
            problem: None,
        };
        let problem = reply.text()?;
        out.problem = (!problem.is_empty()).then_some(problem);
        reply.finish()?;
        Ok(Some(out))
    }
}

#[cfg(test)]
pub(super) fn sample() -> MigrateGraph<'static> {
    static CURSOR: GraphCursor = GraphCursor {
        score: String::new(),
        flow: String::new(),
        index: 0,
    };
    MigrateGraph {
        token: "t",
        dry_run: false,
        cursor: &CURSOR,
        batch: 100,
    }
}
