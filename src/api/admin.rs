//! Handlers of Migrate and the namespace status, for operators: served by
//! `dueq.v1.QueueService` and by the deprecated `dueq.v1.AdminService` alike.

use std::{pin::Pin, sync::Arc};

use tokio::sync::mpsc;
use tokio_stream::{wrappers::ReceiverStream, Stream, StreamExt};
use tonic::{Request, Status};

use super::{
    authorize::MigrateTarget, convert, rescue::migrate_command, validate, AdminApi, ApiError,
    Rescue,
};
use crate::{
    domain::{Namespace, NamespaceHealth, JOB_LAYOUT, SCHEDULE_SCHEMA},
    migrate::{self, Options, Phase, Plan, Progress},
    proto,
};

/// Default source prefix of `@boringnode/queue`.
const BORINGNODE_DEFAULT_PREFIX: &str = "boringnode::queue::";

pub(super) type MigrateStream =
    Pin<Box<dyn Stream<Item = Result<proto::MigrateProgress, Status>> + Send>>;

/// Starts a Migrate and streams its progress; errors that stop it end the stream
/// with their status (through the same rescue point as every RPC).
pub(super) async fn migrate(
    api: &(impl AsRef<AdminApi> + Sync),
    target: &MigrateTarget,
    request: Request<proto::MigrateRequest>,
) -> Result<MigrateStream, ApiError> {
    let api = api.as_ref();
    let req = request.into_inner();
    let (plan, options) = plan(target.namespace.as_ref(), &req)?;
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(api.migrator.clone().execute(plan, options, tx));
    let rescue: Arc<Rescue> = api.rescue.clone();
    let stream = ReceiverStream::new(rx).map(move |item| {
        item.map(progress_to_proto)
            .map_err(|e| rescue.status(ApiError::App(e)))
    });
    Ok(Box::pin(stream))
}

pub(super) async fn status(
    api: &(impl AsRef<AdminApi> + Sync),
    namespace: &Namespace,
    _: Request<proto::GetNamespaceStatusRequest>,
) -> Result<proto::NamespaceStatus, ApiError> {
    let api = api.as_ref();
    let health = api.migrator.status(namespace).await?;
    Ok(describe(namespace, &health, &api.address))
}

/// What to migrate, validated.
fn plan(
    namespace: Option<&Namespace>,
    req: &proto::MigrateRequest,
) -> Result<(Plan, Options), ApiError> {
    let batch = match req.batch_size {
        None => migrate::DEFAULT_BATCH,
        Some(n) if (1..=migrate::MAX_BATCH).contains(&n) => n,
        Some(n) => {
            return Err(ApiError::invalid(
                "batch_size",
                format!("must be between 1 and {}, got {n}", migrate::MAX_BATCH),
            ))
        }
    };
    let options = Options {
        dry_run: req.dry_run,
        batch,
    };
    let source = proto::MigrateSource::try_from(req.source)
        .map_err(|_| ApiError::invalid("source", format!("unknown source {}", req.source)))?;
    match (req.namespace.is_empty(), req.all_namespaces) {
        (true, false) => Err(ApiError::invalid(
            "namespace",
            "set a namespace, or all_namespaces: true",
        )),
        (false, true) => Err(ApiError::invalid(
            "all_namespaces",
            "set either namespace or all_namespaces, not both",
        )),
        _ => {
            let plan = match source {
                proto::MigrateSource::Unspecified | proto::MigrateSource::Dueq => {
                    dueq_plan(namespace, req)?
                }
                proto::MigrateSource::BoringnodeQueue => import_plan(namespace, req)?,
            };
            Ok((plan, options))
        }
    }
}

fn dueq_plan(namespace: Option<&Namespace>, req: &proto::MigrateRequest) -> Result<Plan, ApiError> {
    for (field, set) in [
        ("source_prefix", !req.source_prefix.is_empty()),
        ("delete_source", req.delete_source),
    ] {
        if set {
            return Err(ApiError::invalid(
                field,
                "only applies to source MIGRATE_SOURCE_BORINGNODE_QUEUE",
            ));
        }
    }
    Ok(match namespace {
        Some(namespace) if !req.all_namespaces => Plan::Namespaces(vec![namespace.to_string()]),
        _ => Plan::All,
    })
}

fn import_plan(
    namespace: Option<&Namespace>,
    req: &proto::MigrateRequest,
) -> Result<Plan, ApiError> {
    let Some(namespace) = namespace.filter(|_| !req.all_namespaces) else {
        return Err(ApiError::invalid(
            "all_namespaces",
            "an import goes into one namespace: set namespace",
        ));
    };
    let source_prefix = if req.source_prefix.is_empty() {
        BORINGNODE_DEFAULT_PREFIX.to_owned()
    } else {
        validate::max_len("source_prefix", &req.source_prefix, 256)?.to_owned()
    };
    Ok(Plan::Import {
        namespace: namespace.to_string(),
        source_prefix,
        delete_source: req.delete_source,
    })
}

fn phase_to_proto(phase: Phase) -> proto::MigratePhase {
    match phase {
        Phase::Started => proto::MigratePhase::Started,
        Phase::Records => proto::MigratePhase::Records,
        Phase::Index => proto::MigratePhase::Index,
        Phase::Import => proto::MigratePhase::Import,
        Phase::Done => proto::MigratePhase::Done,
        Phase::Jobs => proto::MigratePhase::Jobs,
    }
}

fn progress_to_proto(p: Progress) -> proto::MigrateProgress {
    let done = p.phase == Phase::Done;
    proto::MigrateProgress {
        namespace: p.namespace,
        phase: phase_to_proto(p.phase) as i32,
        scanned: p.scanned,
        indexed: p.indexed,
        repaired: p.repaired,
        removed: p.removed,
        estimated_total: p.estimated_total,
        imported: p.imported,
        already_present: p.already_present,
        // The list can be long: it goes out once, with the summary.
        problems: p
            .problems
            .into_iter()
            .filter(|_| done)
            .map(|(id, reason)| proto::RecordProblem { id, reason })
            .collect(),
        from_schema: p.from_schema,
        to_schema: p.to_schema,
        dry_run: p.dry_run,
        batches: p.batches,
        jobs_converted: p.jobs_converted,
        schedules_converted: p.schedules_converted,
        from_jobs_layout: p.from_jobs_layout,
        to_jobs_layout: p.to_jobs_layout,
        longest_batch: done.then(|| {
            convert::duration(i64::try_from(p.longest_batch.as_millis()).unwrap_or(i64::MAX))
        }),
    }
}

fn describe(namespace: &str, health: &NamespaceHealth, address: &str) -> proto::NamespaceStatus {
    proto::NamespaceStatus {
        namespace: namespace.to_owned(),
        schema_version: health.schema_version(),
        current_schema_version: SCHEDULE_SCHEMA,
        needs_migrate: health.needs_migrate(),
        expected_index_size: health.expected_index.unwrap_or(0),
        index_size: health.index_size,
        index_damaged: health.index_damaged(),
        migration_running: health.lock_ttl_ms.is_some(),
        message: message(namespace, health, address),
        jobs_layout: health.jobs_layout_version(),
        current_jobs_layout: JOB_LAYOUT,
        jobs_need_migrate: health.jobs_need_migrate(),
    }
}

/// The status in one sentence, with the command that fixes what is wrong.
fn message(namespace: &str, health: &NamespaceHealth, address: &str) -> String {
    let command = migrate_command(namespace, address);
    // A namespace written before both layout changes needs both: say so in one line.
    let refused: Vec<String> = health
        .refusals()
        .iter()
        .map(|needs| format!("{needs}: {} calls are refused", needs.layout_calls()))
        .collect();
    if health.lock_ttl_ms.is_some() {
        "a Migrate is running".to_owned()
    } else if !refused.is_empty() {
        format!("{} until you run {command}", refused.join("; "))
    } else if health.index_damaged() {
        let expected = health.expected_index.unwrap_or(0);
        format!(
            "the due index holds {} entries but {expected} schedules are active: {} would never \
             fire; run {command}",
            health.index_size,
            expected - health.index_size
        )
    } else if health.schema_version() == 0 {
        "no data".to_owned()
    } else {
        "ok".to_owned()
    }
}
