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

pub(crate) async fn run(args: MigrateArgs) -> Result<(), Failure> {
    let mut client = connect(&args.client, false).await?;
    let mut stream = client
        .migrate(proto::MigrateRequest {
            namespace: args.namespace.clone().unwrap_or_default(),
            all_namespaces: args.all,
            dry_run: args.dry_run,
            batch_size: args.batch_size,
            ..Default::default()
        })
        .await?
        .into_inner();
    let mut summaries: Vec<proto::MigrateProgress> = Vec::new();
    let mut current: Option<(String, ProgressBar)> = None;
    while let Some(progress) = stream.message().await? {
        if current.as_ref().map(|(ns, _)| ns) != Some(&progress.namespace) {
            if let Some((_, old)) = current.take() {
                old.finish_and_clear();
            }
            current = Some((
                progress.namespace.clone(),
                bar(&progress.namespace, args.no_progress),
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
    let problems: usize = summaries.iter().map(|s| s.problems.len()).sum();
    let doc = json!({
        "dry_run": args.dry_run,
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
    });
    emit(args.client.output, doc, || {
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
        for s in &summaries {
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
        if args.dry_run {
            text.push_str("\ndry run: nothing was written");
        }
        if problems > 0 {
            let mut list = render::table(&["NAMESPACE", "ID", "PROBLEM"]);
            for s in &summaries {
                for p in &s.problems {
                    list.add_row(vec![
                        render::or_dash(&s.namespace),
                        p.id.clone(),
                        p.reason.clone(),
                    ]);
                }
            }
            text.push('\n');
            text.push_str(&list.to_string());
        }
        text
    });
    if problems > 0 {
        return Err(Failure::Problems(format!(
            "{problems} record(s) could not be used and were left as they were (listed above)"
        )));
    }
    Ok(())
}
