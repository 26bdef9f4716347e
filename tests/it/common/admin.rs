//! The operators' calls, Migrate and GetNamespaceStatus, on QueueService (their
//! documented path; the deprecated AdminService is tested in migrate::services).

use dueq::proto::{self, queue_service_client::QueueServiceClient};
use tonic::{transport::Channel, Status};

use super::service::Service;

pub type Admin = QueueServiceClient<Channel>;

pub const DONE: i32 = proto::MigratePhase::Done as i32;

pub async fn admin(service: &Service) -> Admin {
    admin_at(service.endpoint()).await
}

pub async fn admin_at(endpoint: String) -> Admin {
    QueueServiceClient::connect(endpoint)
        .await
        .expect("connect QueueService")
}

/// A Migrate of one namespace, everything else default.
pub fn migrate_req(ns: &str) -> proto::MigrateRequest {
    proto::MigrateRequest {
        namespace: ns.into(),
        ..Default::default()
    }
}

/// Runs a Migrate to its end: every message, or the status it failed with (at the
/// call or in the stream).
pub async fn migrate(
    admin: &mut Admin,
    req: proto::MigrateRequest,
) -> Result<Vec<proto::MigrateProgress>, Status> {
    let mut stream = admin.migrate(req).await?.into_inner();
    let mut out = Vec::new();
    while let Some(msg) = stream.message().await? {
        out.push(msg);
    }
    Ok(out)
}

/// The DONE message of a successful single-namespace Migrate (asserted last, and
/// only once).
pub async fn migrate_done(admin: &mut Admin, req: proto::MigrateRequest) -> proto::MigrateProgress {
    let msgs = migrate(admin, req).await.expect("migrate");
    let last = msgs.last().cloned().expect("at least one message");
    assert_eq!(last.phase, DONE, "the last message is DONE: {msgs:#?}");
    assert_eq!(
        msgs.iter().filter(|m| m.phase == DONE).count(),
        1,
        "exactly one DONE"
    );
    last
}

pub async fn status(admin: &mut Admin, ns: &str) -> proto::NamespaceStatus {
    admin
        .get_namespace_status(proto::GetNamespaceStatusRequest {
            namespace: ns.into(),
        })
        .await
        .expect("GetNamespaceStatus")
        .into_inner()
}

/// Asserts `status` is the refusal of a namespace whose metadata needs Migrate:
/// FAILED_PRECONDITION naming the fix.
pub fn refused_until_migrate(what: &str, status: tonic::Status) {
    assert_eq!(
        status.code(),
        tonic::Code::FailedPrecondition,
        "{what}: {status:?}"
    );
    assert!(
        status.message().contains("needs Migrate")
            && status.message().contains("dueq.v1.QueueService/Migrate"),
        "{what}: the message names the fix: {}",
        status.message()
    );
}
