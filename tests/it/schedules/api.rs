//! UpsertSchedule / Get / List / Delete / Pause / Resume through real gRPC.

use tonic::Code;

use crate::common::*;

#[tokio::test]
async fn upsert_creates_then_updates_keeping_runtime_state() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    let first = upsert(&mut c, "ns", every("s1", 60)).await;
    assert!(first.created);
    let s = first.schedule.expect("schedule");
    assert_eq!(s.status, proto::ScheduleStatus::Active as i32);
    assert_eq!(s.revision, 1);
    let next = ms(&s.next_run_time);
    assert_eq!(next % 60_000, 0, "every 60s is aligned to the epoch");

    // Claim once so there is runtime state to keep.
    let now = redis_now(&mut conn).await;
    force_due(&mut conn, "ns", "s1", now - 10).await;
    let occ = claim(&mut c, "ns", 0).await.expect("due");
    assert_eq!(occ.run_number, 1);
    let after_claim = get(&mut c, "ns", "s1").await;

    // Same timing, new payload: runtime state and next run kept, revision unchanged.
    let mut changed = every("s1", 60);
    changed.payload = b"v2".to_vec();
    let second = upsert(&mut c, "ns", changed).await;
    assert!(!second.created);
    let s2 = second.schedule.expect("schedule");
    assert_eq!(s2.payload, b"v2");
    assert_eq!(s2.run_count, 1);
    assert_eq!(s2.revision, 1);
    assert_eq!(s2.next_run_time, after_claim.next_run_time);
    assert_eq!(s2.last_run_time, after_claim.last_run_time);
    assert_eq!(s2.create_time, after_claim.create_time);

    // Timing change: next run recomputed, revision bumped, run count kept.
    let third = upsert(&mut c, "ns", every("s1", 7))
        .await
        .schedule
        .expect("schedule");
    assert_eq!(third.revision, 2);
    assert_eq!(third.run_count, 1);
    assert_eq!(ms(&third.next_run_time) % 7_000, 0);
}

#[tokio::test]
async fn empty_id_gets_a_uuid() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let s = upsert(&mut c, "ns", every("", 60))
        .await
        .schedule
        .expect("schedule");
    assert!(uuid::Uuid::parse_str(&s.id).is_ok(), "{}", s.id);
    assert_eq!(get(&mut c, "ns", &s.id).await.id, s.id);
}

#[tokio::test]
async fn pause_resume_delete() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", every("p", 60)).await;

    let paused = c
        .pause_schedule(proto::PauseScheduleRequest {
            namespace: "ns".into(),
            id: "p".into(),
            note: String::new(),
        })
        .await
        .expect("pause")
        .into_inner()
        .schedule
        .expect("schedule");
    assert_eq!(paused.status, proto::ScheduleStatus::Paused as i32);
    assert!(paused.next_run_time.is_none());
    // Even with a forged due entry, a paused schedule is never claimed (and is repaired).
    let _: () = cmd("ZADD")
        .arg("dueq:{ns}:due")
        .arg(0)
        .arg("p")
        .query_async(&mut conn)
        .await
        .expect("zadd");
    assert!(claim(&mut c, "ns", 0).await.is_none());
    let score: Option<f64> = cmd("ZSCORE")
        .arg("dueq:{ns}:due")
        .arg("p")
        .query_async(&mut conn)
        .await
        .expect("zscore");
    assert_eq!(
        score, None,
        "claim removed the stale entry of a paused schedule"
    );

    let before = redis_now(&mut conn).await;
    let resumed = c
        .resume_schedule(proto::ResumeScheduleRequest {
            namespace: "ns".into(),
            id: "p".into(),
        })
        .await
        .expect("resume")
        .into_inner()
        .schedule
        .expect("schedule");
    assert_eq!(resumed.status, proto::ScheduleStatus::Active as i32);
    let next = ms(&resumed.next_run_time);
    assert!(
        next > before && next <= before + 60_000,
        "next run recomputed from now"
    );

    c.delete_schedule(proto::DeleteScheduleRequest {
        namespace: "ns".into(),
        id: "p".into(),
    })
    .await
    .expect("delete");
    let err = c
        .get_schedule(proto::GetScheduleRequest {
            namespace: "ns".into(),
            id: "p".into(),
        })
        .await
        .expect_err("deleted");
    assert_eq!(err.code(), Code::NotFound);
    let card: i64 = cmd("ZCARD")
        .arg("dueq:{ns}:due")
        .query_async(&mut conn)
        .await
        .expect("zcard");
    assert_eq!(card, 0);
    for (rpc, result) in calls_by_id(&mut c, "ns", "p").await {
        let err = result.expect_err("unknown id");
        assert_eq!(err.code(), Code::NotFound, "{rpc}");
    }
}

#[tokio::test]
async fn created_paused_is_never_claimed() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut s = every("paused", 1);
    s.paused = true;
    let stored = upsert(&mut c, "ns", s).await.schedule.expect("schedule");
    assert_eq!(stored.status, proto::ScheduleStatus::Paused as i32);
    assert!(claim(&mut c, "ns", 1500).await.is_none());
}

#[tokio::test]
async fn list_pages_through_everything_with_filter() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    for i in 0..25 {
        upsert(&mut c, "ns", every(&format!("s{i:02}"), 60)).await;
    }
    for i in (0..25).step_by(5) {
        c.pause_schedule(proto::PauseScheduleRequest {
            namespace: "ns".into(),
            id: format!("s{i:02}"),
            note: String::new(),
        })
        .await
        .expect("pause");
    }
    let list = |status: proto::ScheduleStatus, page_size: u32| {
        let mut c = c.clone();
        async move {
            let (mut ids, mut token, mut pages) = (Vec::new(), String::new(), 0);
            loop {
                let page = c
                    .list_schedules(proto::ListSchedulesRequest {
                        namespace: "ns".into(),
                        page_size,
                        page_token: token.clone(),
                        status: status as i32,
                        view: proto::ScheduleView::Full as i32,
                        ..Default::default()
                    })
                    .await
                    .expect("list")
                    .into_inner();
                assert!(page.schedules.len() <= page_size as usize);
                ids.extend(page.schedules.into_iter().map(|s| s.id));
                pages += 1;
                if page.next_page_token.is_empty() {
                    return (ids, pages);
                }
                token = page.next_page_token;
            }
        }
    };
    let (all, pages) = list(proto::ScheduleStatus::Unspecified, 10).await;
    let expected: Vec<String> = (0..25).map(|i| format!("s{i:02}")).collect();
    assert_eq!(all, expected);
    assert_eq!(pages, 3);
    let (paused, _) = list(proto::ScheduleStatus::Paused, 2).await;
    assert_eq!(paused, vec!["s00", "s05", "s10", "s15", "s20"]);
    let (active, _) = list(proto::ScheduleStatus::Active, 7).await;
    assert_eq!(active.len(), 20);
}

#[tokio::test]
async fn awkward_ids_never_alias() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let ids = [
        "due",
        "ids",
        "meta",
        "a:b",
        "{x}",
        "x}{y",
        "s:due",
        "lt",
        "lk:due",
        "日本語 ✓",
        " spaced ",
    ];
    for (i, id) in ids.iter().enumerate() {
        let mut s = every(id, 60);
        s.payload = format!("payload-{i}").into_bytes();
        assert!(
            upsert(&mut c, "ns", s).await.created,
            "{id} aliased an earlier record"
        );
    }
    for (i, id) in ids.iter().enumerate() {
        let s = get(&mut c, "ns", id).await;
        assert_eq!(s.id, *id);
        assert_eq!(s.payload, format!("payload-{i}").into_bytes());
    }
    // Internal keys are still of their own types: nothing overwrote them.
    for (key, kind) in [
        ("dueq:{ns}:due", "zset"),
        ("dueq:{ns}:lt", "zset"),
        ("dueq:{ns}:meta", "hash"),
    ] {
        let t: String = cmd("TYPE")
            .arg(key)
            .query_async(&mut conn)
            .await
            .expect("TYPE");
        assert_eq!(t, kind, "{key}");
    }
    // Each is claimed as itself.
    let now = redis_now(&mut conn).await;
    for id in ids {
        force_due(&mut conn, "ns", id, now - 1000).await;
    }
    let mut claimed = Vec::new();
    while let Some(o) = claim(&mut c, "ns", 0).await {
        claimed.push(o.schedule.expect("schedule").id);
    }
    claimed.sort();
    let mut expected: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(claimed, expected);
}

/// A schedule key that holds something other than a packed record (garbled bytes, or
/// a hash left from schema 2) is reported by every call that meets it, naming the key,
/// and nothing is written: not the record, not its index entry.
#[tokio::test]
async fn a_schedule_key_holding_something_else_is_internal_and_changes_nothing() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", every("real", 3600)).await;
    let _: () = cmd("SET")
        .arg("dueq:{ns}:s:zgarbled")
        .arg("not msgpack \u{1}")
        .query_async(&mut conn)
        .await
        .expect("SET");
    let _: () = cmd("HSET")
        .arg("dueq:{ns}:s:zoldhash")
        .arg("status")
        .arg("active")
        .query_async(&mut conn)
        .await
        .expect("HSET");
    let now = redis_now(&mut conn).await;
    for id in ["zgarbled", "zoldhash"] {
        let _: () = cmd("ZADD")
            .arg("dueq:{ns}:due")
            .arg(now - 5)
            .arg(id)
            .query_async(&mut conn)
            .await
            .expect("ZADD");
        // Listed after "real", in the one leaf of the listing.
        let _: () = cmd("ZADD")
            .arg("dueq:{ns}:lk:real")
            .arg(0)
            .arg(id)
            .query_async(&mut conn)
            .await
            .expect("ZADD");
    }
    let before = snapshot(&mut conn).await;
    let internal = |status: tonic::Status, id: &str| {
        assert_eq!(status.code(), Code::Internal, "{status:?}");
        assert!(
            status.message().contains(&format!("dueq:{{ns}}:s:{id}")),
            "names the key: {}",
            status.message()
        );
    };
    for id in ["zgarbled", "zoldhash"] {
        let get = c
            .get_schedule(proto::GetScheduleRequest {
                namespace: "ns".into(),
                id: id.into(),
            })
            .await
            .expect_err("unreadable");
        internal(get, id);
        let up = c
            .upsert_schedule(proto::UpsertScheduleRequest {
                namespace: "ns".into(),
                schedule: Some(every(id, 60)),
            })
            .await
            .expect_err("unreadable");
        internal(up, id);
        let pause = c
            .pause_schedule(proto::PauseScheduleRequest {
                namespace: "ns".into(),
                id: id.into(),
                note: String::new(),
            })
            .await
            .expect_err("unreadable");
        internal(pause, id);
        let delete = c
            .delete_schedule(proto::DeleteScheduleRequest {
                namespace: "ns".into(),
                id: id.into(),
            })
            .await
            .expect_err("unreadable");
        internal(delete, id);
    }
    let claim = c
        .claim_due_schedule(proto::ClaimDueScheduleRequest {
            namespace: "ns".into(),
            worker_id: "w".into(),
            wait: wait(0),
            lease: None,
        })
        .await
        .expect_err("the due entry's record is unreadable");
    assert_eq!(claim.code(), Code::Internal, "{claim:?}");
    let list = c
        .list_schedules(proto::ListSchedulesRequest {
            namespace: "ns".into(),
            ..Default::default()
        })
        .await
        .expect_err("a listed record is unreadable");
    assert_eq!(list.code(), Code::Internal, "{list:?}");
    assert_eq!(snapshot(&mut conn).await, before, "nothing was written");
    assert_eq!(get(&mut c, "ns", "real").await.id, "real");
}

/// The listing is split over small sorted sets (leaves of at most 120 ids). Creating
/// and deleting thousands of schedules in a scattered order keeps it in id order,
/// every id once, leaves within their bounds, and `listed` in meta exact.
#[tokio::test]
async fn the_listing_stays_ordered_across_leaf_splits_and_merges() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    // A scattered order (a multiplicative permutation), so leaves split everywhere,
    // and a new lowest id arrives now and then.
    let n = 1500u64;
    let id_of = |k: u64| format!("id-{:05}", (k * 7919) % n);
    for k in 0..n {
        upsert(&mut c, "ns", every(&id_of(k), 3600)).await;
    }
    let mut expected: Vec<String> = (0..n).map(id_of).collect();
    expected.sort();
    assert_eq!(listed_schedule_ids(&mut conn, "ns").await, expected);
    let leaves: u64 = cmd("ZCARD")
        .arg("dueq:{ns}:lt")
        .query_async(&mut conn)
        .await
        .expect("ZCARD");
    assert!(leaves >= n / 120, "{leaves} leaves for {n} ids");

    // Delete every id but one in each run of 50: leaves empty out and go.
    for (i, id) in expected.iter().enumerate() {
        if i % 50 != 0 {
            c.delete_schedule(proto::DeleteScheduleRequest {
                namespace: "ns".into(),
                id: id.clone(),
            })
            .await
            .expect("delete");
        }
    }
    let kept: Vec<String> = expected.iter().step_by(50).cloned().collect();
    assert_eq!(listed_schedule_ids(&mut conn, "ns").await, kept);
    // A new lowest id moves the first leaf's boundary down.
    upsert(&mut c, "ns", every("a-first", 3600)).await;
    let mut all = vec!["a-first".to_owned()];
    all.extend(kept);
    assert_eq!(listed_schedule_ids(&mut conn, "ns").await, all);
    let listed: String = cmd("HGET")
        .arg("dueq:{ns}:meta")
        .arg("listed")
        .query_async(&mut conn)
        .await
        .expect("HGET");
    assert_eq!(listed, all.len().to_string());

    // ListSchedules pages through exactly that, in order.
    let mut seen = Vec::new();
    let mut token = String::new();
    loop {
        let page = c
            .list_schedules(proto::ListSchedulesRequest {
                namespace: "ns".into(),
                page_size: 7,
                page_token: token.clone(),
                status: 0,
                view: proto::ScheduleView::Full as i32,
                ..Default::default()
            })
            .await
            .expect("list")
            .into_inner();
        seen.extend(page.schedules.into_iter().map(|s| s.id));
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    assert_eq!(seen, all);
}
