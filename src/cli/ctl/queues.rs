//! `dueq namespaces` (ListNamespaces), `dueq queues` (ListQueues), `dueq queue
//! pause|resume` (PauseQueue, ResumeQueue; the flow-control subcommands are `flow`'s), `dueq retry-dead` (RetryDeadJobs) and
//! `dueq purge` (PurgeJobs). The bulk commands call the service in bounded batches
//! until it says no more remain, or the --limit is reached.

use dueq::{
    config::ctl::{
        NamespacesArgs, PolicyAction, PurgeArgs, PurgeStateArg, QueueAction, QueueArgs, QueuesArgs,
        RetryDeadArgs,
    },
    proto,
};
use serde_json::json;

use super::{
    connect::connect,
    render::{self, emit},
    Failure,
};

/// The most one RetryDeadJobs or PurgeJobs call may take.
const BATCH: u64 = 500;

pub(crate) async fn namespaces(args: NamespacesArgs) -> Result<(), Failure> {
    let mut client = connect(&args.client, true).await?;
    let limit = args.limit as usize;
    let mut names = Vec::new();
    let mut token = String::new();
    let more = loop {
        let page = client
            .list_namespaces(proto::ListNamespacesRequest {
                page_size: (limit - names.len()).min(1000) as u32,
                page_token: token,
            })
            .await?
            .into_inner();
        names.extend(page.namespaces);
        token = page.next_page_token;
        if token.is_empty() {
            break false;
        }
        if names.len() >= limit {
            break true;
        }
    };
    names.truncate(limit);
    let doc = json!({ "namespaces": names, "more": more });
    emit(args.client.output, doc, || {
        let mut table = render::table(&["NAMESPACE"]);
        for name in &names {
            table.add_row(vec![name.clone()]);
        }
        let mut text = table.to_string();
        if more {
            text.push_str(&format!(
                "\nmore namespaces follow; raise --limit (now {limit}) to see them"
            ));
        }
        text
    });
    Ok(())
}

pub(crate) async fn queues(args: QueuesArgs) -> Result<(), Failure> {
    let mut client = connect(&args.client, true).await?;
    let limit = args.limit as usize;
    let mut queues = Vec::new();
    let mut token = String::new();
    let mut read_time = None;
    let more = loop {
        let page = client
            .list_queues(proto::ListQueuesRequest {
                namespace: args.namespace.clone(),
                page_size: (limit - queues.len()).min(1000) as u32,
                page_token: token,
            })
            .await?
            .into_inner();
        queues.extend(page.queues);
        read_time = read_time.or(page.read_time);
        token = page.next_page_token;
        if token.is_empty() {
            break false;
        }
        if queues.len() >= limit {
            break true;
        }
    };
    queues.truncate(limit);
    let doc = json!({
        "namespace": args.namespace,
        "read_time": render::time_json(&read_time),
        "queues": queues.iter().map(queue_json).collect::<Vec<_>>(),
        "more": more,
    });
    emit(args.client.output, doc, || {
        let mut table = render::table(&[
            "QUEUE",
            "PENDING",
            "DELAYED",
            "ACTIVE",
            "DEAD",
            "WAITING",
            "OLDEST PENDING",
            "PAUSED",
            "POLICY",
        ]);
        let mut uncounted = false;
        for q in &queues {
            uncounted |= !q.counted;
            table.add_row(vec![
                q.queue.clone(),
                format!("{}{}", q.pending, if q.counted { "" } else { "?" }),
                q.delayed.to_string(),
                q.active.to_string(),
                format!("{}{}", q.dead, if q.counted { "" } else { "?" }),
                format!("{}{}", q.waiting, if q.counted { "" } else { "?" }),
                render::duration_cell(&q.oldest_pending_age.map(whole_seconds)),
                if q.paused { "yes" } else { "no" }.into(),
                super::flow::policy_cell(&q.policy),
            ]);
        }
        let mut text = table.to_string();
        if uncounted {
            text.push_str(
                "\n?: counted before this dueq kept counts; run `dueq migrate` on the namespace",
            );
        }
        if more {
            text.push_str(&format!(
                "\nmore queues follow; raise --limit (now {limit}) to see them"
            ));
        }
        text
    });
    Ok(())
}

fn queue_json(q: &proto::QueueInfo) -> serde_json::Value {
    json!({
        "queue": q.queue,
        "pending": q.pending,
        "delayed": q.delayed,
        "active": q.active,
        "dead": q.dead,
        "waiting": q.waiting,
        "oldest_pending_age_seconds": render::seconds(&q.oldest_pending_age),
        "paused": q.paused,
        "counted": q.counted,
        "policy": super::flow::policy_json(&q.policy),
    })
}

/// An age to the whole second, for a table.
fn whole_seconds(d: prost_types::Duration) -> prost_types::Duration {
    prost_types::Duration {
        seconds: d.seconds,
        nanos: 0,
    }
}

pub(crate) async fn queue(args: QueueArgs) -> Result<(), Failure> {
    let (target, paused) = match args.action {
        QueueAction::Pause(target) => (target, true),
        QueueAction::Resume(target) => (target, false),
        QueueAction::Policy(policy) => {
            return match policy.action {
                PolicyAction::Set(args) => super::flow::set_policy(args).await,
                PolicyAction::Get(target) => super::flow::get_policy(target).await,
            }
        }
        QueueAction::KeyLimit(args) => return super::flow::key_limit(args).await,
        QueueAction::Throttle(args) => return super::flow::throttle(args).await,
        QueueAction::Keys(args) => return super::flow::keys(args).await,
    };
    let mut client = connect(&target.client, true).await?;
    let changed = if paused {
        client
            .pause_queue(proto::PauseQueueRequest {
                namespace: target.namespace.clone(),
                queue: target.queue.clone(),
            })
            .await?
            .into_inner()
            .changed
    } else {
        client
            .resume_queue(proto::ResumeQueueRequest {
                namespace: target.namespace.clone(),
                queue: target.queue.clone(),
            })
            .await?
            .into_inner()
            .changed
    };
    let doc = json!({
        "namespace": target.namespace,
        "queue": target.queue,
        "paused": paused,
        "changed": changed,
    });
    emit(target.client.output, doc, || {
        let what = if paused { "paused" } else { "resumed" };
        if changed {
            format!("queue {} {what}", target.queue)
        } else {
            format!("queue {} was {what} already; nothing changed", target.queue)
        }
    });
    Ok(())
}

/// Calls `batch(n)` with n up to BATCH until it says no more remain or `limit` is
/// reached; returns the total done and whether more remain.
async fn in_batches<F, Fut>(limit: Option<u64>, mut batch: F) -> Result<(u64, bool), Failure>
where
    F: FnMut(u32) -> Fut,
    Fut: std::future::Future<Output = Result<(u32, bool), tonic::Status>>,
{
    let mut done = 0u64;
    loop {
        let want = match limit {
            Some(limit) => (limit - done).min(BATCH),
            None => BATCH,
        };
        let (n, more) = batch(want as u32).await?;
        done += u64::from(n);
        // A call that did nothing while saying more remain would loop forever.
        if !more || n == 0 {
            return Ok((done, more));
        }
        if limit.is_some_and(|limit| done >= limit) {
            return Ok((done, true));
        }
    }
}

pub(crate) async fn retry_dead(args: RetryDeadArgs) -> Result<(), Failure> {
    let client = connect(&args.client, true).await?;
    let (retried, more) = in_batches(args.limit, |limit| {
        let mut client = client.clone();
        let request = proto::RetryDeadJobsRequest {
            namespace: args.namespace.clone(),
            queue: args.queue.clone(),
            limit,
            error_fingerprint: args.fingerprint.clone().unwrap_or_default(),
        };
        async move {
            let answer = client.retry_dead_jobs(request).await?.into_inner();
            Ok((answer.retried, answer.more))
        }
    })
    .await?;
    let mut doc = json!({
        "namespace": args.namespace,
        "queue": args.queue,
        "retried": retried,
        "more": more,
    });
    if let Some(fingerprint) = &args.fingerprint {
        doc["fingerprint"] = json!(fingerprint);
    }
    emit(args.client.output, doc, || {
        let mut text = format!("{retried} dead job(s) of {} made pending again", args.queue);
        if let Some(fingerprint) = &args.fingerprint {
            text.push_str(&format!(" (error group {fingerprint})"));
        }
        if more {
            text.push_str("; more dead jobs remain (raise --limit)");
        }
        text
    });
    Ok(())
}

fn purge_state(state: PurgeStateArg) -> proto::JobState {
    match state {
        PurgeStateArg::Pending => proto::JobState::Pending,
        PurgeStateArg::Delayed => proto::JobState::Delayed,
        PurgeStateArg::Dead => proto::JobState::Dead,
    }
}

pub(crate) async fn purge(args: PurgeArgs) -> Result<(), Failure> {
    let state = purge_state(args.state);
    let state_name = render::job_state(state as i32);
    if !args.yes {
        return Err(Failure::Usage(format!(
            "this deletes the {state_name} jobs of queue {} in namespace {} for good; \
             add --yes to do it",
            args.queue, args.namespace
        )));
    }
    let client = connect(&args.client, true).await?;
    let (purged, more) = in_batches(args.limit, |limit| {
        let mut client = client.clone();
        let request = proto::PurgeJobsRequest {
            namespace: args.namespace.clone(),
            queue: args.queue.clone(),
            state: state as i32,
            limit,
            error_fingerprint: args.fingerprint.clone().unwrap_or_default(),
        };
        async move {
            let answer = client.purge_jobs(request).await?.into_inner();
            Ok((answer.purged, answer.more))
        }
    })
    .await?;
    let mut doc = json!({
        "namespace": args.namespace,
        "queue": args.queue,
        "state": state_name,
        "purged": purged,
        "more": more,
    });
    if let Some(fingerprint) = &args.fingerprint {
        doc["fingerprint"] = json!(fingerprint);
    }
    emit(args.client.output, doc, || {
        let mut text = format!("{purged} {state_name} job(s) of {} deleted", args.queue);
        if let Some(fingerprint) = &args.fingerprint {
            text.push_str(&format!(" (error group {fingerprint})"));
        }
        if more {
            text.push_str("; more remain (raise --limit)");
        }
        text
    });
    Ok(())
}
