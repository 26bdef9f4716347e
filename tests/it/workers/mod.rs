//! The worker sessions (issue 33): every replica publishes its open Work streams and
//! waiting long-polls, so ListWorkers on any replica lists them all; a closed one
//! leaves the list, a dead replica's go once stale; the leases ending soonest come
//! with them, soonest first.

use std::time::Duration;

use tonic::Code;

use crate::common::*;

/// A service that publishes its sessions every 50 ms (stale after 150 ms).
async fn replica(redis: &Redis) -> Service {
    let mut config = config(&redis.url());
    config.worker_refresh_interval = Duration::from_millis(50);
    Service::start_with(config).await
}

async fn list(client: &mut Client) -> proto::ListWorkersResponse {
    client
        .list_workers(proto::ListWorkersRequest {
            namespace: "ns".into(),
            ..Default::default()
        })
        .await
        .expect("ListWorkers")
        .into_inner()
}

/// Polls ListWorkers until `holds` is true of its answer.
async fn until(
    client: &mut Client,
    what: &str,
    holds: impl Fn(&proto::ListWorkersResponse) -> bool,
) -> proto::ListWorkersResponse {
    let patience = Patience::new(what);
    loop {
        let answer = list(client).await;
        if holds(&answer) {
            return answer;
        }
        patience.wait().await;
    }
}

fn of_kind(answer: &proto::ListWorkersResponse, kind: proto::WorkerKind) -> Vec<proto::WorkerInfo> {
    answer
        .workers
        .iter()
        .filter(|w| w.kind == kind as i32)
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_streams_and_long_polls_show_on_another_replica_until_they_end() {
    let redis = Redis::start().await;
    let a = replica(&redis).await;
    let b = replica(&redis).await;
    let mut on_a = a.client().await;
    let mut on_b = b.client().await;
    let (work_tx, mut work) = open_work(&mut on_a, "q").await;
    let mut poller = on_a.clone();
    let poll =
        tokio::spawn(async move { claim_job(&mut poller, &["p"], LONG_POLL_MS, None).await });
    let mut schedules = on_a.clone();
    let due = tokio::spawn(async move { claim(&mut schedules, "ns", LONG_POLL_MS).await });
    let answer = until(&mut on_b, "A's three sessions listed by B", |answer| {
        answer.workers.len() == 3
    })
    .await;
    let streams = of_kind(&answer, proto::WorkerKind::Work);
    assert_eq!(streams.len(), 1, "{answer:?}");
    let stream = &streams[0];
    assert_eq!(
        (
            stream.worker_id.as_str(),
            stream.queues.clone(),
            stream.capacity,
            stream.in_flight,
            stream.replica.clone()
        ),
        ("w", vec!["q".to_owned()], 1, 0, a.addr.to_string())
    );
    assert!(stream.connected_since.is_some() && stream.last_seen.is_some());
    let polls = of_kind(&answer, proto::WorkerKind::ClaimJob);
    assert_eq!(polls.len(), 1, "{answer:?}");
    assert_eq!(
        (polls[0].worker_id.as_str(), polls[0].queues.clone()),
        ("test-worker", vec!["p".to_owned()])
    );
    assert_eq!(
        of_kind(&answer, proto::WorkerKind::ClaimDueSchedule).len(),
        1,
        "{answer:?}"
    );
    // The stream's job shows as in flight.
    enqueue(&mut on_a, job("q", "held")).await;
    next_work(&mut work).await;
    until(&mut on_b, "the stream's job in flight", |answer| {
        of_kind(answer, proto::WorkerKind::Work)
            .first()
            .is_some_and(|w| w.in_flight == 1)
    })
    .await;
    // The long-poll is answered, the schedule claim is given up by its caller, the
    // stream closes: each leaves the list.
    enqueue(&mut on_a, job("p", "for the poll")).await;
    assert!(poll.await.expect("poll").is_some());
    due.abort();
    drop(work_tx);
    drop(work);
    until(&mut on_b, "every session gone", |answer| {
        answer.workers.is_empty()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_replicas_sessions_go_once_stale() {
    let redis = Redis::start().await;
    let a = replica(&redis).await;
    let b = replica(&redis).await;
    let mut on_a = a.client().await;
    let mut on_b = b.client().await;
    let (_work_tx, _work) = open_work(&mut on_a, "q").await;
    until(&mut on_b, "A's stream listed by B", |answer| {
        answer.workers.len() == 1
    })
    .await;
    a.kill();
    until(&mut on_b, "A's stream gone once stale", |answer| {
        answer.workers.is_empty()
    })
    .await;
    // Gone from Redis too, not just hidden.
    let mut conn = connect(&redis.url()).await;
    let left: u64 = cmd("HLEN")
        .arg("dueq:{ns}:meta:workers")
        .query_async(&mut conn)
        .await
        .expect("HLEN");
    assert_eq!(left, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiring_leases_come_soonest_first_with_their_workers() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut client = service.client().await;
    for (queue, lease_s, worker) in [("a", 300, "w300"), ("b", 100, "w100"), ("a", 200, "w200")] {
        let id = enqueue(&mut client, job(queue, "j")).await.job_id;
        let mut request = claim_req(&[queue], 0, Some(lease_s * 1000));
        request.worker_id = worker.into();
        let claimed = client
            .claim_job(request)
            .await
            .expect("claim")
            .into_inner()
            .jobs;
        assert_eq!(claimed.len(), 1);
        assert_eq!(claimed[0].job_id, id);
    }
    let leases = list(&mut client).await.expiring_leases;
    let seen: Vec<(&str, &str)> = leases
        .iter()
        .map(|l| (l.queue.as_str(), l.worker_id.as_str()))
        .collect();
    assert_eq!(seen, [("b", "w100"), ("a", "w200"), ("a", "w300")]);
    assert!(leases
        .windows(2)
        .all(|pair| ms(&pair[0].lease_deadline) <= ms(&pair[1].lease_deadline)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_pages_are_refused() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut client = service.client().await;
    for (request, field) in [
        (
            proto::ListWorkersRequest {
                namespace: "ns".into(),
                page_token: "x".into(),
                ..Default::default()
            },
            "page_token",
        ),
        (
            proto::ListWorkersRequest {
                namespace: "ns".into(),
                page_size: 1001,
                ..Default::default()
            },
            "page_size",
        ),
        (proto::ListWorkersRequest::default(), "namespace"),
    ] {
        let status = client.list_workers(request).await.expect_err("refused");
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        assert!(status.message().contains(field), "{status:?}");
    }
}
