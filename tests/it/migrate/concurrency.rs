//! Migrate at scale and under contention: 20,000 schedules in bounded batches while
//! the service serves, resumes racing a repair, and Migrates that run twice at once,
//! are interrupted, or die with their service.

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Duration,
};

use tonic::{transport::Channel, Code};

use super::{checks::*, fixtures::*};
use crate::common::*;

/// Claims and upserts against `ns` until `stop`: each iteration creates a schedule,
/// makes it due and claims. Returns (iterations, claimed); panics on any error.
async fn workload(
    service_endpoint: String,
    redis_url: String,
    ns: &'static str,
    stop: Arc<AtomicBool>,
) -> (u64, u64) {
    let channel = Channel::from_shared(service_endpoint)
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    let mut c = proto::queue_service_client::QueueServiceClient::new(channel);
    let mut conn = connect(&redis_url).await;
    let (mut rounds, mut claimed) = (0u64, 0u64);
    while !stop.load(Ordering::Relaxed) {
        let id = format!("w{rounds}");
        try_upsert(&mut c, ns, every(&id, 3600))
            .await
            .unwrap_or_else(|e| panic!("upsert in {ns} during Migrate: {e:?}"));
        let now = redis_now(&mut conn).await;
        force_due(&mut conn, ns, &id, now - 5).await;
        if try_claim(&mut c, ns, 0)
            .await
            .unwrap_or_else(|e| panic!("claim in {ns} during Migrate: {e:?}"))
            .is_some()
        {
            claimed += 1;
        }
        rounds += 1;
    }
    (rounds, claimed)
}

/// Migrates `ns` in batches of 500 while `workload` runs against `served`; returns
/// Migrate's DONE and the workload's (rounds, claimed).
async fn migrate_while_serving(
    service: &Service,
    redis: &Redis,
    admin: &mut Admin,
    ns: &str,
    served: &'static str,
) -> (proto::MigrateProgress, u64, u64) {
    let stop = Arc::new(AtomicBool::new(false));
    let worker = tokio::spawn(workload(
        service.endpoint(),
        redis.url(),
        served,
        stop.clone(),
    ));
    let done = migrate_done(
        admin,
        proto::MigrateRequest {
            batch_size: Some(500),
            ..migrate_req(ns)
        },
    )
    .await;
    stop.store(true, Ordering::Relaxed);
    let (rounds, claimed) = worker.await.expect("worker");
    (done, rounds, claimed)
}

/// Pins: 20,000 schedules are upgraded, and repaired, in many bounded batches while
/// the service keeps serving calls (in another namespace, and in the same one).
#[tokio::test]
async fn twenty_thousand_schedules_migrate_in_short_batches_while_serving() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut a = admin(&service).await;
    let mut conn = redis.conn().await;
    let tmpl = template(&mut c, &mut conn).await;
    let n = 20_000;
    assert_eq!(
        build(&mut conn, &tmpl, "big", n, Built::PreIndex, None).await,
        n
    );
    // The current-layout one: every 10th paused, then the index is lost.
    let live_active = build(&mut conn, &tmpl, "live", n, Built::Current, Some(10)).await;
    let _: () = query(&mut conn, cmd("DEL").arg("dueq:{live}:due")).await;
    assert!(status(&mut a, "live").await.index_damaged);
    assert!(status(&mut a, "big").await.needs_migrate);
    upsert(&mut c, "other", every("seed", 3600)).await;

    // 1. Upgrade "big" while another namespace is served.
    let (big, rounds, claimed) =
        migrate_while_serving(&service, &redis, &mut a, "big", "other").await;
    assert!(
        rounds > 0 && claimed == rounds,
        "other namespace: {claimed}/{rounds} claimed"
    );
    assert_eq!((big.from_schema, big.to_schema), (1, 3));
    assert_eq!(big.indexed, n as u64);
    assert_eq!(big.scanned, n as u64);
    assert!(big.problems.is_empty());
    // Bounded script calls: many batches, not one long one.
    assert!(
        big.batches >= 2 * (n as u64 / 500),
        "batches {}",
        big.batches
    );
    assert!(big.longest_batch.is_some(), "{big:?}");
    assert_eq!(zcard(&mut conn, "dueq:{big}:due").await, n as u64);
    assert_eq!(assert_index_consistent(&mut conn, "big").await, n);

    // 2. Repair "live" while the same namespace is served.
    let (live, rounds, claimed) =
        migrate_while_serving(&service, &redis, &mut a, "live", "live").await;
    assert!(rounds > 0, "no work ran during the repair");
    assert!(live.indexed >= live_active as u64, "{live:?}");
    assert_eq!((live.from_schema, live.to_schema), (3, 3));
    let active = assert_index_consistent(&mut conn, "live").await;
    assert_eq!(
        active,
        live_active + rounds as usize,
        "the 20k plus one per workload round"
    );
    let st = status(&mut a, "live").await;
    assert!(!st.index_damaged, "{st:?}");
    assert_eq!(st.expected_index_size, st.index_size);
    eprintln!(
        "20k pre-index upgrade: {} batches of 500; 20k repair under load: {} batches, \
         concurrent work in live: {claimed}/{rounds} claimed",
        big.batches, live.batches,
    );
}

/// Resumes paused schedules of a namespace under repair; a Migrate that decided
/// "paused: not indexed" from a stale read must not drop the resumed one's entry.
#[tokio::test]
async fn schedules_resumed_during_a_repair_stay_indexed() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut a = admin(&service).await;
    let mut conn = redis.conn().await;
    let tmpl = template(&mut c, &mut conn).await;
    let n = 20_000;
    build(&mut conn, &tmpl, "live", n, Built::Current, Some(4)).await;
    let paused: Vec<String> = (0..n)
        .filter(|i| i % 4 == 0)
        .map(|i| format!("s{i:05}"))
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let resumer = {
        let stop = stop.clone();
        let mut c = service.client().await;
        tokio::spawn(async move {
            let mut resumed = 0;
            for id in paused {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                c.resume_schedule(proto::ResumeScheduleRequest {
                    namespace: "live".into(),
                    id,
                })
                .await
                .expect("resume during Migrate");
                resumed += 1;
            }
            resumed
        })
    };
    let done = migrate_done(
        &mut a,
        proto::MigrateRequest {
            batch_size: Some(500),
            ..migrate_req("live")
        },
    )
    .await;
    stop.store(true, Ordering::Relaxed);
    let resumed = resumer.await.expect("resumer");
    eprintln!("resumed {resumed} schedules during the repair; {done:?}");
    assert!(resumed > 0);
    assert_index_consistent(&mut conn, "live").await;
    let st = status(&mut a, "live").await;
    assert!(!st.index_damaged, "{st:?}");
}

/// A service on a runtime of its own, so that a crash can be simulated by dropping
/// every one of its tasks at once (`Service::kill` aborts only the server task; the
/// task running a Migrate is spawned separately and would live on).
struct Crashable {
    rt: Option<tokio::runtime::Runtime>,
    endpoint: String,
}

impl Crashable {
    async fn start(config: dueq::config::ServeConfig) -> Crashable {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
        rt.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            let _ = dueq::server::run(config, listener, std::future::pending()).await;
        });
        let patience = Patience::new("the crashable service to answer");
        loop {
            if let Ok(mut a) = Admin::connect(endpoint.clone()).await {
                let probe = proto::GetNamespaceStatusRequest {
                    namespace: "probe".into(),
                };
                if a.get_namespace_status(probe).await.is_ok() {
                    return Crashable {
                        rt: Some(rt),
                        endpoint,
                    };
                }
            }
            patience.wait().await;
        }
    }

    /// Every task of the service is dropped where it stands: nothing is released.
    fn crash(mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

impl Drop for Crashable {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// Starts a Migrate of `ns` in batches of `batch_size` and reads `messages` progress
/// messages, none of them DONE: it is under way, its stream still open.
async fn migrate_under_way(
    admin: &mut Admin,
    ns: &str,
    batch_size: u32,
    messages: usize,
) -> tonic::Streaming<proto::MigrateProgress> {
    let req = proto::MigrateRequest {
        batch_size: Some(batch_size),
        ..migrate_req(ns)
    };
    let mut stream = admin.migrate(req).await.expect("migrate").into_inner();
    for _ in 0..messages {
        let msg = stream
            .message()
            .await
            .expect("progress")
            .expect("a message");
        assert_ne!(msg.phase, DONE);
    }
    stream
}

/// Runs a Migrate once another one's lock is free: retries while it is refused as
/// ABORTED ("another Migrate"); returns its last message.
async fn migrate_when_free(admin: &mut Admin, ns: &str) -> proto::MigrateProgress {
    let patience = Patience::new(format!("the Migrate lock of {ns} to come free"));
    loop {
        match migrate(admin, migrate_req(ns)).await {
            Ok(msgs) => return msgs.last().cloned().expect("messages"),
            Err(s) if s.code() == Code::Aborted => patience.wait().await,
            Err(s) => panic!("Migrate of {ns}: {s:?}"),
        }
    }
}

/// Pins: two Migrates at once (one completes, the other is refused), one whose client
/// walked away (it frees its lock itself), and one whose service died (the lock
/// expires) all end with the namespace fully upgraded and every record untouched.
/// A service whose Migrate locks outlast every test, so a lock comes free because its
/// holder released it, not because it expired; its client, an admin client, and a
/// template record to build namespaces from.
async fn lasting_locks_service(redis: &Redis) -> (Service, Client, Admin, Vec<(String, Vec<u8>)>) {
    let mut conn = redis.conn().await;
    let mut config = config(&redis.url());
    config.migrate_lock_ttl = Duration::from_secs(3600);
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let a = admin(&service).await;
    let tmpl = template(&mut c, &mut conn).await;
    (service, c, a, tmpl)
}

/// Schedules in each namespace the lock tests migrate: 25 to 100 batches at the batch
/// sizes they use, so every interruption and race lands mid-walk. What these tests pin
/// is the lock and the version written last, not volume; the 20,000-schedule test
/// above keeps the volume.
const MIGRATED: usize = 5_000;

/// Two Migrates of one namespace at once: one completes (or both, in turn), an aborted
/// one says another Migrate is running, and the records end upgraded and untouched.
#[tokio::test]
async fn two_concurrent_migrates_end_correct() {
    let redis = Redis::start().await;
    let mut conn = redis.conn().await;
    let (service, _c, mut a, tmpl) = lasting_locks_service(&redis).await;
    build(&mut conn, &tmpl, "two", MIGRATED, Built::PreIndex, None).await;
    let before = records(&mut conn, "two").await;
    let mut a2 = admin(&service).await;
    let req = proto::MigrateRequest {
        batch_size: Some(200),
        ..migrate_req("two")
    };
    let (r1, r2) = tokio::join!(migrate(&mut a, req.clone()), migrate(&mut a2, req));
    let mut completed = 0;
    for r in [&r1, &r2] {
        match r {
            Ok(msgs) => {
                assert_eq!(msgs.last().expect("messages").phase, DONE);
                completed += 1;
            }
            Err(s) => {
                assert_eq!(s.code(), Code::Aborted, "{s:?}");
                assert!(s.message().contains("another Migrate"), "{}", s.message());
            }
        }
    }
    assert!(completed >= 1, "{r1:?} {r2:?}");
    eprintln!(
        "two concurrent Migrates: {completed} completed, {} aborted",
        2 - completed
    );
    assert_upgraded(&mut conn, &mut a, "two", MIGRATED).await;
    assert_eq!(records(&mut conn, "two").await, before, "records untouched");
}

/// The client drops the stream after a few messages: the namespace stays refused
/// (the version is written last), and the next Migrate finishes it.
#[tokio::test]
async fn an_interrupted_migrate_leaves_the_namespace_refused_and_the_next_finishes() {
    let redis = Redis::start().await;
    let mut conn = redis.conn().await;
    let (_service, mut c, mut a, tmpl) = lasting_locks_service(&redis).await;
    build(&mut conn, &tmpl, "cut", MIGRATED, Built::PreIndex, None).await;
    let before = records(&mut conn, "cut").await;
    drop(migrate_under_way(&mut a, "cut", 100, 3).await);
    let st = status(&mut a, "cut").await;
    assert!(st.needs_migrate, "the version is written last: {st:?}");
    let err = try_claim(&mut c, "cut", 0)
        .await
        .expect_err("still refused, never half-served");
    assert_eq!(err.code(), Code::FailedPrecondition);
    let done = migrate_when_free(&mut a, "cut").await;
    assert_eq!(done.phase, DONE);
    assert_eq!((done.from_schema, done.to_schema), (1, 3));
    assert_upgraded(&mut conn, &mut a, "cut", MIGRATED).await;
    assert_eq!(records(&mut conn, "cut").await, before);
}

/// The service dies mid-migration; a new one takes over once the lock's ttl ran out,
/// and the records end upgraded and untouched.
#[tokio::test]
async fn a_crashed_migrate_is_finished_by_the_next_after_its_lock_expires() {
    let redis = Redis::start().await;
    let mut conn = redis.conn().await;
    let (_service, _c, mut a, tmpl) = lasting_locks_service(&redis).await;
    build(&mut conn, &tmpl, "crash", MIGRATED, Built::PreIndex, None).await;
    let before = records(&mut conn, "crash").await;
    let mut config = config(&redis.url());
    config.migrate_lock_ttl = Duration::from_secs(1);
    let doomed = Crashable::start(config.clone()).await;
    let mut da = admin_at(doomed.endpoint.clone()).await;
    let stream = migrate_under_way(&mut da, "crash", 50, 5).await;
    doomed.crash();
    drop(stream);
    let st = status(&mut a, "crash").await;
    assert!(st.needs_migrate, "{st:?}");
    let next = Service::start_with(config).await;
    let mut na = admin(&next).await;
    let done = migrate_when_free(&mut na, "crash").await;
    assert_eq!(done.phase, DONE);
    assert_eq!((done.from_schema, done.to_schema), (1, 3));
    assert_upgraded(&mut conn, &mut na, "crash", MIGRATED).await;
    assert_eq!(records(&mut conn, "crash").await, before);
}
