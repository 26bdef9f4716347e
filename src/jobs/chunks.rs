//! EnqueueBatch in bounded script calls (invariant 3): a batch is cut into runs of at
//! most `MAX_JOBS` jobs and about `MAX_BYTES` bytes, each one enqueue_jobs call, so
//! no single script holds Redis for long however large the batch. Each job's
//! idempotency and dedup check stays inside the call that writes it, so the split
//! changes no outcome: a second item with an id an earlier chunk wrote is a
//! DUPLICATE, as it was within one call.

use crate::domain::JobSpec;

/// Most jobs per script call. `dueq-bench --only grpc --duration 3s --batch 1000` on
/// a shared 2-core box (load average 11) measured the enqueue_jobs script at a mean
/// of 131 ms per call with the whole batch in one call, 8.7 ms with 100 jobs a call
/// and 4.2 ms with 32: a script costs about 0.13 ms a job there, and 32 keeps it well
/// under the 10 ms a script may hold Redis.
pub(super) const MAX_JOBS: usize = 32;

/// Most bytes of ids, names, payloads and headers per script call (a call always
/// carries at least one job): copying large payloads is the other cost that grows
/// with a call.
pub(super) const MAX_BYTES: usize = 1024 * 1024;

fn bytes(spec: &JobSpec) -> usize {
    spec.id.len()
        + spec.queue.len()
        + spec.name.len()
        + spec.payload.len()
        + spec
            .headers
            .iter()
            .map(|(k, v)| k.len() + v.len())
            .sum::<usize>()
}

/// `specs` cut into consecutive runs, in order, each within both bounds.
pub(super) fn chunks(specs: &[JobSpec]) -> Vec<&[JobSpec]> {
    chunks_of(specs, |spec| spec)
}

/// `items` (each holding a job, `job_of`) cut the same way: a flow's nodes (issue 34).
pub(super) fn chunks_of<T>(items: &[T], job_of: impl Fn(&T) -> &JobSpec) -> Vec<&[T]> {
    let specs = items;
    let mut out = Vec::new();
    let (mut start, mut used) = (0, 0);
    for (i, item) in items.iter().enumerate() {
        let size = bytes(job_of(item));
        if i > start && (i - start >= MAX_JOBS || used + size > MAX_BYTES) {
            out.push(&specs[start..i]);
            (start, used) = (i, 0);
        }
        used += size;
    }
    if start < specs.len() {
        out.push(&specs[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{chunks, MAX_BYTES, MAX_JOBS};
    use crate::domain::{JobSpec, RunAt};

    fn spec(payload: usize) -> JobSpec {
        JobSpec {
            id: "j".into(),
            queue: "q".into(),
            name: "n".into(),
            payload: vec![0; payload],
            headers: Default::default(),
            priority: 0,
            run_at: RunAt::Now,
            max_attempts: 1,
            backoff: Default::default(),
            lease_ms: 1,
            dedup: None,
            retention: Default::default(),
            flow: Default::default(),
        }
    }

    #[test]
    fn runs_are_bounded_by_count_and_bytes_and_keep_every_job_in_order() {
        let specs: Vec<JobSpec> = (0..2 * MAX_JOBS + 1).map(|_| spec(10)).collect();
        let lens: Vec<usize> = chunks(&specs).iter().map(|c| c.len()).collect();
        assert_eq!(lens, [MAX_JOBS, MAX_JOBS, 1]);

        let big = vec![
            spec(MAX_BYTES / 2),
            spec(MAX_BYTES / 2),
            spec(MAX_BYTES * 2),
            spec(1),
        ];
        let lens: Vec<usize> = chunks(&big).iter().map(|c| c.len()).collect();
        assert_eq!(lens, [1, 1, 1, 1], "a job over the byte bound goes alone");
        assert!(chunks(&[]).is_empty());
    }

    /// The `--max-batch` help says how many jobs a script call stores, as this file
    /// does.
    #[test]
    fn the_max_batch_help_names_the_jobs_per_call() {
        use clap::CommandFactory;
        let mut cli = crate::config::Cli::command();
        let help = cli.render_long_help().to_string();
        let said = format!("{MAX_JOBS} jobs per script call");
        assert!(
            help.contains(&said),
            "--max-batch's help should say {said:?}"
        );
    }
}
