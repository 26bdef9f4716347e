//! `dueq bulk retry|cancel|delete` (RetryJobs, CancelJobs, DeleteJobs; issue 33):
//! listed ids in one call, or every job matching a state and filter, one bounded
//! batch per call until the service returns no token, with a progress bar (indicatif,
//! on stderr, drawn only on a terminal). And the filter flags `dueq jobs` shares.

use dueq::{
    config::ctl::{BulkArgs, BulkCommand, BulkTarget},
    proto,
};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;

use super::{
    connect::connect,
    jobs::{filter_of, state},
    render::{self, emit},
    Failure,
};

/// Skips the table lists at most (the JSON document lists every one returned).
const SKIPS_SHOWN: usize = 20;

/// What the whole command did.
#[derive(Default)]
struct Totals {
    applied: u64,
    skipped: u64,
    scanned: u64,
    calls: u64,
    skips: Vec<proto::BulkJobSkip>,
}

impl Totals {
    fn add(&mut self, answer: proto::BulkJobsResponse) {
        self.applied += answer.applied;
        self.skipped += answer.skipped;
        self.scanned += answer.scanned;
        self.calls += 1;
        self.skips.extend(answer.skips);
    }
}

pub(crate) async fn run(args: BulkArgs) -> Result<(), Failure> {
    let (verb, target) = match args.action {
        BulkCommand::Retry(target) => ("retried", target),
        BulkCommand::Cancel(target) => ("cancelled", target),
        BulkCommand::Delete(target) => ("deleted", target),
    };
    check(verb, &target)?;
    let totals = if target.all_matching {
        all_matching(verb, &target).await?
    } else {
        let mut totals = Totals::default();
        let selection = proto::bulk_jobs_request::Selection::JobIds(proto::JobIds {
            job_ids: target.ids.clone(),
        });
        totals.add(call(verb, &target, selection).await?);
        totals
    };
    report(verb, &target, &totals);
    Ok(())
}

/// Refuses what the service would not be asked: a filter with ids, a delete without
/// --yes.
fn check(verb: &str, target: &BulkTarget) -> Result<(), Failure> {
    if !target.all_matching && !target.filter.is_empty() {
        return Err(Failure::Usage(
            "the filter flags select jobs with --all-matching, not with --id".into(),
        ));
    }
    if verb == "deleted" && !target.yes {
        return Err(Failure::Usage(format!(
            "this deletes the selected jobs of queue {} in namespace {} for good; add --yes \
             to do it",
            target.queue, target.namespace
        )));
    }
    Ok(())
}

/// One call of the action.
async fn call(
    verb: &str,
    target: &BulkTarget,
    selection: proto::bulk_jobs_request::Selection,
) -> Result<proto::BulkJobsResponse, Failure> {
    let mut client = connect(&target.client, true).await?;
    let request = proto::BulkJobsRequest {
        namespace: target.namespace.clone(),
        queue: target.queue.clone(),
        selection: Some(selection),
    };
    let answer = match verb {
        "retried" => client.retry_jobs(request).await?,
        "cancelled" => client.cancel_jobs(request).await?,
        _ => client.delete_jobs(request).await?,
    };
    Ok(answer.into_inner())
}

/// Calls the action on the query's batches until the service returns no token.
async fn all_matching(verb: &str, target: &BulkTarget) -> Result<Totals, Failure> {
    let bar = ProgressBar::with_draw_target(
        None,
        if target.no_progress {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        },
    );
    let style = ProgressStyle::with_template("{spinner} {prefix} {msg} ({elapsed})")
        .unwrap_or_else(|_| ProgressStyle::default_spinner());
    bar.set_style(style);
    bar.set_prefix(format!("{}/{}", target.namespace, target.queue));
    let mut totals = Totals::default();
    let mut token = String::new();
    loop {
        let query = proto::JobQuery {
            state: target.state.map_or(0, |s| state(s) as i32),
            filter: filter_of(&target.filter),
            page_token: token,
        };
        let answer = call(
            verb,
            target,
            proto::bulk_jobs_request::Selection::Query(query),
        )
        .await;
        let answer = match answer {
            Ok(answer) => answer,
            Err(failure) => {
                bar.abandon();
                return Err(failure);
            }
        };
        token = answer.next_page_token.clone();
        totals.add(answer);
        bar.set_message(format!(
            "examined {}, {verb} {}, skipped {}",
            totals.scanned, totals.applied, totals.skipped
        ));
        bar.tick();
        if token.is_empty() {
            break;
        }
    }
    bar.finish_and_clear();
    Ok(totals)
}

fn report(verb: &str, target: &BulkTarget, totals: &Totals) {
    let skips: Vec<_> = totals
        .skips
        .iter()
        .map(|s| json!({ "job_id": s.job_id, "reason": s.reason }))
        .collect();
    let doc = json!({
        "namespace": target.namespace,
        "queue": target.queue,
        "action": verb,
        "applied": totals.applied,
        "skipped": totals.skipped,
        "scanned": totals.scanned,
        "calls": totals.calls,
        "skips": skips,
    });
    emit(target.client.output, doc, || {
        let mut text = format!(
            "{verb} {} job(s) of queue {}, skipped {} ({} examined in {} call(s))",
            totals.applied, target.queue, totals.skipped, totals.scanned, totals.calls
        );
        if !totals.skips.is_empty() {
            let mut table = render::table(&["SKIPPED JOB", "REASON"]);
            for skip in totals.skips.iter().take(SKIPS_SHOWN) {
                table.add_row(vec![skip.job_id.clone(), skip.reason.clone()]);
            }
            text.push('\n');
            text.push_str(&table.to_string());
            if totals.skipped as usize > SKIPS_SHOWN {
                text.push_str(&format!(
                    "\n{} more skipped; --output json lists those the service returned",
                    totals.skipped as usize - SKIPS_SHOWN
                ));
            }
        }
        text
    });
}
