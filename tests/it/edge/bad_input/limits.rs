//! The limits themselves are accepted: the refusals are not off by one.

use super::{previews::preview_of, *};

/// The limits themselves are accepted: the refusals above are not off by one.
#[tokio::test]
async fn values_at_the_limits_are_accepted() {
    let redis = Redis::start().await;
    let service = start(&redis).await;
    let mut c = service.client().await;

    let ns64 = "n".repeat(64);
    let all_chars = "AZaz09_.-";
    for ns in [ns64.as_str(), all_chars] {
        assert!(
            upsert(&mut c, ns, every("s", 60)).await.created,
            "namespace {ns:?}"
        );
        assert_eq!(get(&mut c, ns, "s").await.id, "s");
        assert!(claim(&mut c, ns, 0).await.is_none());
    }
    for id in ["i".repeat(256), "é".repeat(128)] {
        assert!(
            upsert(&mut c, "ns", every(&id, 60)).await.created,
            "id of {} bytes",
            id.len()
        );
        assert_eq!(get(&mut c, "ns", &id).await.id, id);
    }
    let at_limits = [
        ("every 1s", every("t", 1)),
        ("every 366 days", every("t", 366 * 86_400)),
        (
            "end_time 1 ms after start_time",
            proto::Schedule {
                start_time: Some(ts(2_000_000_000_000)),
                end_time: Some(ts(2_000_000_000_001)),
                ..every("t", 60)
            },
        ),
        (
            "start_time at the epoch, end_time at 9999-12-31T23:59:59.999999999Z",
            proto::Schedule {
                start_time: stamp(0, 0),
                end_time: stamp(253_402_300_799, 999_999_999),
                ..cron("t", "0 0 29 2 *", "Pacific/Kiritimati")
            },
        ),
        (
            "run_limit 2^53, 256-byte job_name, 64 headers at their size limits",
            proto::Schedule {
                run_limit: 1 << 53,
                job_name: "j".repeat(256),
                headers: (0..64)
                    .map(|i| (format!("{i:0>256}"), "v".repeat(8192)))
                    .collect(),
                payload: vec![0; PAYLOAD_LIMIT],
                ..every("t", 60)
            },
        ),
    ];
    for (name, schedule) in at_limits {
        let got = c
            .upsert_schedule(proto::UpsertScheduleRequest {
                namespace: "ns".into(),
                schedule: Some(schedule),
            })
            .await;
        assert!(got.is_ok(), "{name}: {:?}", got.err());
    }
    let every_60 = || preview_of(every("", 60));
    for count in [0, 1, 1000] {
        let fire_times = c
            .preview_schedule(proto::PreviewScheduleRequest {
                count,
                ..every_60()
            })
            .await
            .expect("preview")
            .into_inner()
            .fire_times;
        let expected = if count == 0 { 10 } else { count as usize };
        assert_eq!(fire_times.len(), expected, "preview count {count}");
    }
    for page_size in [0, 1000] {
        c.list_schedules(proto::ListSchedulesRequest {
            namespace: "ns".into(),
            page_size,
            page_token: String::new(),
            status: 0,
            view: 0,
            ..Default::default()
        })
        .await
        .expect("list at the page size limit");
    }
}
