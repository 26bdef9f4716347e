//! The job lifecycle through real gRPC: enqueue, claim under a lease, ack, fail with
//! backoff until dead, lease expiry, stale tokens, priorities and delays.

use std::time::Duration;

use tonic::Code;

use crate::common::*;

#[tokio::test]
async fn enqueue_claim_ack_completes_the_job_once() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;

    let mut req = job("emails", "email.send");
    req.payload = b"hello".to_vec();
    req.headers.insert("team".into(), "growth".into());
    let e = enqueue(&mut c, req).await;
    assert_eq!(e.outcome, proto::EnqueueOutcome::Created as i32);
    assert_eq!(e.state, proto::JobState::Pending as i32);
    assert!(uuid::Uuid::parse_str(&e.job_id).is_ok());

    let claimed = claim_job(&mut c, &["emails"], 0, Some(5_000))
        .await
        .expect("claimable");
    assert_eq!(claimed.job_id, e.job_id);
    assert_eq!(claimed.attempt, 1);
    assert_eq!(claimed.payload, b"hello");
    assert_eq!(
        claimed.headers.get("team").map(String::as_str),
        Some("growth")
    );
    assert!(!claimed.lease_token.is_empty());
    let active = get_job(&mut c, &e.job_id).await;
    assert_eq!(state(&active), proto::JobState::Active);
    assert_eq!(active.worker_id, "test-worker");
    assert_eq!(ms(&active.lease_deadline), ms(&claimed.lease_deadline));
    // Nothing else to claim while it is leased.
    assert!(claim_job(&mut c, &["emails"], 0, None).await.is_none());

    ack_job(&mut c, &e.job_id, &claimed.lease_token)
        .await
        .expect("ack");
    let done = get_job(&mut c, &e.job_id).await;
    assert_eq!(state(&done), proto::JobState::Completed);
    assert!(done.finish_time.is_some());
    assert_eq!(done.attempts, 1);

    // A second ack with the same token is refused: no double completion.
    let again = ack_job(&mut c, &e.job_id, &claimed.lease_token)
        .await
        .expect_err("double ack");
    assert_eq!(again.code(), Code::Aborted, "{again:?}");
    assert!(claim_job(&mut c, &["emails"], 0, None).await.is_none());
}

#[tokio::test]
async fn higher_priority_first_then_fifo_across_queues() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;

    let mut ids = Vec::new();
    for (queue, name, priority) in [
        ("a", "low-1", 0),
        ("b", "high-1", 10),
        ("a", "low-2", 0),
        ("a", "high-2", 10),
        ("b", "neg", -5),
        ("b", "low-3", 0),
    ] {
        let mut req = job(queue, name);
        req.priority = priority;
        ids.push((name, enqueue(&mut c, req).await.job_id));
    }
    let mut order = Vec::new();
    while let Some(j) = claim_job(&mut c, &["a", "b"], 0, None).await {
        order.push(j.name);
    }
    assert_eq!(
        order,
        ["high-1", "high-2", "low-1", "low-2", "low-3", "neg"],
        "priority desc, then enqueue order"
    );
}

#[tokio::test]
async fn max_jobs_claims_several_in_one_call() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    for i in 0..5 {
        enqueue(&mut c, job("q", &format!("j{i}"))).await;
    }
    let mut req = claim_req(&["q"], 0, None);
    req.max_jobs = 3;
    let jobs = c.claim_job(req).await.expect("claim").into_inner().jobs;
    let names: Vec<_> = jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["j0", "j1", "j2"]);
    let tokens: std::collections::HashSet<_> = jobs.iter().map(|j| &j.lease_token).collect();
    assert_eq!(tokens.len(), 3, "a token per job");
}

/// Pins: delayed and run_at jobs are handed out at their time (never before, by
/// Redis's clock), to a long-poll woken for them; a past run_at is ready at once.
#[tokio::test]
async fn delayed_and_run_at_jobs_become_claimable_at_their_time() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    let mut delayed = job("q", "later");
    delayed.when = Some(proto::enqueue_request::When::Delay(dur(SOON_MS as u64)));
    let d = enqueue(&mut c, delayed).await;
    assert_eq!(d.state, proto::JobState::Delayed as i32);
    let mut at = job("q", "at");
    let when = redis_now(&mut conn).await + 2 * SOON_MS;
    at.when = Some(proto::enqueue_request::When::RunAt(ts(when)));
    enqueue(&mut c, at).await;
    let mut past = job("q", "past");
    past.when = Some(proto::enqueue_request::When::RunAt(ts(1_000)));
    assert_eq!(
        enqueue(&mut c, past).await.state,
        proto::JobState::Pending as i32
    );

    assert_eq!(
        claim_job(&mut c, &["q"], 0, None).await.expect("past").name,
        "past"
    );
    // Not before its time, by Redis's clock (the one clock): a claim now finds
    // nothing, unless the box was so slow that its time has come.
    let delayed_until = ms(&get_job(&mut c, &d.job_id).await.run_at);
    let early = claim_job(&mut c, &["q"], 0, None).await;
    let answered_at = redis_now(&mut conn).await;
    if let Some(j) = &early {
        assert!(answered_at >= delayed_until, "{} claimed early", j.name);
    }
    // A long-poll is woken by the timer armed at the delayed job's time.
    let first = match early {
        Some(j) => j,
        None => claim_job(&mut c, &["q"], LONG_POLL_MS, None)
            .await
            .expect("delayed, within the wait"),
    };
    assert_eq!(first.name, "later");
    let second = claim_job(&mut c, &["q"], LONG_POLL_MS, None)
        .await
        .expect("run_at, within the wait");
    assert_eq!(second.name, "at");
    assert!(redis_now(&mut conn).await >= when, "not before its run_at");
}

/// Pins: a parked job waiter is woken by an enqueue on its instance (the re-check
/// never runs), within its wait.
#[tokio::test]
async fn a_waiting_worker_is_woken_by_an_enqueue() {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    // A re-check no test outlasts proves the wake-up comes from the enqueue.
    config.recheck_interval = Duration::from_secs(3600);
    let service = Service::start_with(config).await;
    let c = service.client().await;
    let mut conn = redis.conn().await;

    let mut waiter_client = c.clone();
    let before = script_calls(&mut conn).await;
    let waiter =
        tokio::spawn(
            async move { claim_job(&mut waiter_client, &["w"], LONG_POLL_MS, None).await },
        );
    wait_parked(&mut conn, before, 1).await;
    let mut c2 = c.clone();
    let e = enqueue(&mut c2, job("w", "wake")).await;
    let got = waiter.await.expect("task").expect("woken within the wait");
    assert_eq!(got.job_id, e.job_id);
}

/// Pins: a long-poll that parks answers empty OK just before its client's deadline
/// (shorter than its wait), not DEADLINE_EXCEEDED.
#[tokio::test]
async fn a_long_poll_answers_empty_before_the_client_deadline() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let before = script_calls(&mut conn).await;
    let req = with_deadline(claim_req(&["empty"], 30_000, None), Duration::from_secs(3));
    let poll = tokio::spawn(async move { c.claim_job(req).await });
    // It waits (parks) rather than answering at once.
    wait_parked(&mut conn, before, 1).await;
    let jobs = poll
        .await
        .expect("task")
        .expect("empty answer, not DEADLINE_EXCEEDED");
    assert!(jobs.into_inner().jobs.is_empty());
}

/// Pins: an expired lease re-hands the job (attempt + 1) to a waiting worker, and the
/// first holder's late ack, fail and extend are refused.
#[tokio::test]
async fn an_expired_lease_hands_the_job_to_the_next_worker_with_attempt_plus_one() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let e = enqueue(&mut c, job("q", "crashy")).await;

    let first = claim_job(&mut c, &["q"], 0, Some(300))
        .await
        .expect("first");
    assert_eq!(first.attempt, 1);
    // The worker "crashes": no ack. After the lease the job is claimable again.
    let second = claim_job(&mut c, &["q"], LONG_POLL_MS, Some(60_000))
        .await
        .expect("re-handed after the lease, within the wait");
    assert_eq!(second.job_id, e.job_id);
    assert_eq!(second.attempt, 2);
    assert_ne!(second.lease_token, first.lease_token);

    // The first worker's late ack, fail and extend are refused and change nothing.
    for status in [
        ack_job(&mut c, &e.job_id, &first.lease_token)
            .await
            .map(|_| ())
            .err(),
        fail_job(&mut c, &e.job_id, &first.lease_token, "late")
            .await
            .map(|_| ())
            .err(),
        c.extend_lease(proto::ExtendLeaseRequest {
            progress: None,
            namespace: "ns".into(),
            job_id: e.job_id.clone(),
            lease_token: first.lease_token.clone(),
            lease: Some(dur(10_000)),
        })
        .await
        .map(|_| ())
        .err(),
    ] {
        let status = status.expect("refused");
        assert_eq!(status.code(), Code::Aborted, "{status:?}");
    }
    let j = get_job(&mut c, &e.job_id).await;
    assert_eq!(state(&j), proto::JobState::Active);
    assert_eq!(j.attempts, 2);
    assert_eq!(ms(&j.lease_deadline), ms(&second.lease_deadline));
    assert_eq!(j.errors.len(), 1);
    assert_eq!(j.errors[0].message, "lease expired");
    assert_eq!(j.errors[0].attempt, 1);

    ack_job(&mut c, &e.job_id, &second.lease_token)
        .await
        .expect("current holder acks");
    assert_eq!(
        state(&get_job(&mut c, &e.job_id).await),
        proto::JobState::Completed
    );
}

#[tokio::test]
async fn an_expired_but_not_yet_reclaimed_lease_cannot_be_acked() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let e = enqueue(&mut c, job("q", "slow")).await;
    let claimed = claim_job(&mut c, &["q"], 0, Some(200))
        .await
        .expect("claimed");
    let mut conn = redis.conn().await;
    wait_redis_past(&mut conn, ms(&claimed.lease_deadline)).await;
    let refused = ack_job(&mut c, &e.job_id, &claimed.lease_token)
        .await
        .expect_err("expired lease");
    assert_eq!(refused.code(), Code::Aborted);
    assert!(
        refused.message().contains("expired"),
        "{}",
        refused.message()
    );
    // Not completed: the next claim gets it.
    let again = claim_job(&mut c, &["q"], 0, None).await.expect("re-handed");
    assert_eq!(again.attempt, 2);
}

/// Pins: extending a lease (again and again) moves its deadline out, so the job
/// stays with its worker past the first deadline and its ack succeeds.
#[tokio::test]
async fn extend_lease_keeps_the_job_past_its_first_deadline() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let e = enqueue(&mut c, job("q", "long")).await;
    let claimed = claim_job(&mut c, &["q"], 0, Some(2_000))
        .await
        .expect("claimed");
    let first_deadline = ms(&claimed.lease_deadline);
    for _ in 0..3 {
        let r = c
            .extend_lease(proto::ExtendLeaseRequest {
                progress: None,
                namespace: "ns".into(),
                job_id: e.job_id.clone(),
                lease_token: claimed.lease_token.clone(),
                lease: Some(dur(60_000)),
            })
            .await
            .expect("extend")
            .into_inner();
        assert!(ms(&r.lease_deadline) > first_deadline);
    }
    // Beyond the first lease by Redis's clock: still ours.
    let patience = Patience::new("the first lease deadline to pass");
    while redis_now(&mut conn).await <= first_deadline {
        patience.wait().await;
    }
    assert!(claim_job(&mut c, &["q"], 0, None).await.is_none());
    ack_job(&mut c, &e.job_id, &claimed.lease_token)
        .await
        .expect("ack");
}

#[tokio::test]
async fn wrong_tokens_are_refused_and_change_nothing() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let e = enqueue(&mut c, job("q", "t")).await;
    // Pending, never claimed: no token is valid.
    let before = snapshot(&mut conn).await;
    let refused = ack_job(&mut c, &e.job_id, "forged")
        .await
        .expect_err("pending");
    assert_eq!(refused.code(), Code::Aborted);
    let claimed = claim_job(&mut c, &["q"], 0, None).await.expect("claimed");
    let after_claim = snapshot(&mut conn).await;
    assert_ne!(before, after_claim);
    let refused = fail_job(&mut c, &e.job_id, "forged", "x")
        .await
        .expect_err("forged");
    assert_eq!(refused.code(), Code::Aborted);
    assert_eq!(snapshot(&mut conn).await, after_claim, "nothing written");
    let missing = ack_job(&mut c, "no-such-job", &claimed.lease_token)
        .await
        .expect_err("unknown");
    assert_eq!(missing.code(), Code::NotFound);
}

/// Pins: each failure delays the retry by exactly the capped exponential backoff (by
/// Redis's clock), until max_attempts makes it dead; RetryJob revives it.
#[tokio::test]
async fn failures_retry_with_backoff_until_dead_then_retry_job_revives() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    let mut req = job("q", "flaky");
    req.max_attempts = Some(3);
    req.backoff = Some(proto::Backoff {
        kind: proto::BackoffKind::Exponential as i32,
        base: Some(dur(200)),
        cap: Some(dur(300)),
        jitter: 0.0,
    });
    let e = enqueue(&mut c, req).await;

    // Redis's clock (the one clock the scripts read) brackets each fail and claim, so
    // the backoff is checked exactly, however long the round trips take.
    let mut retry_at = 0;
    let mut early = None;
    for attempt in 1..=3u32 {
        let j = match early.take() {
            Some(j) => j,
            None => claim_job(&mut c, &["q"], LONG_POLL_MS, None)
                .await
                .expect("claimable within the wait"),
        };
        assert!(
            redis_now(&mut conn).await >= retry_at,
            "attempt {attempt} claimed before its backoff ended"
        );
        assert_eq!(j.attempt, attempt);
        let failing_from = redis_now(&mut conn).await;
        let r = fail_job(
            &mut c,
            &e.job_id,
            &j.lease_token,
            &format!("boom {attempt}"),
        )
        .await
        .expect("fail");
        let failed_by = redis_now(&mut conn).await;
        if attempt < 3 {
            assert_eq!(r.state, proto::JobState::Delayed as i32);
            // 200 ms, then 400 capped at 300 ms, after the fail.
            let backoff = if attempt == 1 { 200 } else { 300 };
            retry_at = ms(&r.run_at);
            assert!(
                (failing_from + backoff..=failed_by + backoff).contains(&retry_at),
                "attempt {attempt}: run_at {retry_at} is not {backoff} ms after the fail \
                 ({failing_from}..={failed_by})"
            );
            // Backing off: nothing to claim, unless the box was so slow that the
            // backoff is already over (checked at the top of the loop).
            early = claim_job(&mut c, &["q"], 0, None).await;
        } else {
            assert_eq!(r.state, proto::JobState::Dead as i32);
            assert!(r.run_at.is_none());
        }
    }
    let dead = get_job(&mut c, &e.job_id).await;
    assert_eq!(state(&dead), proto::JobState::Dead);
    let history: Vec<_> = dead
        .errors
        .iter()
        .map(|e| (e.attempt, e.message.as_str()))
        .collect();
    assert_eq!(history, [(1, "boom 1"), (2, "boom 2"), (3, "boom 3")]);
    assert!(
        claim_job(&mut c, &["q"], 300, None).await.is_none(),
        "dead is never claimed"
    );

    let revived = c
        .retry_job(proto::RetryJobRequest {
            namespace: "ns".into(),
            job_id: e.job_id.clone(),
        })
        .await
        .expect("retry")
        .into_inner()
        .job
        .expect("job");
    assert_eq!(state(&revived), proto::JobState::Pending);
    assert_eq!(revived.attempts, 0);
    assert_eq!(revived.errors.len(), 3, "history kept");
    let j = claim_job(&mut c, &["q"], 0, None).await.expect("revived");
    assert_eq!(j.attempt, 1);
    ack_job(&mut c, &e.job_id, &j.lease_token)
        .await
        .expect("ack");
}

/// Pins: retry_after and non_retryable override the backoff, and jitter keeps a fixed
/// backoff within [base * (1 - jitter), base].
#[tokio::test]
async fn non_retryable_and_retry_after_override_the_backoff() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    let mut req = job("q", "x");
    req.max_attempts = Some(10);
    req.backoff = Some(proto::Backoff {
        kind: proto::BackoffKind::Fixed as i32,
        base: Some(dur(3_600_000)),
        cap: None,
        jitter: 0.5,
    });
    let e = enqueue(&mut c, req).await;
    let j = claim_job(&mut c, &["q"], 0, None).await.expect("job");
    let r = c
        .fail_job(proto::FailJobRequest {
            namespace: "ns".into(),
            job_id: e.job_id.clone(),
            lease_token: j.lease_token,
            error: "try again soon".into(),
            retry_after: Some(dur(0)),
            non_retryable: false,
        })
        .await
        .expect("fail")
        .into_inner();
    assert_eq!(
        r.state,
        proto::JobState::Pending as i32,
        "retry_after 0: at once"
    );
    let j = claim_job(&mut c, &["q"], 0, None).await.expect("again");
    assert_eq!(j.attempt, 2);
    let r = c
        .fail_job(proto::FailJobRequest {
            namespace: "ns".into(),
            job_id: e.job_id.clone(),
            lease_token: j.lease_token,
            error: "hopeless".into(),
            retry_after: None,
            non_retryable: true,
        })
        .await
        .expect("fail")
        .into_inner();
    assert_eq!(r.state, proto::JobState::Dead as i32);

    // Fixed backoff with jitter: the wait is within [base*(1-jitter), base].
    let e2 = enqueue(&mut c, {
        let mut req = job("q2", "jitter");
        req.backoff = Some(proto::Backoff {
            kind: proto::BackoffKind::Fixed as i32,
            base: Some(dur(10_000)),
            cap: None,
            jitter: 0.5,
        });
        req
    })
    .await;
    let j = claim_job(&mut c, &["q2"], 0, None).await.expect("job");
    let failing_from = redis_now(&mut conn).await;
    let r = fail_job(&mut c, &e2.job_id, &j.lease_token, "x")
        .await
        .expect("fail");
    let failed_by = redis_now(&mut conn).await;
    let run_at = ms(&r.run_at);
    assert!(
        (failing_from + 5_000..=failed_by + 10_000).contains(&run_at),
        "run_at {run_at} is not 5-10 s after the fail ({failing_from}..={failed_by})"
    );
}

/// Pins: a lease that expires on the last attempt makes the job dead, with the
/// expiries in its history.
#[tokio::test]
async fn a_lease_expiring_on_the_last_attempt_makes_the_job_dead() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut req = job("q", "abandoned");
    req.max_attempts = Some(2);
    let e = enqueue(&mut c, req).await;
    let mut last_deadline = 0;
    for attempt in 1..=2 {
        let j = claim_job(&mut c, &["q"], LONG_POLL_MS, Some(200))
            .await
            .expect("claim");
        assert_eq!(j.attempt, attempt);
        last_deadline = ms(&j.lease_deadline);
    }
    // The second lease expires; the next claim call finds it and buries it.
    let mut conn = redis.conn().await;
    wait_redis_past(&mut conn, last_deadline).await;
    assert!(claim_job(&mut c, &["q"], 0, None).await.is_none());
    let dead = get_job(&mut c, &e.job_id).await;
    assert_eq!(state(&dead), proto::JobState::Dead);
    assert_eq!(dead.errors.len(), 2);
    assert!(dead.errors.iter().all(|e| e.message == "lease expired"));
}

/// Pins: a parked waiter is handed the job an enqueue through another replica puts in
/// its queue, however many other queues have waiters (the waker once peeked only the
/// first 256 queue names, so `emails` here, the 271st, starved for the whole wait).
#[tokio::test]
async fn a_waiter_is_not_starved_by_waiters_on_many_other_queues() {
    let redis = Redis::start().await;
    let mut ca = config(&redis.url());
    ca.recheck_interval = Duration::from_millis(300);
    let a = Service::start_with(ca).await;
    let b = Service::start(&redis.url()).await;
    let mut client_b = b.client().await;
    let mut conn = redis.conn().await;

    // Decoys on both sides of `emails`, spread over a few connections so no
    // connection's stream limit holds a call back.
    let decoys: Vec<String> = (0..270)
        .map(|i| format!("a{i:03}"))
        .chain((0..30).map(|i| format!("z{i:03}")))
        .collect();
    let mut clients = Vec::new();
    for _ in 0..3 {
        clients.push(a.client().await);
    }
    let before = script_calls(&mut conn).await;
    let parked: Vec<_> = decoys
        .iter()
        .enumerate()
        .map(|(i, queue)| {
            let mut c = clients[i % clients.len()].clone();
            let queue = queue.clone();
            tokio::spawn(async move { claim_job(&mut c, &[&queue], LONG_POLL_MS, None).await })
        })
        .collect();
    wait_parked(&mut conn, before, decoys.len() as u64).await;

    let mut c = a.client().await;
    let before = script_calls(&mut conn).await;
    let waiter =
        tokio::spawn(async move { claim_job(&mut c, &["emails"], LONG_POLL_MS, None).await });
    wait_parked(&mut conn, before, 1).await;
    let e = enqueue(&mut client_b, job("emails", "welcome")).await;
    let got = waiter.await.expect("task").expect("woken within the wait");
    assert_eq!(got.job_id, e.job_id);
    parked.iter().for_each(|p| p.abort());
}
