//! The CPU gate of cron validation and previews is per principal (issue 29): one
//! principal's flood of expensive PreviewSchedule calls queues behind its own
//! permits, and another principal's UpsertSchedule is not queued behind it.

use std::sync::{
    atomic::{AtomicBool, AtomicU64, Ordering},
    Arc,
};

use tonic::Code;

use crate::{
    common::*,
    security::auth::{with_token, write_auth_file},
};

/// Clients of the flooding principal, each with one expensive preview in flight
/// at a time: far more than its permits, so most of them wait in the gate.
const FLOODERS: usize = 16;

/// A preview that costs the gate a while: a thousand 29ths of February (a leap day
/// every four years, four thousand years of calendar) in a time zone.
fn expensive_preview(id: &str) -> proto::PreviewScheduleRequest {
    proto::PreviewScheduleRequest {
        namespace: "shop-a".into(),
        target: Some(proto::preview_schedule_request::Target::Id(id.into())),
        count: 1000,
        from_time: None,
    }
}

/// Pins (issue 29): while `reader` (a principal on shop-*) keeps 16 expensive
/// previews in flight, `billing` (a producer on another namespace) still upserts,
/// and is not queued behind them: fewer than half of the previews in flight when
/// its call was sent are answered before it is. With one gate for everyone, its
/// upsert waited for every preview queued ahead of it to start, so nearly all of
/// them were answered first.
#[tokio::test]
async fn one_principals_preview_flood_does_not_queue_anothers_upsert() {
    let dir = tempfile::tempdir().expect("tempdir");
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.auth_file = Some(write_auth_file(dir.path()));
    let service = Service::start_with(config).await;
    let mut producer = service.client().await;
    let leap = cron("leap", "0 0 29 2 *", "America/New_York");
    producer
        .upsert_schedule(with_token(
            proto::UpsertScheduleRequest {
                namespace: "shop-a".into(),
                schedule: Some(leap),
            },
            Some("t-producer"),
        ))
        .await
        .expect("upsert the previewed schedule");

    let answered = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut flood = Vec::new();
    for _ in 0..FLOODERS {
        let mut reader = service.client().await;
        let (answered, stop) = (answered.clone(), stop.clone());
        flood.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let preview = with_token(expensive_preview("leap"), Some("t-reader"));
                reader.preview_schedule(preview).await.expect("preview");
                answered.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    // The flood is under way: previews are being answered.
    let patience = Patience::new("the flood's first previews");
    while answered.load(Ordering::Relaxed) < 2 {
        patience.wait().await;
    }

    let mut billing = service.client().await;
    for n in 0..3 {
        let before = answered.load(Ordering::Relaxed);
        let upsert = with_token(
            proto::UpsertScheduleRequest {
                namespace: "billing".into(),
                schedule: Some(cron(&format!("nightly-{n}"), "0 3 * * *", "Europe/Paris")),
            },
            Some("t-billing"),
        );
        let done = within_patience("billing's upsert", billing.upsert_schedule(upsert)).await;
        let during = answered.load(Ordering::Relaxed) - before;
        let status = done.err();
        assert!(
            status
                .as_ref()
                .is_none_or(|s| s.code() != Code::ResourceExhausted),
            "{status:?}"
        );
        assert!(status.is_none(), "upserted: {status:?}");
        assert!(
            during < (FLOODERS / 2) as u64,
            "billing's upsert #{n} waited for {during} of reader's previews"
        );
    }
    stop.store(true, Ordering::Relaxed);
    for task in flood {
        within_patience("the flood to end", task)
            .await
            .expect("flooder");
    }
}
