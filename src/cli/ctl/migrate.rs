//! `dueq migrate`: runs Migrate and follows its stream with a progress bar
//! (indicatif, on stderr, drawn only on a terminal), then prints each namespace's
//! summary (the stream's MIGRATE_PHASE_DONE messages).

use dueq::{config::ctl::MigrateArgs, proto};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;

use super::{
    connect::connect,
    render::{self, emit},
    Failure,
};

fn phase_name(phase: i32) -> &'static str {
    match proto::MigratePhase::try_from(phase) {
        Ok(proto::MigratePhase::Started) => "counting",
        Ok(proto::MigratePhase::Records) => "records",
        Ok(proto::MigratePhase::Index) => "due index",
        Ok(proto::MigratePhase::Import) => "import",
        Ok(proto::MigratePhase::Jobs) => "jobs",
        Ok(proto::MigratePhase::Done) => "done",
        _ => "?",
    }
}

/// The bar of one namespace.
fn bar(namespace: &str, hidden: bool) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(
        None,
        if hidden {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        },
    );
    let style =
        ProgressStyle::with_template("{prefix} {msg:10} [{bar:40}] {pos}/{len} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
    bar.set_style(style);
    bar.set_prefix(namespace.to_string());
    bar
}

/// Runs Migrate, follows it, prints the summaries; fails with [`Failure::Problems`]
/// when a namespace reported records it could not use.
pub(crate) async fn run(args: MigrateArgs) -> Result<(), Failure> {
    let mut client = connect(&args.client, false).await?;
    let stream = client
        .migrate(proto::MigrateRequest {
            namespace: args.namespace.clone().unwrap_or_default(),
            all_namespaces: args.all,
            dry_run: args.dry_run,
            batch_size: args.batch_size,
            ..Default::default()
        })
        .await?
        .into_inner();
    let summaries = follow(stream, args.no_progress).await?;
    let problems: usize = summaries.iter().map(|s| s.problems.len()).sum();
    emit(
        args.client.output,
        summaries_json(args.dry_run, &summaries),
        || summaries_text(args.dry_run, &summaries),
    );
    if problems > 0 {
        return Err(Failure::Problems(format!(
            "{problems} record(s) could not be used and were left as they were (listed above)"
        )));
    }
    Ok(())
}

/// Follows the Migrate stream to its end: one progress bar per namespace (hidden with
/// `--no-progress`), cleared when its namespace is done; returns each namespace's
/// summary (its MIGRATE_PHASE_DONE message), in the order they came.
async fn follow(
    mut stream: tonic::Streaming<proto::MigrateProgress>,
    no_progress: bool,
) -> Result<Vec<proto::MigrateProgress>, Failure> {
    let mut summaries: Vec<proto::MigrateProgress> = Vec::new();
    let mut current: Option<(String, ProgressBar)> = None;
    while let Some(progress) = stream.message().await? {
        if current.as_ref().map(|(ns, _)| ns) != Some(&progress.namespace) {
            if let Some((_, old)) = current.take() {
                old.finish_and_clear();
            }
            current = Some((
                progress.namespace.clone(),
                bar(&progress.namespace, no_progress),
            ));
        }
        if let Some((_, bar)) = &current {
            let total = progress.estimated_total.max(progress.scanned);
            bar.set_length(total);
            bar.set_position(progress.scanned);
            bar.set_message(phase_name(progress.phase));
        }
        if progress.phase == proto::MigratePhase::Done as i32 {
            if let Some((_, bar)) = current.take() {
                bar.finish_and_clear();
            }
            summaries.push(progress);
        }
    }
    if let Some((_, bar)) = current.take() {
        bar.finish_and_clear();
    }
    Ok(summaries)
}

/// The summaries as `--output json` prints them: every counter of every namespace,
/// and the problems by id.
fn summaries_json(dry_run: bool, summaries: &[proto::MigrateProgress]) -> serde_json::Value {
    json!({
        "dry_run": dry_run,
        "namespaces": summaries.iter().map(|s| json!({
            "namespace": s.namespace,
            "from_schema": s.from_schema,
            "to_schema": s.to_schema,
            "from_jobs_layout": s.from_jobs_layout,
            "to_jobs_layout": s.to_jobs_layout,
            "scanned": s.scanned,
            "indexed": s.indexed,
            "repaired": s.repaired,
            "removed": s.removed,
            "imported": s.imported,
            "already_present": s.already_present,
            "schedules_converted": s.schedules_converted,
            "jobs_converted": s.jobs_converted,
            "batches": s.batches,
            "longest_batch_seconds": render::seconds(&s.longest_batch),
            "problems": s.problems.iter().map(|p| json!({
                "id": p.id,
                "reason": p.reason,
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// The summaries as a table, one row per namespace; then a dry run's notice and the
/// table of problems, if any.
fn summaries_text(dry_run: bool, summaries: &[proto::MigrateProgress]) -> String {
    let mut table = render::table(&[
        "NAMESPACE",
        "SCHEMA",
        "SCANNED",
        "INDEXED",
        "REPAIRED",
        "REMOVED",
        "IMPORTED",
        "JOBS CONVERTED",
        "PROBLEMS",
    ]);
    for s in summaries {
        table.add_row(vec![
            render::or_dash(&s.namespace),
            format!("{} -> {}", s.from_schema, s.to_schema),
            s.scanned.to_string(),
            s.indexed.to_string(),
            s.repaired.to_string(),
            s.removed.to_string(),
            s.imported.to_string(),
            s.jobs_converted.to_string(),
            s.problems.len().to_string(),
        ]);
    }
    let mut text = table.to_string();
    if dry_run {
        text.push_str("\ndry run: nothing was written");
    }
    if summaries.iter().any(|s| !s.problems.is_empty()) {
        text.push('\n');
        text.push_str(&problems_table(summaries).to_string());
    }
    text
}

/// Every problem of every namespace, one row each.
fn problems_table(summaries: &[proto::MigrateProgress]) -> comfy_table::Table {
    let mut list = render::table(&["NAMESPACE", "ID", "PROBLEM"]);
    for s in summaries {
        for p in &s.problems {
            list.add_row(vec![
                render::or_dash(&s.namespace),
                p.id.clone(),
                p.reason.clone(),
            ]);
        }
    }
    list
}
