//! Migrate's flow-control phase (issue 32): a namespace whose queues use flow control
//! gets each flow index checked against the job records and repaired, so a lost
//! index costs a Migrate, never a job (lua/migrate_flow.lua; a dry run counts what
//! would be repaired and writes nothing). For each queue with flow state (it had a
//! lane, or takes turns):
//! 1. the running slots (zset `c`) are recounted from the queue's lease set in one
//!    call, so no claim or ack can come between the count and the write, and the
//!    lanes parked on a recounted key go back when it has room; a queue with more
//!    than [`MAX_LEASES`] leases is reported and left alone;
//! 2. its job numbers are walked, [`JOB_STEP`] a call: each pending job that waits in
//!    a lane is put back in it when its entry was lost, and its lane into the
//!    rotation when the lane is in no place;
//! 3. a SCAN of the namespace's lanes and concurrency parks (one for every queue)
//!    puts back each lane with entries that is in no place (its rotation was lost),
//!    and the lanes parked on a key below its limit (a lost wake-up).
//!
//! Each repaired lane entry, slot count and unparked lane counts in `repaired`; a
//! lane put back into the rotation counts once. The ready-backlog per key (zset `b`,
//! ListFlowKeys' order and report) is not rebuilt: it is counted by the transitions
//! as deltas of lane entries across many lanes per key, so a batched recount could
//! not be exact under traffic, and admission never reads it (a lane entry restored
//! here adds to it as flow.ready does). A namespace without flow state costs one
//! read call per [`SURVEY_STEP`] queues and reports nothing.

use std::collections::{BTreeMap, HashSet};

use tokio::time::Instant;

use super::{Migrator, Run};
use crate::{
    error::Error,
    store::{
        ops::migrate_flow::{FlowReply, FlowStep, MigrateFlow},
        FlowIndexWalk,
    },
};

/// Most job numbers one call visits.
pub(crate) const JOB_STEP: u32 = 200;
/// Most leases of a queue its slot recount reads in its one call.
pub(crate) const MAX_LEASES: u32 = 100_000;
/// Queues surveyed per call.
const SURVEY_STEP: usize = 500;
/// Lanes and parks checked per call.
const PLACE_STEP: usize = 200;

/// Lanes already counted as put back, by queue and lane.
type Placed = HashSet<(String, String)>;

impl Migrator {
    pub(super) async fn repair_flow(&self, run: &mut Run<'_, '_>) -> Result<(), Error> {
        let queues = self.flow_queues(run).await?;
        if queues.is_empty() {
            return Ok(());
        }
        let mut placed = Placed::new();
        let mut recounted = Placed::new();
        for queue in &queues {
            let max = MAX_LEASES;
            let slots = self.flow_step(run, FlowStep::Slots { queue, max }).await?;
            if let Some(problem) = slots.problem {
                run.progress.problems.push((
                    format!("queue {queue}"),
                    format!("flow control's running slots not recounted: {problem}"),
                ));
            }
            recounted.extend(slots.names.into_iter().map(|key| (queue.clone(), key)));
            let mut cursor = 1;
            loop {
                let batch = run.options.batch.min(JOB_STEP);
                let step = FlowStep::Jobs {
                    queue,
                    cursor,
                    batch,
                };
                let reply = self.flow_step(run, step).await?;
                count_placed(run, &mut placed, queue, reply.names);
                match reply.next {
                    Some(next) => cursor = next,
                    None => break,
                }
            }
        }
        self.place_lanes(run, &mut placed, &recounted).await
    }

    /// The namespace's queues that have flow state, by name.
    async fn flow_queues(&self, run: &mut Run<'_, '_>) -> Result<Vec<String>, Error> {
        let queues = self.store.meta_queues(run.namespace).await?;
        let mut flowing = Vec::new();
        for chunk in queues.chunks(SURVEY_STEP) {
            let op = MigrateFlow {
                token: &run.lease.token,
                dry_run: run.options.dry_run,
                step: FlowStep::Survey(chunk),
            };
            let reply = self
                .store
                .run(run.namespace, &op)
                .await?
                .ok_or_else(|| run.lease.lost())?;
            for (queue, flag) in chunk.iter().zip(reply.flags) {
                if flag {
                    flowing.push(queue.clone());
                }
            }
        }
        Ok(flowing)
    }

    /// Step 3: every lane and park of the namespace, by SCAN. The parks of the keys
    /// whose slots were recounted were judged by the recount (by the count it found,
    /// which a dry run does not write).
    async fn place_lanes(
        &self,
        run: &mut Run<'_, '_>,
        placed: &mut Placed,
        recounted: &Placed,
    ) -> Result<(), Error> {
        let mut walk = FlowIndexWalk::new();
        let count = run.options.batch;
        while let Some(found) = walk.next(&self.store, run.namespace, count).await? {
            let mut by_queue: BTreeMap<String, Vec<(char, String)>> = BTreeMap::new();
            for key in found {
                if key.kind == 'w' && recounted.contains(&(key.queue.clone(), key.name.clone())) {
                    continue;
                }
                by_queue
                    .entry(key.queue)
                    .or_default()
                    .push((key.kind, key.name));
            }
            for (queue, items) in &by_queue {
                for chunk in items.chunks(PLACE_STEP) {
                    let step = FlowStep::Places {
                        queue,
                        items: chunk,
                    };
                    let reply = self.flow_step(run, step).await?;
                    count_placed(run, placed, queue, reply.names);
                }
            }
        }
        Ok(())
    }

    /// One call, timed and counted.
    async fn flow_step(
        &self,
        run: &mut Run<'_, '_>,
        step: FlowStep<'_>,
    ) -> Result<FlowReply, Error> {
        run.lease.keep().await?;
        let started = Instant::now();
        let op = MigrateFlow {
            token: &run.lease.token,
            dry_run: run.options.dry_run,
            step,
        };
        let reply = self
            .store
            .run(run.namespace, &op)
            .await?
            .ok_or_else(|| run.lease.lost())?;
        run.progress.timed(started);
        run.progress.repaired += reply.repaired;
        Ok(reply)
    }
}

/// Lanes a call found in no place: each counts once.
fn count_placed(run: &mut Run<'_, '_>, placed: &mut Placed, queue: &str, lanes: Vec<String>) {
    for lane in lanes {
        if placed.insert((queue.to_owned(), lane)) {
            run.progress.repaired += 1;
        }
    }
}
