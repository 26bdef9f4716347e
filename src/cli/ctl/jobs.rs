//! `dueq jobs` (a queue's jobs, paged through ListJobs up to --limit) and `dueq job`
//! (GetJob; `delete` DeleteJob, `release` ReleaseJob).

use dueq::{
    config::ctl::{
        ClientArgs, DeadGroupsArgs, JobArgs, JobCommand, JobStateArg, JobTarget, JobsArgs,
        JobsCommand, ReleaseJobTarget,
    },
    proto,
};
use serde_json::json;

use super::{
    connect::connect,
    render::{self, emit, job_json, or_dash, time_cell},
    Failure,
};

/// The proto state of a --state value.
pub(crate) fn state(arg: JobStateArg) -> proto::JobState {
    match arg {
        JobStateArg::Pending => proto::JobState::Pending,
        JobStateArg::Delayed => proto::JobState::Delayed,
        JobStateArg::Active => proto::JobState::Active,
        JobStateArg::Completed => proto::JobState::Completed,
        JobStateArg::Dead => proto::JobState::Dead,
        JobStateArg::Cancelled => proto::JobState::Cancelled,
        JobStateArg::Waiting => proto::JobState::Waiting,
        JobStateArg::Skipped => proto::JobState::Skipped,
    }
}

/// The filter flags as ListJobs' filter; `None` when no flag is given.
pub(crate) fn filter_of(args: &dueq::config::ctl::JobFilterArgs) -> Option<proto::JobFilter> {
    if args.is_empty() {
        return None;
    }
    let (header_key, header_value) = match &args.header {
        Some(header) => match header.split_once('=') {
            Some((key, value)) => (key.to_owned(), value.to_owned()),
            None => (header.clone(), String::new()),
        },
        None => (String::new(), String::new()),
    };
    Some(proto::JobFilter {
        name: args.name.clone().unwrap_or_default(),
        dedup_key: args.dedup_key.clone().unwrap_or_default(),
        header_key,
        header_value,
        error_contains: args.error.clone().unwrap_or_default(),
        created_after: args.since.map(prost_types::Timestamp::from),
        created_before: args.until.map(prost_types::Timestamp::from),
    })
}

/// `dueq jobs`: a queue's jobs, or `dead-groups`.
pub(crate) async fn jobs(args: JobsArgs) -> Result<(), Failure> {
    match args.action {
        Some(JobsCommand::DeadGroups(groups)) => dead_groups(groups).await,
        None => match (args.namespace.clone(), args.queue.clone()) {
            (Some(namespace), Some(queue)) => list(namespace, queue, args).await,
            // clap requires both without a subcommand.
            _ => Err(Failure::Usage(
                "a namespace (-n) and a queue are required".into(),
            )),
        },
    }
}

/// `dueq jobs dead-groups`: ListDeadGroups, paged up to --limit.
async fn dead_groups(args: DeadGroupsArgs) -> Result<(), Failure> {
    let mut client = connect(&args.client, true).await?;
    let limit = args.limit as usize;
    let mut groups = Vec::new();
    let mut token = String::new();
    let more = loop {
        let page = client
            .list_dead_groups(proto::ListDeadGroupsRequest {
                namespace: args.namespace.clone(),
                queue: args.queue.clone().unwrap_or_default(),
                page_size: (limit - groups.len()).min(1000) as u32,
                page_token: token,
            })
            .await?
            .into_inner();
        groups.extend(page.groups);
        token = page.next_page_token;
        if token.is_empty() {
            break false;
        }
        if groups.len() >= limit {
            break true;
        }
    };
    groups.truncate(limit);
    let doc = json!({
        "namespace": args.namespace,
        "queue": args.queue,
        "groups": groups.iter().map(|g| json!({
            "fingerprint": g.fingerprint,
            "queue": g.queue,
            "count": g.count,
            "first_seen": render::time_json(&g.first_seen),
            "last_seen": render::time_json(&g.last_seen),
            "sample_job_id": g.sample_job_id,
            "sample_error": g.sample_error,
        })).collect::<Vec<_>>(),
        "more": more,
    });
    emit(args.client.output, doc, || {
        let mut table = render::table(&[
            "FINGERPRINT",
            "QUEUE",
            "COUNT",
            "FIRST SEEN",
            "LAST SEEN",
            "SAMPLE JOB",
            "SAMPLE ERROR",
        ]);
        for g in &groups {
            table.add_row(vec![
                g.fingerprint.clone(),
                g.queue.clone(),
                g.count.to_string(),
                time_cell(&g.first_seen),
                time_cell(&g.last_seen),
                or_dash(&g.sample_job_id),
                or_dash(&g.sample_error),
            ]);
        }
        let mut text = table.to_string();
        if more {
            text.push_str(&format!(
                "\nmore groups follow; raise --limit (now {limit}) to see them"
            ));
        }
        text
    });
    Ok(())
}

async fn list(namespace: String, queue: String, args: JobsArgs) -> Result<(), Failure> {
    let mut client = connect(&args.client, true).await?;
    let limit = args.limit as usize;
    let filter = args.state.map(state);
    let mut jobs = Vec::new();
    let mut token = String::new();
    let more = loop {
        let page = client
            .list_jobs(proto::ListJobsRequest {
                namespace: namespace.clone(),
                queue: queue.clone(),
                state: filter.map_or(0, |s| s as i32),
                page_size: (limit - jobs.len()).min(1000) as u32,
                page_token: token,
                view: proto::JobView::Basic as i32,
                filter: filter_of(&args.filter),
            })
            .await?
            .into_inner();
        jobs.extend(page.jobs);
        token = page.next_page_token;
        if token.is_empty() {
            break false;
        }
        if jobs.len() >= limit {
            break true;
        }
    };
    jobs.truncate(limit);
    let doc = json!({
        "namespace": namespace,
        "queue": queue,
        "state": args.state.map(|s| render::job_state(state(s) as i32)),
        "jobs": jobs.iter().map(|j| job_json(j, false)).collect::<Vec<_>>(),
        "more": more,
    });
    emit(args.client.output, doc, || {
        let mut table = render::table(&[
            "JOB ID",
            "STATE",
            "NAME",
            "PRIORITY",
            "ATTEMPTS",
            "RUN AT",
            "FINISHED",
            "WORKER",
            "LAST ERROR",
        ]);
        for j in &jobs {
            table.add_row(vec![
                j.job_id.clone(),
                render::job_state(j.state),
                j.name.clone(),
                j.priority.to_string(),
                format!("{}/{}", j.attempts, j.max_attempts),
                time_cell(&j.run_at),
                time_cell(&j.finish_time),
                or_dash(&j.worker_id),
                j.errors
                    .last()
                    .map(|e| e.message.clone())
                    .unwrap_or_else(|| "-".into()),
            ]);
        }
        let mut text = table.to_string();
        if more {
            text.push_str(&format!(
                "\nmore jobs follow; raise --limit (now {limit}) to see them"
            ));
        }
        text
    });
    Ok(())
}

/// `dueq job`: show one job, or delete or release it.
pub(crate) async fn job(args: JobArgs) -> Result<(), Failure> {
    match args.action {
        Some(JobCommand::Delete(target)) => delete(target).await,
        Some(JobCommand::Release(release)) => release_one(release).await,
        None => match (args.namespace, args.job_id) {
            (Some(namespace), Some(job_id)) => show(namespace, job_id, args.client).await,
            // clap requires both without a subcommand.
            _ => Err(Failure::Usage(
                "a namespace (-n) and a job id are required".into(),
            )),
        },
    }
}

/// `dueq job delete`: DeleteJob; prints the job as it was.
async fn delete(target: JobTarget) -> Result<(), Failure> {
    let mut client = connect(&target.client, true).await?;
    let job = client
        .delete_job(proto::DeleteJobRequest {
            namespace: target.namespace.clone(),
            job_id: target.job_id.clone(),
        })
        .await?
        .into_inner()
        .job
        .ok_or_else(|| Failure::Status(tonic::Status::internal("the answer held no job")))?;
    let doc = json!({
        "namespace": target.namespace,
        "deleted": job_json(&job, false),
    });
    emit(target.client.output, doc, || {
        format!(
            "deleted {} ({} in queue {})",
            job.job_id,
            render::job_state(job.state),
            job.queue
        )
    });
    Ok(())
}

/// `dueq job release`: ReleaseJob; prints the job's state now.
async fn release_one(release: ReleaseJobTarget) -> Result<(), Failure> {
    let target = release.target;
    let mut client = connect(&target.client, true).await?;
    let job = client
        .release_job(proto::ReleaseJobRequest {
            namespace: target.namespace.clone(),
            job_id: target.job_id.clone(),
            count_attempt: release.count_attempt,
            reason: release.reason,
        })
        .await?
        .into_inner()
        .job
        .ok_or_else(|| Failure::Status(tonic::Status::internal("the answer held no job")))?;
    let doc = json!({
        "namespace": target.namespace,
        "job": job_json(&job, false),
    });
    emit(target.client.output, doc, || {
        format!(
            "released {}: now {}, attempts {}/{}",
            job.job_id,
            render::job_state(job.state),
            job.attempts,
            job.max_attempts
        )
    });
    Ok(())
}

/// `dueq job -n NS ID`: GetJob, the whole job.
async fn show(namespace: String, job_id: String, client_args: ClientArgs) -> Result<(), Failure> {
    let mut client = connect(&client_args, true).await?;
    let job = client
        .get_job(proto::GetJobRequest {
            namespace: namespace.clone(),
            job_id,
        })
        .await?
        .into_inner()
        .job
        .ok_or_else(|| Failure::Status(tonic::Status::internal("the answer held no job")))?;
    let doc = json!({
        "namespace": namespace,
        "job": job_json(&job, true),
    });
    emit(client_args.output, doc, || {
        let mut headers: Vec<_> = job.headers.iter().collect();
        headers.sort();
        let mut rows = vec![
            ("job_id", job.job_id.clone()),
            ("queue", job.queue.clone()),
            ("name", job.name.clone()),
            ("state", render::job_state(job.state)),
            ("priority", job.priority.to_string()),
            ("attempts", format!("{}/{}", job.attempts, job.max_attempts)),
            ("created", time_cell(&job.create_time)),
            ("updated", time_cell(&job.update_time)),
            ("run_at", time_cell(&job.run_at)),
            ("lease_deadline", time_cell(&job.lease_deadline)),
            ("finished", time_cell(&job.finish_time)),
            ("worker", or_dash(&job.worker_id)),
            ("dedup_key", or_dash(&job.dedup_key)),
            ("fairness_key", or_dash(&job.fairness_key)),
            ("concurrency_key", or_dash(&job.concurrency_key)),
            ("rate_key", or_dash(&job.rate_key)),
            ("cost", job.cost.to_string()),
            ("lease", render::duration_cell(&job.lease)),
            (
                "headers",
                headers
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            ("payload", format!("{} bytes", job.payload.len())),
            ("cancel_requested", job.cancel_requested.to_string()),
            ("progress", render::progress_cell(job.progress.as_ref())),
            (
                "checkpoint",
                job.progress
                    .as_ref()
                    .and_then(|p| p.checkpoint.as_ref())
                    .map_or_else(|| "-".into(), |c| format!("{} bytes", c.len())),
            ),
            ("result", render::bytes_cell(&job.result)),
        ];
        if !job.flow_id.is_empty() {
            rows.insert(1, ("flow", job.flow_id.clone()));
            rows.insert(2, ("ref", job.flow_ref.clone()));
        }
        let mut text = render::fields(rows).to_string();
        if !job.errors.is_empty() {
            let mut errors = render::table(&["ATTEMPT", "TIME", "ERROR"]);
            for e in &job.errors {
                errors.add_row(vec![
                    e.attempt.to_string(),
                    time_cell(&e.time),
                    e.message.clone(),
                ]);
            }
            text.push('\n');
            text.push_str(&errors.to_string());
        }
        text
    });
    Ok(())
}
