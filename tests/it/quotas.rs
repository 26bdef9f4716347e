//! Per-namespace quotas (issue 13): enforced inside the scripts, answered
//! RESOURCE_EXHAUSTED naming the flag, nothing written, room again after a delete.

use tonic::Code;

use crate::common::*;

/// Pins: with --max-schedules-per-namespace 2, a third create is refused naming the
/// flag and writes nothing; an update of a stored schedule still passes; another
/// namespace has its own count; a delete makes room.
#[tokio::test]
async fn schedules_beyond_the_quota_are_refused() {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.max_schedules_per_namespace = 2;
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    upsert(&mut c, "ns", every("a", 60)).await;
    upsert(&mut c, "ns", every("b", 60)).await;

    let refused = try_upsert(&mut c, "ns", every("c", 60))
        .await
        .expect_err("over the quota");
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert!(
        refused.message().contains("--max-schedules-per-namespace"),
        "{refused:?}"
    );
    let missing = c
        .get_schedule(proto::GetScheduleRequest {
            namespace: "ns".into(),
            id: "c".into(),
        })
        .await
        .expect_err("nothing written");
    assert_eq!(missing.code(), Code::NotFound);

    let updated = upsert(&mut c, "ns", every("a", 120)).await;
    assert!(!updated.created, "an update is not a create");
    upsert(&mut c, "other", every("c", 60)).await;

    c.delete_schedule(proto::DeleteScheduleRequest {
        namespace: "ns".into(),
        id: "b".into(),
    })
    .await
    .expect("delete");
    let created = upsert(&mut c, "ns", every("c", 60)).await;
    assert!(created.created, "room again after the delete");
}
