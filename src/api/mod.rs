//! The gRPC edge. Each handler validates its request, calls one use case and
//! converts the answer (`schedules`, `jobs`, `queues`, `admin`); `rpcs`, the one RPC
//! table, wires them into the tonic service traits, one line per RPC, behind
//! `authorize` (the namespace validated once, the caller's role checked) and through
//! `rescue`, the one place an error becomes a status. Cross-cutting concerns (the per-RPC span) are tower layers
//! (`crate::layers`), not lines in handlers.

mod admin;
pub(crate) mod audit;
pub(crate) mod audit_lines;
mod authorize;
mod budget;
mod convert;
mod cpu;
mod deadline;
mod error;
mod flow;
pub(crate) mod heavy;
mod jobs;
mod limits;
mod queues;
mod quota;
mod reply_budget;
mod rescue;
mod rpcs;
mod schedules;
mod totals;
mod validate;

use std::sync::Arc;

pub(crate) use audit::Audit;
pub(crate) use error::ApiError;
pub(crate) use limits::Limits;
pub(crate) use quota::Quotas;
pub(crate) use rescue::Rescue;
pub(crate) use rpcs::{all as rpcs, queue_rpc};

use crate::{jobs::Jobs, migrate::Migrator, schedules::Schedules};

/// Implements `dueq.v1.QueueService`. Cloned (a few Arcs) into the tasks of a Work
/// stream.
#[derive(Clone)]
pub(crate) struct QueueApi {
    schedules: Arc<Schedules>,
    jobs: Arc<Jobs>,
    limits: Limits,
    rescue: Arc<Rescue>,
    /// Serves Migrate and GetNamespaceStatus, the same as on AdminService.
    admin: Arc<AdminApi>,
    /// Each principal's `max_namespaces`.
    quotas: Arc<Quotas>,
}

impl QueueApi {
    pub(crate) fn new(
        schedules: Arc<Schedules>,
        jobs: Arc<Jobs>,
        limits: Limits,
        rescue: Arc<Rescue>,
        admin: Arc<AdminApi>,
        quotas: Arc<Quotas>,
    ) -> Self {
        Self {
            schedules,
            jobs,
            limits,
            rescue,
            admin,
            quotas,
        }
    }

    /// Whether the caller's `max_namespaces` lets it call `rpc` in `scope`
    /// (`quota`).
    async fn admit(
        &self,
        caller: Option<&crate::auth::Caller>,
        rpc: &crate::rpc::Rpc,
        scope: crate::auth::Scope<'_>,
    ) -> Result<(), ApiError> {
        self.quotas.admit(caller, rpc, scope).await
    }
}

/// Migrate and GetNamespaceStatus. Implements the deprecated `dueq.v1.AdminService`
/// and serves the same two RPCs of `dueq.v1.QueueService`.
pub(crate) struct AdminApi {
    migrator: Arc<Migrator>,
    rescue: Arc<Rescue>,
    /// Where operators reach this service, for the Migrate command in status messages.
    address: String,
}

impl AdminApi {
    /// AdminService's RPCs are admin calls, which no principal's `max_namespaces`
    /// limits (`quota`).
    #[allow(clippy::unused_async)]
    async fn admit(
        &self,
        _caller: Option<&crate::auth::Caller>,
        _rpc: &crate::rpc::Rpc,
        _scope: crate::auth::Scope<'_>,
    ) -> Result<(), ApiError> {
        Ok(())
    }
}

impl AdminApi {
    pub(crate) fn new(migrator: Arc<Migrator>, rescue: Arc<Rescue>, address: String) -> Self {
        Self {
            migrator,
            rescue,
            address,
        }
    }
}

/// The operators' RPCs are served by both services through the same handlers.
impl AsRef<AdminApi> for QueueApi {
    fn as_ref(&self) -> &AdminApi {
        &self.admin
    }
}

impl AsRef<AdminApi> for AdminApi {
    fn as_ref(&self) -> &AdminApi {
        self
    }
}
