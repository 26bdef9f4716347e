//! Migrate and GetNamespaceStatus answer on QueueService, their documented path, and
//! the same on the deprecated AdminService; MigrateSource's values by their new names.

use dueq::proto::admin_service_client::AdminServiceClient;
use tonic::Code;

use crate::common::*;

/// Namespace "ns" with three active schedules and its due index deleted: a status
/// that reports damage and a Migrate that repairs it.
async fn damaged(redis: &Redis, service: &Service) {
    let mut c = service.client().await;
    for i in 0..3 {
        upsert(&mut c, "ns", every(&format!("s{i}"), 3600)).await;
    }
    let mut conn = redis.conn().await;
    let _: () = query(&mut conn, cmd("DEL").arg("dueq:{ns}:due")).await;
}

#[tokio::test]
async fn queue_service_serves_migrate_and_namespace_status() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    damaged(&redis, &service).await;
    let mut queue = service.client().await;

    let st = status(&mut queue, "ns").await;
    assert!(st.index_damaged, "{st:?}");
    assert!(
        st.message.contains("dueq.v1.QueueService/Migrate"),
        "the fix names the documented path: {}",
        st.message
    );
    let done = migrate_done(&mut queue, migrate_req("ns")).await;
    assert_eq!(done.indexed, 3, "{done:?}");
    assert!(!status(&mut queue, "ns").await.index_damaged);
}

#[tokio::test]
#[allow(deprecated)] // AdminService is deprecated; this proves it still answers.
async fn deprecated_admin_service_still_serves_both() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    damaged(&redis, &service).await;
    let mut old = AdminServiceClient::connect(service.endpoint())
        .await
        .expect("connect AdminService");
    let mut queue = service.client().await;
    let request = || proto::GetNamespaceStatusRequest {
        namespace: "ns".into(),
    };

    let st = old
        .get_namespace_status(request())
        .await
        .expect("AdminService/GetNamespaceStatus")
        .into_inner();
    assert!(st.index_damaged, "{st:?}");
    assert_eq!(
        st,
        status(&mut queue, "ns").await,
        "one handler, one answer"
    );

    let mut stream = old
        .migrate(migrate_req("ns"))
        .await
        .expect("AdminService/Migrate")
        .into_inner();
    let mut last = None;
    while let Some(msg) = stream.message().await.expect("progress") {
        last = Some(msg);
    }
    let done = last.expect("a DONE message");
    assert_eq!((done.phase, done.indexed), (DONE, 3), "{done:?}");
    let st = old
        .get_namespace_status(request())
        .await
        .expect("status")
        .into_inner();
    assert!(!st.index_damaged, "{st:?}");
}

#[tokio::test]
async fn migrate_source_values_by_their_prefixed_names() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    damaged(&redis, &service).await;
    let mut queue = service.client().await;

    // MIGRATE_SOURCE_DUEQ (2) is dueq's own store, as the zero value is.
    let explicit = proto::MigrateRequest {
        source: proto::MigrateSource::Dueq as i32,
        ..migrate_req("ns")
    };
    let done = migrate_done(&mut queue, explicit.clone()).await;
    assert_eq!(done.indexed, 3, "{done:?}");

    // Import-only fields with it are refused, naming the source they need.
    let err = migrate(
        &mut queue,
        proto::MigrateRequest {
            source_prefix: "bull:".into(),
            ..explicit
        },
    )
    .await
    .expect_err("source_prefix with MIGRATE_SOURCE_DUEQ");
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(
        err.message().contains("source_prefix")
            && err.message().contains("MIGRATE_SOURCE_BORINGNODE_QUEUE"),
        "{}",
        err.message()
    );
    let err = migrate(
        &mut queue,
        proto::MigrateRequest {
            source: 3,
            ..migrate_req("ns")
        },
    )
    .await
    .expect_err("unknown source");
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.message().contains("source"), "{}", err.message());
}
