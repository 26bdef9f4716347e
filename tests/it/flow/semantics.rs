//! Flow control's rules one at a time (issue 32): a key at its limit is passed over,
//! never leased, and never blocks the queue; a concurrency slot is held from lease to
//! the one place each lease ends (ack, fail, cancel then ack or fail, release, the
//! Work stream's end, expiry) and freed there exactly once; a policy change counts at
//! the next claim; pausing is unchanged; waiters are woken when a slot frees; and the
//! same on Redis Cluster, with every flow key in the namespace's slot.

use dueq::config::RedisMode;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::common::*;
use proto::{work_request::Request as In, work_response::Response as Out};

const Q: &str = "q";

/// A Redis, a service on it, a client, and `policy` on queue "q".
async fn with_policy(policy: proto::QueuePolicy) -> (Redis, Service, Client) {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    set_policy(&mut c, Q, policy).await;
    (redis, service, c)
}

/// Enqueues one job of `key` (its concurrency key) named `name`.
async fn enqueue_keyed(c: &mut Client, name: &str, key: &str) -> String {
    let mut req = concurrency_job(Q, name, key);
    req.max_attempts = Some(10);
    enqueue(c, req).await.job_id
}

fn names(jobs: &[proto::ClaimedJob]) -> Vec<&str> {
    jobs.iter().map(|j| j.name.as_str()).collect()
}

/// Pins: a key at its limit with a deep backlog is passed over, and the job of
/// another key enqueued behind that backlog (and at a lower priority) is leased: a
/// saturated key never blocks the queue.
#[tokio::test]
async fn a_saturated_key_never_blocks_the_queue() {
    let (_redis, _service, mut c) = with_policy(per_key_max_running(1)).await;
    let mut backlog: Vec<_> = (0..500)
        .map(|i| {
            let mut r = concurrency_job(Q, &format!("a{i}"), "A");
            r.priority = 5;
            r
        })
        .collect();
    backlog.push(concurrency_job(Q, "b", "B"));
    backlog.push(job(Q, "plain"));
    enqueue_all(&mut c, backlog).await;

    let first = claim_many(&mut c, Q, 1).await;
    assert_eq!(names(&first), ["a0"]);
    let next = claim_many(&mut c, Q, 10).await;
    assert_eq!(
        names(&next),
        ["b", "plain"],
        "A is at its limit: B and the plain job go"
    );
    assert!(claim_many(&mut c, Q, 10).await.is_empty());
}

/// Pins: a job whose key is at its limit is never leased (not leased and handed
/// back): its attempts stay 0 and it stays PENDING however often workers ask.
#[tokio::test]
async fn a_job_over_its_limit_is_never_leased() {
    let (_redis, _service, mut c) = with_policy(per_key_max_running(1)).await;
    let first = enqueue_keyed(&mut c, "a1", "A").await;
    let second = enqueue_keyed(&mut c, "a2", "A").await;
    let held = claim_many(&mut c, Q, 1).await;
    assert_eq!(held[0].job_id, first);
    for _ in 0..5 {
        assert!(claim_many(&mut c, Q, 10).await.is_empty());
    }
    let waiting = get_job(&mut c, &second).await;
    assert_eq!(state(&waiting), proto::JobState::Pending);
    assert_eq!(waiting.attempts, 0);
    assert_eq!(waiting.concurrency_key, "A");

    ack_job(&mut c, &first, &held[0].lease_token)
        .await
        .expect("ack");
    let next = claim_many(&mut c, Q, 10).await;
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].job_id, second);
    assert_eq!(next[0].attempt, 1);
}

/// Pins: an expired lease frees its slot in the claim that re-queues its job: with
/// no ack, the next claim after the deadline leases one job of the key (the expired
/// one, first in its lane) and not two.
#[tokio::test]
async fn an_expired_lease_frees_its_slot_in_the_claim_that_requeues_it() {
    let (redis, _service, mut c) = with_policy(per_key_max_running(1)).await;
    let mut conn = redis.conn().await;
    let first = enqueue_keyed(&mut c, "a1", "A").await;
    enqueue_keyed(&mut c, "a2", "A").await;
    let held = claim_job(&mut c, &[Q], 0, Some(300)).await.expect("a1");
    assert_eq!(held.job_id, first);
    assert!(claim_many(&mut c, Q, 10).await.is_empty());

    wait_redis_past(&mut conn, ms(&held.lease_deadline)).await;
    let again = claim_many(&mut c, Q, 10).await;
    assert_eq!(
        names(&again),
        ["a1"],
        "the expired job, once: its slot, once"
    );
    assert_eq!(again[0].attempt, 2);
    assert!(claim_many(&mut c, Q, 10).await.is_empty());
}

/// How a test ends a lease: each of the ways a slot comes back.
#[derive(Debug, Clone, Copy)]
enum End {
    Ack,
    Fail,
    CancelThenAck,
    CancelThenFail,
    Release,
}

async fn cancel(c: &mut Client, id: &str) {
    c.cancel_job(proto::CancelJobRequest {
        namespace: "ns".into(),
        job_id: id.into(),
    })
    .await
    .expect("CancelJob");
}

async fn release(c: &mut Client, id: &str) -> Result<(), tonic::Status> {
    c.release_job(proto::ReleaseJobRequest {
        namespace: "ns".into(),
        job_id: id.into(),
        count_attempt: false,
        reason: "done with it".into(),
    })
    .await
    .map(|_| ())
}

/// Ends `job`'s lease by `end`; a second call of the same end is refused.
async fn end_lease(c: &mut Client, job: &proto::ClaimedJob, end: End, again: bool) -> bool {
    let (id, token) = (job.job_id.as_str(), job.lease_token.as_str());
    if matches!(end, End::CancelThenAck | End::CancelThenFail) && !again {
        cancel(c, id).await;
    }
    match end {
        End::Ack | End::CancelThenAck => ack_job(c, id, token).await.is_ok(),
        End::Fail | End::CancelThenFail => fail_job(c, id, token, "boom").await.is_ok(),
        End::Release => release(c, id).await.is_ok(),
    }
}

/// Pins: ack, fail (retried), CancelJob on an active job then ack or fail, and
/// ReleaseJob each free the job's slot exactly once: with a limit of 2 and both
/// slots held, ending one lease (and repeating the end, which is refused and frees
/// nothing more) lets exactly one more job of the key be leased.
#[tokio::test]
async fn each_way_a_lease_ends_frees_its_slot_exactly_once() {
    let (_redis, _service, mut c) = with_policy(per_key_max_running(2)).await;
    for i in 0..20 {
        let mut req = concurrency_job(Q, &format!("a{i}"), "A");
        req.max_attempts = Some(10);
        req.backoff = Some(proto::Backoff {
            kind: proto::BackoffKind::Fixed as i32,
            base: Some(dur(600_000)),
            cap: None,
            jitter: 0.0,
        });
        enqueue(&mut c, req).await;
    }
    let mut held = claim_many(&mut c, Q, 10).await;
    assert_eq!(held.len(), 2, "the limit: 2");
    for end in [
        End::Ack,
        End::Fail,
        End::CancelThenAck,
        End::CancelThenFail,
        End::Release,
    ] {
        let job = held.remove(0);
        assert!(end_lease(&mut c, &job, end, false).await, "{end:?}");
        assert!(
            !end_lease(&mut c, &job, end, true).await,
            "{end:?} twice is refused"
        );
        let more = claim_many(&mut c, Q, 10).await;
        assert_eq!(
            more.len(),
            1,
            "{end:?} freed exactly one slot: {:?}",
            names(&more)
        );
        held.extend(more);
    }
}

/// A Work stream of "ns" on "q" holding up to `capacity` jobs.
async fn open_stream(
    c: &mut Client,
    capacity: u32,
) -> (
    mpsc::Sender<proto::WorkRequest>,
    tonic::Streaming<proto::WorkResponse>,
) {
    let (tx, rx) = mpsc::channel(8);
    tx.send(work_request(In::Start(proto::WorkStart {
        namespace: "ns".into(),
        queues: vec![Q.into()],
        worker_id: "w".into(),
        lease: Some(dur(600_000)),
        capacity,
    })))
    .await
    .expect("start");
    let work = within_patience("opening a Work stream", c.work(ReceiverStream::new(rx)))
        .await
        .expect("Work")
        .into_inner();
    (tx, work)
}

/// The stream's next job, skipping ack answers (each must be OK).
async fn next_stream_job(work: &mut tonic::Streaming<proto::WorkResponse>) -> proto::ClaimedJob {
    loop {
        match next_work(work).await {
            Out::Job(job) => return job,
            Out::Ack(ack) => assert_eq!(ack.code, 0, "{ack:?}"),
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// Pins: a Work stream with room for more holds one job of a key limited to 1; the
/// ack it carries frees the slot and the key's next job arrives on the stream; and
/// a stream that ends gives its job's slot back (the job is claimable at once).
#[tokio::test]
async fn over_the_work_stream_acks_free_the_slot_and_the_next_job_arrives() {
    let (_redis, _service, mut c) = with_policy(per_key_max_running(1)).await;
    let ids: Vec<String> = {
        let mut ids = Vec::new();
        for i in 0..4 {
            ids.push(enqueue_keyed(&mut c, &format!("a{i}"), "A").await);
        }
        ids
    };
    let (tx, mut work) = open_stream(&mut c, 3).await;
    let first = next_stream_job(&mut work).await;
    assert_eq!(first.job_id, ids[0]);
    let waiting = get_job(&mut c, &ids[1]).await;
    assert_eq!(state(&waiting), proto::JobState::Pending);
    assert_eq!(waiting.attempts, 0);

    tx.send(work_request(In::Ack(proto::JobLease {
        job_id: first.job_id.clone(),
        lease_token: first.lease_token.clone(),
        result: vec![],
    })))
    .await
    .expect("send ack");
    let second = next_stream_job(&mut work).await;
    assert_eq!(second.job_id, ids[1]);
    tx.send(work_request(In::Ack(proto::JobLease {
        job_id: second.job_id.clone(),
        lease_token: second.lease_token.clone(),
        result: vec![],
    })))
    .await
    .expect("send ack");
    let third = next_stream_job(&mut work).await;
    assert_eq!(third.job_id, ids[2]);
    assert!(
        claim_many(&mut c, Q, 10).await.is_empty(),
        "the stream holds A's slot"
    );

    // The stream ends: its job goes back and the slot with it.
    drop(tx);
    drop(work);
    let patience = Patience::new("the ended stream's slot to come back");
    let got = loop {
        let got = claim_many(&mut c, Q, 10).await;
        if !got.is_empty() {
            break got;
        }
        patience.wait().await;
    };
    assert_eq!(
        names(&got),
        ["a2"],
        "one job: the released one, first in its lane"
    );
}

/// Pins: a policy change takes effect at the next claim: a key held at
/// per_key_max_running 1 (its next job already passed over) gets a second job
/// leased once the limit is raised to 2, with nothing acked in between.
#[tokio::test]
async fn raising_a_limit_takes_effect_at_the_next_claim() {
    let (_redis, _service, mut c) = with_policy(per_key_max_running(1)).await;
    for i in 0..3 {
        enqueue_keyed(&mut c, &format!("a{i}"), "A").await;
    }
    assert_eq!(names(&claim_many(&mut c, Q, 10).await), ["a0"]);
    assert!(claim_many(&mut c, Q, 10).await.is_empty(), "a1 passed over");

    set_policy(&mut c, Q, per_key_max_running(2)).await;
    assert_eq!(names(&claim_many(&mut c, Q, 10).await), ["a1"]);

    set_policy(&mut c, Q, proto::QueuePolicy::default()).await;
    assert_eq!(
        names(&claim_many(&mut c, Q, 10).await),
        ["a2"],
        "no policy: no limit"
    );
}

/// Pins: lowering a limit leases nothing more until the key is under the new one.
#[tokio::test]
async fn lowering_a_limit_takes_effect_at_the_next_claim() {
    let (_redis, _service, mut c) = with_policy(per_key_max_running(3)).await;
    for i in 0..5 {
        enqueue_keyed(&mut c, &format!("a{i}"), "A").await;
    }
    let held = claim_many(&mut c, Q, 2).await;
    assert_eq!(names(&held), ["a0", "a1"]);
    set_policy(&mut c, Q, per_key_max_running(1)).await;
    assert!(claim_many(&mut c, Q, 10).await.is_empty());
    ack_job(&mut c, &held[0].job_id, &held[0].lease_token)
        .await
        .expect("ack");
    assert!(
        claim_many(&mut c, Q, 10).await.is_empty(),
        "1 held, limit 1"
    );
    ack_job(&mut c, &held[1].job_id, &held[1].lease_token)
        .await
        .expect("ack");
    assert_eq!(names(&claim_many(&mut c, Q, 10).await), ["a2"]);
}

/// Pins: pausing a queue with a policy still stops its claims (the keys' jobs
/// included), and resuming hands them out under the policy.
#[tokio::test]
async fn pausing_still_works_with_a_policy() {
    let (_redis, _service, mut c) = with_policy(per_key_max_running(1)).await;
    for i in 0..2 {
        enqueue_keyed(&mut c, &format!("a{i}"), "A").await;
    }
    enqueue(&mut c, job(Q, "plain")).await;
    c.pause_queue(proto::PauseQueueRequest {
        namespace: "ns".into(),
        queue: Q.into(),
    })
    .await
    .expect("pause");
    assert!(claim_many(&mut c, Q, 10).await.is_empty(), "paused");
    c.resume_queue(proto::ResumeQueueRequest {
        namespace: "ns".into(),
        queue: Q.into(),
    })
    .await
    .expect("resume");
    assert_eq!(names(&claim_many(&mut c, Q, 10).await), ["a0", "plain"]);
}

/// Pins: a long-poll parked only on a key at its limit is woken by the ack that
/// frees the slot (no enqueue in between), on the same instance and through
/// another one.
#[tokio::test]
async fn a_long_poll_waiting_on_a_full_key_is_woken_by_the_ack_that_frees_it() {
    let (redis, service, mut c) = with_policy(per_key_max_running(1)).await;
    let other = Service::start(&redis.url()).await;
    let mut conn = redis.conn().await;
    for i in 0..4 {
        enqueue_keyed(&mut c, &format!("a{i}"), "A").await;
    }
    for acker in [&service, &other] {
        let held = claim_many(&mut c, Q, 10).await;
        assert_eq!(held.len(), 1);
        let before = script_calls(&mut conn).await;
        let mut waiter = c.clone();
        let poll =
            tokio::spawn(
                async move { claim_job(&mut waiter, &[Q], LONG_POLL_MS, Some(600_000)).await },
            );
        wait_parked(&mut conn, before, 1).await;
        let mut by = acker.client().await;
        ack_job(&mut by, &held[0].job_id, &held[0].lease_token)
            .await
            .expect("ack");
        let woken = within_patience("the parked long-poll", poll)
            .await
            .expect("poll task")
            .expect("the key's next job, within the wait");
        assert_ne!(woken.job_id, held[0].job_id);
        ack_job(&mut c, &woken.job_id, &woken.lease_token)
            .await
            .expect("ack");
    }
}

/// Pins: on Redis Cluster a key's limit holds as on one Redis (all of a namespace's
/// flow keys live in its slot, so one claim script sees them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_limit_holds_on_redis_cluster_with_every_flow_key_in_the_namespace_slot() {
    let cluster = Cluster::start().await;
    let mut config = config(&cluster.url());
    config.redis_mode = RedisMode::Cluster;
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let policy = proto::QueuePolicy {
        per_key_max_running: 1,
        fairness: proto::Fairness::RoundRobin as i32,
        ..Default::default()
    };
    set_policy(&mut c, Q, policy).await;
    for i in 0..3 {
        enqueue(&mut c, keyed_job(Q, &format!("a{i}"), "t1", "A", "")).await;
    }
    enqueue(&mut c, keyed_job(Q, "b0", "t2", "B", "")).await;
    let held = claim_many(&mut c, Q, 10).await;
    assert_eq!(names(&held), ["a0", "b0"]);
    assert!(claim_many(&mut c, Q, 10).await.is_empty());

    let master = cluster.master_of("dueq:{ns}:meta").await;
    let by_master = cluster.keys_by_master().await;
    let flow_keys: Vec<(u16, &String)> = by_master
        .iter()
        .flat_map(|(port, keys)| keys.iter().map(move |k| (*port, k)))
        .filter(|(_, k)| k.starts_with("dueq:{ns}:meta:f"))
        .collect();
    assert!(!flow_keys.is_empty(), "lanes and slots are stored");
    assert!(
        flow_keys.iter().all(|(port, _)| *port == master),
        "{flow_keys:?} not all on {master}"
    );

    ack_job(&mut c, &held[0].job_id, &held[0].lease_token)
        .await
        .expect("ack");
    assert_eq!(names(&claim_many(&mut c, Q, 10).await), ["a1"]);
}

/// Pins: a long-poll parked on a queue is woken by the enqueue of a job with flow
/// keys (which waits in its lane, not in a plain ready list), on the same instance
/// and through another one.
#[tokio::test]
async fn a_long_poll_is_woken_by_the_enqueue_of_a_keyed_job() {
    let (redis, service, _c) = with_policy(per_key_max_running(1)).await;
    let other = Service::start(&redis.url()).await;
    let mut conn = redis.conn().await;
    for (i, via) in [&service, &other].into_iter().enumerate() {
        let before = script_calls(&mut conn).await;
        let mut waiter = service.client().await;
        let poll =
            tokio::spawn(
                async move { claim_job(&mut waiter, &[Q], LONG_POLL_MS, Some(600_000)).await },
            );
        wait_parked(&mut conn, before, 1).await;
        let mut by = via.client().await;
        let id = enqueue(&mut by, keyed_job(Q, "k", "t", &format!("c{i}"), ""))
            .await
            .job_id;
        let woken = within_patience("the parked long-poll", poll)
            .await
            .expect("poll task")
            .expect("the enqueued job, within the wait");
        assert_eq!(woken.job_id, id);
    }
}

/// Pins: PurgeJobs of the pending jobs takes the jobs waiting in flow lanes too (not
/// only those in the plain ready lists), and leaves no lane behind.
#[tokio::test]
async fn purging_pending_jobs_takes_those_with_flow_keys() {
    let (redis, _service, mut c) = with_policy(per_key_max_running(1)).await;
    let mut conn = redis.conn().await;
    enqueue_all(
        &mut c,
        vec![
            concurrency_job(Q, "a0", "A"),
            keyed_job(Q, "t0", "t", "", ""),
            job(Q, "plain"),
        ],
    )
    .await;
    let mut purged = 0;
    loop {
        let r = c
            .purge_jobs(proto::PurgeJobsRequest {
                namespace: "ns".into(),
                queue: Q.into(),
                state: proto::JobState::Pending as i32,
                limit: 100,
                ..Default::default()
            })
            .await
            .expect("PurgeJobs")
            .into_inner();
        purged += r.purged;
        if !r.more {
            break;
        }
    }
    assert_eq!(purged, 3, "every pending job, keyed or not");
    assert!(claim_many(&mut c, Q, 10).await.is_empty());
    let left = flow_keys(&mut conn).await;
    assert!(left.is_empty(), "{left:?}");
}
