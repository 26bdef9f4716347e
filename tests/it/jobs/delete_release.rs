//! DeleteJob and ReleaseJob (issue 36): deleting a job in each state from every index
//! (listing, counts, dedup key, the job quota's count), an active job refused naming
//! ReleaseJob; releasing an active job without its token (the old token ABORTED on
//! ack, fail, extend and on a Work stream), attempt counted or not, its reason
//! recorded, dead at max_attempts; a release racing an ack across two instances; a
//! watcher hearing both; bad inputs.

use tonic::{Code, Status};

use crate::common::*;
use proto::{work_request::Request as In, work_response::Response as Out};

async fn delete(c: &mut Client, id: &str) -> Result<proto::Job, Status> {
    c.delete_job(proto::DeleteJobRequest {
        namespace: "ns".into(),
        job_id: id.into(),
    })
    .await
    .map(|r| r.into_inner().job.expect("the job"))
}

async fn release(
    c: &mut Client,
    id: &str,
    count_attempt: bool,
    reason: &str,
) -> Result<proto::Job, Status> {
    c.release_job(proto::ReleaseJobRequest {
        namespace: "ns".into(),
        job_id: id.into(),
        count_attempt,
        reason: reason.into(),
    })
    .await
    .map(|r| r.into_inner().job.expect("the job"))
}

async fn get(c: &mut Client, id: &str) -> Result<proto::Job, Status> {
    c.get_job(proto::GetJobRequest {
        namespace: "ns".into(),
        job_id: id.into(),
    })
    .await
    .map(|r| r.into_inner().job.expect("the job"))
}

/// Job `id` in queue `queue` holding dedup key `dk-<id>`.
fn deduped(queue: &str, id: &str) -> proto::EnqueueRequest {
    let mut req = job(queue, "deleted");
    req.job_id = id.into();
    req.dedup_key = format!("dk-{id}");
    req.dedup_ttl = Some(dur(3_600_000));
    req
}

/// Claims job `id` (the only claimable one of `queue`), with a lease no test outlasts.
async fn claim_only(c: &mut Client, queue: &str, id: &str) -> proto::ClaimedJob {
    let claimed = claim_job(c, &[queue], 0, Some(600_000))
        .await
        .expect("a claimable job");
    assert_eq!(claimed.job_id, id);
    claimed
}

/// Every key of namespace "ns" whose name holds `needle`.
async fn keys_naming(redis: &Redis, needle: &str) -> Vec<String> {
    let mut conn = redis.conn().await;
    let keys: Vec<String> = query(&mut conn, cmd("KEYS").arg("dueq:{ns}:*")).await;
    keys.into_iter().filter(|k| k.contains(needle)).collect()
}

/// Puts one job of queue "q" in each state a delete takes: pending, delayed, completed
/// (with a payload stored in its own key), dead and cancelled; each with a dedup key.
async fn one_of_each_state(c: &mut Client) {
    let mut completed = deduped("q", "del-completed");
    completed.payload = vec![7; 4096];
    enqueue(c, completed).await;
    let done = claim_only(c, "q", "del-completed").await;
    ack_job(c, &done.job_id, &done.lease_token)
        .await
        .expect("ack");
    enqueue(c, deduped("q", "del-dead")).await;
    let dead = claim_only(c, "q", "del-dead").await;
    c.fail_job(proto::FailJobRequest {
        namespace: "ns".into(),
        job_id: dead.job_id,
        lease_token: dead.lease_token,
        error: "boom".into(),
        non_retryable: true,
        ..Default::default()
    })
    .await
    .expect("fail");
    enqueue(c, deduped("q", "del-cancelled")).await;
    c.cancel_job(proto::CancelJobRequest {
        namespace: "ns".into(),
        job_id: "del-cancelled".into(),
    })
    .await
    .expect("cancel");
    let mut delayed = deduped("q", "del-delayed");
    delayed.when = Some(proto::enqueue_request::When::Delay(dur(3_600_000)));
    enqueue(c, delayed).await;
    enqueue(c, deduped("q", "del-pending")).await;
}

const STATES: [(&str, proto::JobState); 5] = [
    ("del-pending", proto::JobState::Pending),
    ("del-delayed", proto::JobState::Delayed),
    ("del-completed", proto::JobState::Completed),
    ("del-dead", proto::JobState::Dead),
    ("del-cancelled", proto::JobState::Cancelled),
];

/// Pins: DeleteJob removes a pending, delayed, completed, dead or cancelled job from
/// every index and listing: GetJob and ListJobs no longer see it, ListQueues' counts
/// drop it, no key names it or its dedup key, the job quota's count (meta `stored`)
/// gives it back; the reply is the job as it was.
#[tokio::test]
async fn delete_removes_a_job_in_each_state_from_every_index() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    one_of_each_state(&mut c).await;
    let before = listed_queue(&mut c, "q").await;
    assert_eq!((before.pending, before.delayed, before.dead), (1, 1, 1));

    for (id, was) in STATES {
        let deleted = delete(&mut c, id).await.expect("delete");
        assert_eq!((deleted.job_id.as_str(), state(&deleted)), (id, was));
        let gone = get(&mut c, id).await.expect_err("deleted");
        assert_eq!(gone.code(), Code::NotFound, "{gone:?}");
        assert!(keys_naming(&redis, id).await.is_empty(), "{id}");
        let again = delete(&mut c, id).await.expect_err("already deleted");
        assert_eq!(again.code(), Code::NotFound, "{again:?}");
    }
    assert!(list_all_jobs(&mut c, "ns", "q", 100).await.is_empty());
    let after = listed_queue(&mut c, "q").await;
    assert_eq!(
        (after.pending, after.delayed, after.active, after.dead),
        (0, 0, 0, 0)
    );
    assert!(after.oldest_pending_age.is_none(), "{after:?}");
    let mut conn = redis.conn().await;
    let finished: i64 = query(&mut conn, cmd("ZCARD").arg("dueq:{ns}:jdone")).await;
    assert_eq!(finished, 0, "no finished-set entry is left");
    let stored: i64 = query(&mut conn, cmd("HGET").arg("dueq:{ns}:meta").arg("stored")).await;
    assert_eq!(stored, 0, "the job quota counts no deleted job");
    // The deleted pending job's ready entry is dropped by the claim that meets it.
    assert!(claim_job(&mut c, &["q"], 0, None).await.is_none());
}

/// Pins: after DeleteJob the job id and the dedup key are free at once: an Enqueue
/// with either creates a new job (not DUPLICATE), which is claimed as itself.
#[tokio::test]
async fn a_deleted_jobs_id_and_dedup_key_are_free_again() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    one_of_each_state(&mut c).await;
    for (id, _) in STATES {
        let mut same_key = deduped("other", &format!("{id}-2"));
        same_key.dedup_key = format!("dk-{id}");
        let held = enqueue(&mut c, same_key.clone()).await;
        assert_eq!(
            held.outcome,
            proto::EnqueueOutcome::Duplicate as i32,
            "{id}"
        );
        assert_eq!(held.job_id, id, "{id} holds its key");
        delete(&mut c, id).await.expect("delete");
        let fresh = enqueue(&mut c, same_key).await;
        assert_eq!(fresh.outcome, proto::EnqueueOutcome::Created as i32, "{id}");
        assert_eq!(fresh.job_id, format!("{id}-2"));
        let mut same_id = job("q", "reborn");
        same_id.job_id = id.into();
        let reborn = enqueue(&mut c, same_id).await;
        assert_eq!(
            reborn.outcome,
            proto::EnqueueOutcome::Created as i32,
            "{id}"
        );
    }
    // The reborn jobs are claimed as themselves, in enqueue order; the old ready
    // entry of del-pending is dropped on the way.
    let mut claimed = Vec::new();
    while let Some(job) = claim_job(&mut c, &["q"], 0, None).await {
        assert_eq!((job.name.as_str(), job.attempt), ("reborn", 1));
        claimed.push(job.job_id);
    }
    let ids: Vec<&str> = STATES.iter().map(|(id, _)| *id).collect();
    assert_eq!(claimed, ids);
}

/// Pins: DeleteJob of an active job is FAILED_PRECONDITION naming ReleaseJob and
/// writes nothing (the worker still acks it); an unknown job is NOT_FOUND; an empty
/// job_id is INVALID_ARGUMENT naming it, for both RPCs.
#[tokio::test]
async fn deleting_an_active_job_is_refused_naming_release_job() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    enqueue(&mut c, deduped("q", "busy")).await;
    let claimed = claim_only(&mut c, "q", "busy").await;
    let refused = delete(&mut c, "busy").await.expect_err("active");
    assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
    for needle in ["active", "ReleaseJob", "\"busy\""] {
        assert!(
            refused.message().contains(needle),
            "{refused:?} lacks {needle}"
        );
    }
    assert_eq!(
        state(&get(&mut c, "busy").await.expect("kept")),
        proto::JobState::Active
    );
    ack_job(&mut c, "busy", &claimed.lease_token)
        .await
        .expect("the lease still holds");

    let unknown = delete(&mut c, "nope").await.expect_err("unknown");
    assert_eq!(unknown.code(), Code::NotFound, "{unknown:?}");
    assert!(unknown.message().contains("nope"), "{unknown:?}");
    let unknown = release(&mut c, "nope", false, "")
        .await
        .expect_err("unknown");
    assert_eq!(unknown.code(), Code::NotFound, "{unknown:?}");

    let empty = delete(&mut c, "").await.expect_err("no id");
    assert_eq!(empty.code(), Code::InvalidArgument, "{empty:?}");
    assert!(empty.message().starts_with("job_id"), "{empty:?}");
    let empty = release(&mut c, "", false, "").await.expect_err("no id");
    assert_eq!(empty.code(), Code::InvalidArgument, "{empty:?}");
    assert!(empty.message().starts_with("job_id"), "{empty:?}");
}

/// Pins: ReleaseJob ends an active job's lease: the reply and GetJob say PENDING, the
/// reason is in its error history, its attempt given back; the old token's ack, fail
/// and extend are ABORTED and change nothing; a waiting claim is handed the job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_released_job_is_pending_again_and_the_old_token_is_aborted() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    enqueue(&mut c, deduped("q", "stuck")).await;
    let held = claim_only(&mut c, "q", "stuck").await;
    assert_eq!(listed_queue(&mut c, "q").await.active, 1);
    // A worker waiting on the queue, woken by the release.
    let mut waiting = service.client().await;
    let waiter =
        tokio::spawn(
            async move { claim_job(&mut waiting, &["q"], LONG_POLL_MS, Some(600_000)).await },
        );

    let released = release(&mut c, "stuck", false, "stuck on host-3")
        .await
        .expect("release");
    assert_eq!(state(&released), proto::JobState::Pending);
    assert_eq!(released.attempts, 0, "the attempt is given back");
    assert!(released.lease_deadline.is_none());
    let last = released.errors.last().expect("an error entry");
    assert_eq!(
        (last.message.as_str(), last.attempt),
        ("stuck on host-3", 1)
    );

    let again = within_patience("the waiting claim", waiter)
        .await
        .expect("the waiter")
        .expect("the released job is handed to the waiting worker");
    assert_eq!((again.job_id.as_str(), again.attempt), ("stuck", 1));
    assert_ne!(again.lease_token, held.lease_token);

    let ack = ack_job(&mut c, "stuck", &held.lease_token)
        .await
        .expect_err("old token");
    assert_eq!(ack.code(), Code::Aborted, "{ack:?}");
    let fail = fail_job(&mut c, "stuck", &held.lease_token, "late")
        .await
        .expect_err("old");
    assert_eq!(fail.code(), Code::Aborted, "{fail:?}");
    let extend = c
        .extend_lease(proto::ExtendLeaseRequest {
            namespace: "ns".into(),
            job_id: "stuck".into(),
            lease_token: held.lease_token.clone(),
            lease: Some(dur(600_000)),
            progress: None,
        })
        .await
        .expect_err("old token");
    assert_eq!(extend.code(), Code::Aborted, "{extend:?}");
    let now = get(&mut c, "stuck").await.expect("the job");
    assert_eq!((state(&now), now.attempts), (proto::JobState::Active, 1));
    ack_job(&mut c, "stuck", &again.lease_token)
        .await
        .expect("the new lease acks");
}

/// Pins: with count_attempt the released attempt counts (and the default reason is
/// recorded); a job that has used max_attempts then goes DEAD (dead count, RetryJob
/// takes it), while without count_attempt it is pending again.
#[tokio::test]
async fn a_counted_release_spends_an_attempt_and_the_last_one_makes_it_dead() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut two = deduped("q", "twice");
    two.max_attempts = Some(2);
    enqueue(&mut c, two).await;
    claim_only(&mut c, "q", "twice").await;
    let first = release(&mut c, "twice", true, "").await.expect("release");
    assert_eq!(
        (state(&first), first.attempts),
        (proto::JobState::Pending, 1)
    );
    let reason = &first.errors.last().expect("an entry").message;
    assert_eq!(reason, "released by an operator");
    // Uncounted at the last attempt: pending again, attempts unchanged.
    claim_only(&mut c, "q", "twice").await;
    let kept = release(&mut c, "twice", false, "").await.expect("release");
    assert_eq!((state(&kept), kept.attempts), (proto::JobState::Pending, 1));
    let last = claim_only(&mut c, "q", "twice").await;
    assert_eq!(last.attempt, 2);
    let dead = release(&mut c, "twice", true, "hung")
        .await
        .expect("release");
    assert_eq!((state(&dead), dead.attempts), (proto::JobState::Dead, 2));
    assert!(dead.finish_time.is_some());
    let info = listed_queue(&mut c, "q").await;
    assert_eq!((info.pending, info.active, info.dead), (0, 0, 1));
    assert!(claim_job(&mut c, &["q"], 0, None).await.is_none());
    c.retry_job(proto::RetryJobRequest {
        namespace: "ns".into(),
        job_id: "twice".into(),
    })
    .await
    .expect("a dead job is retried");
}

/// Pins: ReleaseJob of a job that is not active is FAILED_PRECONDITION naming its
/// state and writes nothing; a cancel-requested job released ends CANCELLED; an
/// oversized reason is INVALID_ARGUMENT naming `reason` and writes nothing.
#[tokio::test]
async fn only_an_active_job_is_released_and_the_reason_is_bounded() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    enqueue(&mut c, deduped("q", "idle")).await;
    let refused = release(&mut c, "idle", false, "")
        .await
        .expect_err("pending");
    assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
    assert!(refused.message().contains("pending"), "{refused:?}");
    assert!(refused.message().contains("ReleaseJob"), "{refused:?}");
    let kept = get(&mut c, "idle").await.expect("the job");
    assert!(kept.errors.is_empty());

    claim_only(&mut c, "q", "idle").await;
    let long = "x".repeat(4097);
    let bad = release(&mut c, "idle", false, &long)
        .await
        .expect_err("too long");
    assert_eq!(bad.code(), Code::InvalidArgument, "{bad:?}");
    assert!(bad.message().starts_with("reason"), "{bad:?}");
    let kept = get(&mut c, "idle").await.expect("the job");
    assert_eq!(state(&kept), proto::JobState::Active, "nothing was written");
    assert!(kept.errors.is_empty());
    release(&mut c, "idle", false, &"x".repeat(4096))
        .await
        .expect("4096 bytes are fine");

    claim_only(&mut c, "q", "idle").await;
    c.cancel_job(proto::CancelJobRequest {
        namespace: "ns".into(),
        job_id: "idle".into(),
    })
    .await
    .expect("cancel asked");
    let cancelled = release(&mut c, "idle", false, "").await.expect("release");
    assert_eq!(state(&cancelled), proto::JobState::Cancelled);
    assert!(cancelled.finish_time.is_some());
    let done = release(&mut c, "idle", false, "")
        .await
        .expect_err("finished");
    assert_eq!(done.code(), Code::FailedPrecondition, "{done:?}");
    assert!(claim_job(&mut c, &["q"], 0, None).await.is_none());
}

async fn watched_next(
    stream: &mut tonic::Streaming<proto::WatchJobResponse>,
) -> Result<Option<proto::WatchJobResponse>, Status> {
    within_patience("the watcher's next message", stream.message()).await
}

/// Pins: a Work stream holding a released job gets ABORTED on its ack of the old
/// lease, which frees the slot: the stream is handed the job again under a new one.
#[tokio::test]
async fn a_work_stream_holding_a_released_job_is_aborted_on_its_ack() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    enqueue(&mut c, deduped("q", "streamed")).await;
    let (tx, mut work) = open_work(&mut c, "q").await;
    let Out::Job(held) = next_work(&mut work).await else {
        panic!("expected the job")
    };
    release(&mut c, "streamed", false, "")
        .await
        .expect("release");
    tx.send(work_request(In::Ack(proto::JobLease {
        job_id: "streamed".into(),
        lease_token: held.lease_token.clone(),
        result: Vec::new(),
    })))
    .await
    .expect("ack");
    match next_work(&mut work).await {
        Out::Ack(result) => {
            assert_eq!(result.job_id, "streamed");
            assert_eq!(result.code, Code::Aborted as i32, "{result:?}");
        }
        other => panic!("expected the ack's result, got {other:?}"),
    }
    match next_work(&mut work).await {
        Out::Job(again) => {
            assert_eq!(again.job_id, "streamed");
            assert_ne!(again.lease_token, held.lease_token);
        }
        other => panic!("expected the job again, got {other:?}"),
    }
}

/// Pins: a release on one instance racing the worker's ack on another has exactly
/// one winner: the ack completes the job and the release is FAILED_PRECONDITION, or
/// the release makes it pending and the ack is ABORTED; never both, never neither.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_racing_an_ack_on_two_instances_has_one_winner() {
    let redis = Redis::start().await;
    let a = Service::start(&redis.url()).await;
    let b = Service::start(&redis.url()).await;
    let mut worker = a.client().await;
    let mut operator = b.client().await;
    let (mut acks, mut releases) = (0, 0);
    for round in 0..30 {
        let id = format!("race-{round}");
        enqueue(&mut worker, deduped("q", &id)).await;
        let held = claim_only(&mut worker, "q", &id).await;
        let (acked, released) = tokio::join!(
            ack_job(&mut worker, &id, &held.lease_token),
            release(&mut operator, &id, false, "")
        );
        let now = get(&mut worker, &id).await.expect("the job");
        match (acked, released) {
            (Ok(_), Err(refused)) => {
                assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
                assert_eq!(state(&now), proto::JobState::Completed);
                acks += 1;
            }
            (Err(aborted), Ok(job)) => {
                assert_eq!(aborted.code(), Code::Aborted, "{aborted:?}");
                assert_eq!(state(&job), proto::JobState::Pending);
                assert_eq!(state(&now), proto::JobState::Pending);
                releases += 1;
                delete(&mut operator, &id).await.expect("tidy up");
            }
            other => panic!("round {round}: not exactly one winner: {other:?}"),
        }
    }
    assert_eq!(acks + releases, 30);
    let info = listed_queue(&mut worker, "q").await;
    assert_eq!((info.pending, info.active), (0, 0), "{info:?}");
}

/// Pins: a watcher sees the release (the job PENDING again) and a delete ends its
/// stream with NOT_FOUND.
#[tokio::test]
async fn a_watcher_sees_the_release_and_a_delete_ends_its_stream() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    enqueue(&mut c, deduped("q", "watched")).await;
    claim_only(&mut c, "q", "watched").await;
    let mut stream = c
        .watch_job(proto::WatchJobRequest {
            namespace: "ns".into(),
            job_id: "watched".into(),
            after_version: 0,
            view: 0,
        })
        .await
        .expect("WatchJob")
        .into_inner();
    let first = watched_next(&mut stream)
        .await
        .expect("healthy")
        .expect("open");
    assert_eq!(
        state(first.job.as_ref().expect("job")),
        proto::JobState::Active
    );
    let released = release(&mut c, "watched", false, "")
        .await
        .expect("release");
    loop {
        let job = watched_next(&mut stream)
            .await
            .expect("healthy")
            .expect("open")
            .job
            .expect("job");
        if job.version >= released.version {
            assert_eq!(state(&job), proto::JobState::Pending);
            break;
        }
    }
    delete(&mut c, "watched").await.expect("delete");
    let end = loop {
        match watched_next(&mut stream).await {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("the stream closed without NOT_FOUND"),
            Err(status) => break status,
        }
    };
    assert_eq!(end.code(), Code::NotFound, "{end:?}");
}

/// Pins: docs/jobs.md's ReleaseJob and DeleteJob example runs, as one script, against
/// the service: the release makes the job pending with the reason recorded, the
/// delete takes it away, and its dedup key then creates a new job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs grpcurl"]
async fn the_jobs_doc_example_runs() {
    crate::common::tools::require("grpcurl");
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let text = crate::doc_examples::run_fenced("release-delete-example", &service);
    for shown in [
        "\"state\": \"JOB_STATE_PENDING\"",
        "\"message\": \"w-stuck hung\"",
    ] {
        assert!(text.contains(shown), "{shown} is not in:\n{text}");
    }
    assert_eq!(text.matches("ENQUEUE_OUTCOME_CREATED").count(), 2, "{text}");
    let mut c = service.client().await;
    let gone = c
        .get_job(proto::GetJobRequest {
            namespace: "shop".into(),
            job_id: "report-9".into(),
        })
        .await
        .expect_err("deleted");
    assert_eq!(gone.code(), Code::NotFound);
    c.get_job(proto::GetJobRequest {
        namespace: "shop".into(),
        job_id: "report-10".into(),
    })
    .await
    .expect("the new job holds the key");
}

/// Pins: at maxmemory DeleteJob and ReleaseJob still run (they drop or give back
/// work: `allow-oom`), so an operator can take back and clear jobs in a full Redis,
/// while a claim is refused.
#[tokio::test]
async fn delete_and_release_run_when_redis_is_full() {
    let redis = Redis::start().await;
    let service = Service::start_with(config_without_background_work(&redis.url())).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    enqueue(&mut c, deduped("q", "held")).await;
    claim_only(&mut c, "q", "held").await;
    enqueue(&mut c, deduped("q", "waste")).await;
    crate::edge::faults::full::fill_redis(&mut conn).await;
    let refused = c
        .claim_job(claim_req(&["q"], 0, None))
        .await
        .expect_err("a claim at maxmemory is refused");
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");

    let released = release(&mut c, "held", false, "")
        .await
        .expect("ReleaseJob when full");
    assert_eq!(state(&released), proto::JobState::Pending);
    delete(&mut c, "waste").await.expect("DeleteJob when full");
    let info = listed_queue(&mut c, "q").await;
    assert_eq!((info.pending, info.active), (1, 0), "{info:?}");
}
