//! `dueq.v1.AdminService`: Migrate and the namespace status, for operators.

use std::{pin::Pin, sync::Arc};

use tokio::sync::mpsc;
use tokio_stream::{wrappers::ReceiverStream, Stream, StreamExt};
use tonic::{Request, Response, Status};

use super::{convert, validate, ApiError};
use crate::{
    migrate::{self, MigrateError, Migrator, Options, Phase, Progress},
    proto::{self, admin_service_server::AdminService},
    store::keys::{JOBS_LAYOUT, SCHEMA_VERSION},
};

/// Default source prefix of `@boringnode/queue`.
pub const BORINGNODE_DEFAULT_PREFIX: &str = "boringnode::queue::";

pub struct AdminApi {
    migrator: Arc<Migrator>,
}

impl AdminApi {
    pub fn new(migrator: Arc<Migrator>) -> Self {
        Self { migrator }
    }
}

type ProgressStream = Pin<Box<dyn Stream<Item = Result<proto::MigrateProgress, Status>> + Send>>;

/// What to migrate, validated.
enum Plan {
    Namespaces(Vec<String>),
    All,
    Import {
        namespace: String,
        source_prefix: String,
        delete_source: bool,
    },
}

fn plan(req: &proto::MigrateRequest) -> Result<(Plan, Options), ApiError> {
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
        (true, false) => {
            return Err(ApiError::invalid(
                "namespace",
                "set a namespace, or all_namespaces: true",
            ))
        }
        (false, true) => {
            return Err(ApiError::invalid(
                "all_namespaces",
                "set either namespace or all_namespaces, not both",
            ))
        }
        _ => {}
    }
    if !req.namespace.is_empty() {
        validate::namespace(&req.namespace)?;
    }
    match source {
        proto::MigrateSource::Dueq => {
            if !req.source_prefix.is_empty() {
                return Err(ApiError::invalid(
                    "source_prefix",
                    "only applies to source BORINGNODE_QUEUE",
                ));
            }
            if req.delete_source {
                return Err(ApiError::invalid(
                    "delete_source",
                    "only applies to source BORINGNODE_QUEUE",
                ));
            }
            let plan = if req.all_namespaces {
                Plan::All
            } else {
                Plan::Namespaces(vec![req.namespace.clone()])
            };
            Ok((plan, options))
        }
        proto::MigrateSource::BoringnodeQueue => {
            if req.all_namespaces {
                return Err(ApiError::invalid(
                    "all_namespaces",
                    "an import goes into one namespace: set namespace",
                ));
            }
            let source_prefix = if req.source_prefix.is_empty() {
                BORINGNODE_DEFAULT_PREFIX.to_owned()
            } else {
                validate::max_len("source_prefix", &req.source_prefix, 256)?.to_owned()
            };
            Ok((
                Plan::Import {
                    namespace: req.namespace.clone(),
                    source_prefix,
                    delete_source: req.delete_source,
                },
                options,
            ))
        }
    }
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

/// Runs the plan, sending progress and the final summary of each namespace, or the
/// error that stopped it, into `tx`. Stops when the client goes away.
async fn execute(
    migrator: Arc<Migrator>,
    plan: Plan,
    options: Options,
    tx: mpsc::Sender<Result<Progress, MigrateError>>,
) {
    let (progress_tx, mut progress_rx) = mpsc::channel::<Progress>(16);
    // Progress of the running step is forwarded as it comes; the step's result goes
    // after it, in order, because the forwarder is drained before the result is sent.
    let forward_tx = tx.clone();
    let forwarder = tokio::spawn(async move {
        while let Some(progress) = progress_rx.recv().await {
            if forward_tx.send(Ok(progress)).await.is_err() {
                return;
            }
        }
    });
    let result: Result<Vec<Progress>, MigrateError> = async {
        let namespaces = match &plan {
            Plan::Namespaces(list) => list.clone(),
            Plan::All => migrator.namespaces(options.batch).await?,
            Plan::Import { namespace, .. } => vec![namespace.clone()],
        };
        let mut done = Vec::new();
        for namespace in namespaces {
            let summary = match &plan {
                Plan::Import {
                    source_prefix,
                    delete_source,
                    ..
                } => {
                    migrate::boringnode::import(
                        &migrator,
                        &namespace,
                        source_prefix,
                        *delete_source,
                        options,
                        &progress_tx,
                    )
                    .await?
                }
                _ => migrator.run(&namespace, options, &progress_tx).await?,
            };
            done.push(summary);
        }
        Ok(done)
    }
    .await;
    drop(progress_tx);
    let _ = forwarder.await;
    match result {
        Ok(summaries) => {
            for summary in summaries {
                if tx.send(Ok(summary)).await.is_err() {
                    return;
                }
            }
        }
        Err(MigrateError::Cancelled) => {}
        Err(error) => {
            tracing::warn!(%error, "migrate stopped");
            let _ = tx.send(Err(error)).await;
        }
    }
}

fn describe(namespace: &str, s: &crate::store::migrate::NamespaceState) -> proto::NamespaceStatus {
    let schema_version = s.schema_version();
    let needs_migrate = s.needs_migrate();
    let expected = s.expected_index.unwrap_or(0);
    let damaged = !needs_migrate && expected > s.index_size;
    let command = format!(
        "grpcurl -plaintext -d '{{\"namespace\": \"{namespace}\"}}' <dueq-address> dueq.v1.AdminService/Migrate"
    );
    // A namespace written before both layout changes needs both: say so in one line.
    let mut refused = Vec::new();
    if needs_migrate {
        refused.push(format!(
            "store schema {schema_version}, this dueq uses {SCHEMA_VERSION}: schedule calls are refused"
        ));
    }
    if s.jobs_need_migrate() {
        refused.push(format!(
            "jobs are stored in job layout {}, this dueq uses {JOBS_LAYOUT}: job calls are refused",
            s.jobs_layout_version()
        ));
    }
    let message = if s.lock_ttl_ms.is_some() {
        "a Migrate is running".to_owned()
    } else if !refused.is_empty() {
        format!("{} until you run {command}", refused.join("; "))
    } else if damaged {
        format!(
            "the due index holds {} entries but {expected} schedules are active: {} would never \
             fire; run {command}",
            s.index_size,
            expected - s.index_size
        )
    } else if schema_version == 0 {
        "no data".to_owned()
    } else {
        "ok".to_owned()
    };
    proto::NamespaceStatus {
        namespace: namespace.to_owned(),
        schema_version,
        current_schema_version: SCHEMA_VERSION,
        needs_migrate,
        expected_index_size: expected,
        index_size: s.index_size,
        index_damaged: damaged,
        migration_running: s.lock_ttl_ms.is_some(),
        message,
        jobs_layout: s.jobs_layout_version(),
        current_jobs_layout: JOBS_LAYOUT,
        jobs_need_migrate: s.jobs_need_migrate(),
    }
}

#[tonic::async_trait]
impl AdminService for AdminApi {
    type MigrateStream = ProgressStream;

    #[tracing::instrument(skip_all, fields(namespace = %request.get_ref().namespace, dry_run = request.get_ref().dry_run))]
    async fn migrate(
        &self,
        request: Request<proto::MigrateRequest>,
    ) -> Result<Response<Self::MigrateStream>, Status> {
        let (plan, options) = plan(request.get_ref())?;
        let (tx, rx) = mpsc::channel(16);
        tokio::spawn(execute(self.migrator.clone(), plan, options, tx));
        let stream = ReceiverStream::new(rx).map(|item| {
            item.map(progress_to_proto)
                .map_err(|e| Status::from(ApiError::from(e)))
        });
        Ok(Response::new(Box::pin(stream)))
    }

    #[tracing::instrument(skip_all, fields(namespace = %request.get_ref().namespace))]
    async fn get_namespace_status(
        &self,
        request: Request<proto::GetNamespaceStatusRequest>,
    ) -> Result<Response<proto::NamespaceStatus>, Status> {
        let namespace = validate::namespace(&request.get_ref().namespace)?;
        let state = self
            .migrator
            .store()
            .namespace_status(namespace)
            .await
            .map_err(|e| Status::from(ApiError::from(MigrateError::from(e))))?;
        Ok(Response::new(describe(namespace, &state)))
    }
}
