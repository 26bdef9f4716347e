//! Get, Delete, Pause, Resume and List with a bad namespace, id, page or filter, and
//! unknown ids: refused or NOT_FOUND, and nothing created.

use super::{previews::preview_id, *};

/// Get/Delete/Pause/Resume/List with a bad namespace, id, page or filter.
pub(super) async fn run_other_rpcs(
    c: &mut Client,
    conn: &mut MultiplexedConnection,
) -> Vec<String> {
    let before = snapshot(conn).await;
    let mut failures = Vec::new();
    let mut bad_keys: Vec<(String, String, String, &str, &str)> = bad_namespaces()
        .into_iter()
        .map(|(name, ns, reason)| (name.to_string(), ns, "s1".to_string(), "namespace", reason))
        .collect();
    bad_keys.push((
        "empty id".into(),
        "ns".into(),
        String::new(),
        "id",
        "must not be empty",
    ));
    bad_keys.push((
        "id of 257 bytes".into(),
        "ns".into(),
        "i".repeat(257),
        "id",
        "at most 256 bytes",
    ));
    for (name, namespace, id, field, reason) in bad_keys {
        for (rpc, got) in calls_by_id(c, &namespace, &id).await {
            let case = format!("{rpc}: {name}");
            failures.extend(rejection(&case, got, Code::InvalidArgument, field, reason));
        }
        failures.extend(unchanged(&name, conn, &before).await);
    }
    let list = |namespace: &str| proto::ListSchedulesRequest {
        namespace: namespace.into(),
        page_size: 10,
        page_token: String::new(),
        status: 0,
        view: 0,
        ..Default::default()
    };
    let mut lists: Vec<(String, proto::ListSchedulesRequest, &str, &str)> = bad_namespaces()
        .into_iter()
        .map(|(name, ns, reason)| (name.to_string(), list(&ns), "namespace", reason))
        .collect();
    lists.extend([
        (
            "page_size 1001".to_string(),
            proto::ListSchedulesRequest {
                page_size: 1001,
                ..list("ns")
            },
            "page_size",
            "at most 1000",
        ),
        (
            "page_token not hex".into(),
            proto::ListSchedulesRequest {
                page_token: "zz".into(),
                ..list("ns")
            },
            "page_token",
            "not a token",
        ),
        (
            "page_token of odd length".into(),
            proto::ListSchedulesRequest {
                page_token: "abc".into(),
                ..list("ns")
            },
            "page_token",
            "not a token",
        ),
        (
            "page_token not UTF-8".into(),
            proto::ListSchedulesRequest {
                page_token: "ff".into(),
                ..list("ns")
            },
            "page_token",
            "not a token",
        ),
        (
            "unknown status filter".into(),
            proto::ListSchedulesRequest {
                status: 99,
                ..list("ns")
            },
            "status",
            "unknown status 99",
        ),
    ]);
    for (name, request, field, reason) in lists {
        let name = format!("List: {name}");
        let got = c.list_schedules(request).await;
        failures.extend(rejection(&name, got, Code::InvalidArgument, field, reason));
        failures.extend(unchanged(&name, conn, &before).await);
    }
    failures
}

#[tokio::test]
async fn bad_namespace_or_id_is_rejected_by_every_rpc() {
    let redis = Redis::start().await;
    let service = start(&redis).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    assert_no_failures(
        "Get/Delete/Pause/Resume/List",
        run_other_rpcs(&mut c, &mut conn).await,
    );
    assert_eq!(dbsize(&mut conn).await, 0);
}

/// None when `got` is NOT_FOUND naming the id.
fn not_found<T>(case: &str, got: Result<T, Status>, id: &str) -> Option<String> {
    match got {
        Ok(_) => Some(format!("{case}: expected NotFound, got OK")),
        Err(s) if s.code() == Code::NotFound && s.message().contains(&format!("{id:?}")) => None,
        Err(s) => Some(format!("{case}: got {:?} {}", s.code(), shown(s.message()))),
    }
}

pub(super) async fn run_not_found(c: &mut Client, conn: &mut MultiplexedConnection) -> Vec<String> {
    let before = snapshot(conn).await;
    let mut failures = Vec::new();
    // A namespace holding another schedule, and one holding nothing at all.
    for namespace in ["ns", "empty"] {
        for id in ["ghost", "{ns}", "s:ghost"] {
            let case = |rpc: &str| format!("{rpc} {namespace}/{id}");
            for (rpc, got) in calls_by_id(c, namespace, id).await {
                failures.extend(not_found(&case(rpc), got, id));
            }
            let got = c.preview_schedule(preview_id(namespace, id)).await;
            failures.extend(not_found(&case("Preview"), got, id));
            failures.extend(unchanged(&case("any"), conn, &before).await);
        }
    }
    failures
}

#[tokio::test]
async fn unknown_ids_are_not_found_and_create_nothing() {
    let redis = Redis::start().await;
    let service = start(&redis).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    assert_no_failures(
        "unknown ids, empty database",
        run_not_found(&mut c, &mut conn).await,
    );
    assert_eq!(dbsize(&mut conn).await, 0);

    let real = upsert(&mut c, "ns", every("real", 60)).await.schedule;
    assert_no_failures(
        "unknown ids next to a schedule",
        run_not_found(&mut c, &mut conn).await,
    );
    assert_eq!(Some(get(&mut c, "ns", "real").await), real);
}
