//! Rates (issue 32, target 2): starts are counted GCRA-style, and over any window of
//! length `period`, a rate key's starts (and the queue's, under the queue-wide
//! `rate`) are at most limit + burst, checked over the whole run on the server's
//! clock (a start is the claim's lease deadline minus the lease it asked for). A key
//! held by its rate blocks no other key, and a long-poll waiting only on a rate
//! window is woken when it opens.

use crate::common::*;

const Q: &str = "q";
/// The lease every claim here asks for: a start is its deadline minus this.
const LEASE_MS: u64 = 600_000;

/// Claims until `n` jobs were handed out (asking again while the rate holds them
/// back: the wake-up is pinned on its own below); their start times (server clock,
/// epoch ms) and names.
async fn claim_starts(c: &mut Client, n: usize) -> Vec<(i64, String)> {
    let mut starts = Vec::new();
    let mut patience = Patience::new("the next start");
    while starts.len() < n {
        let mut req = claim_req(&[Q], 0, Some(LEASE_MS));
        req.max_jobs = 10;
        let jobs = c.claim_job(req).await.expect("claim").into_inner().jobs;
        if jobs.is_empty() {
            patience.wait().await;
            continue;
        }
        patience = Patience::new("the next start");
        for j in jobs {
            starts.push((ms(&j.lease_deadline) - LEASE_MS as i64, j.name));
        }
    }
    starts.sort();
    starts
}

/// The most starts in any window [t, t + period) (t a start).
fn most_in_a_window(starts: &[i64], period: i64) -> usize {
    let mut sorted = starts.to_vec();
    sorted.sort_unstable();
    let mut most = 0;
    let mut from = 0;
    for (i, &t) in sorted.iter().enumerate() {
        while sorted[from] <= t - period {
            from += 1;
        }
        most = most.max(i + 1 - from);
    }
    most
}

/// Pins per_key_rate: the starts of one rate key, in every window of length period,
/// are at most limit + burst, over a run that drains a backlog 8 times that; the
/// jobs of another rate key run under their own budget alongside.
#[tokio::test]
async fn per_key_rate_starts_in_every_window_are_at_most_limit_plus_burst() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let (limit, period, burst) = (2, 300, 1);
    set_policy(
        &mut c,
        Q,
        proto::QueuePolicy {
            per_key_rate: Some(rate(limit, period, burst)),
            ..Default::default()
        },
    )
    .await;
    let jobs: Vec<_> = (0..24)
        .map(|i| {
            let key = if i % 3 == 2 { "S" } else { "R" };
            keyed_job(Q, key, "", "", key)
        })
        .collect();
    enqueue_all(&mut c, jobs).await;

    let starts = claim_starts(&mut c, 24).await;
    let bound = (limit + burst) as usize;
    for key in ["R", "S"] {
        let of_key: Vec<i64> = starts
            .iter()
            .filter(|(_, k)| k == key)
            .map(|(t, _)| *t)
            .collect();
        let most = most_in_a_window(&of_key, period as i64);
        assert!(
            most <= bound,
            "{key}: {most} starts in a window: {of_key:?}"
        );
        // The burst was used (burst + 1 at once from idle), and the rate held the
        // rest back (not all in one window).
        assert!(most > burst as usize, "{key}: {of_key:?}");
        assert!(most < of_key.len(), "{key}: {of_key:?}");
    }
}

/// Pins the queue-wide rate: all of the queue's starts (jobs with and without keys),
/// in every window of length period, are at most limit + burst.
#[tokio::test]
async fn the_queue_rate_bounds_all_its_starts_in_every_window() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let (limit, period, burst) = (3, 300, 2);
    set_policy(
        &mut c,
        Q,
        proto::QueuePolicy {
            rate: Some(rate(limit, period, burst)),
            ..Default::default()
        },
    )
    .await;
    let jobs: Vec<_> = (0..30)
        .map(|i| match i % 3 {
            0 => job(Q, "plain"),
            1 => keyed_job(Q, "keyed", "", &format!("c{i}"), ""),
            _ => keyed_job(Q, "rated", "", "", "R"),
        })
        .collect();
    enqueue_all(&mut c, jobs).await;

    let starts: Vec<i64> = claim_starts(&mut c, 30)
        .await
        .into_iter()
        .map(|(t, _)| t)
        .collect();
    let most = most_in_a_window(&starts, period as i64);
    let bound = (limit + burst) as usize;
    assert!(most <= bound, "{most} starts in a window: {starts:?}");
    assert!(most > burst as usize, "the burst was used: {starts:?}");
    assert!(most < starts.len(), "the rate held starts back: {starts:?}");
}

/// Pins: a key out of its rate is passed over: the jobs of other keys and plain
/// jobs behind it are leased, its own next job is not (PENDING, attempts 0).
#[tokio::test]
async fn a_rate_limited_key_does_not_block_another_key() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    set_policy(
        &mut c,
        Q,
        proto::QueuePolicy {
            per_key_rate: Some(rate(1, 3_600_000, 0)),
            ..Default::default()
        },
    )
    .await;
    let ids = enqueue_all(
        &mut c,
        vec![
            keyed_job(Q, "r1", "", "", "R"),
            keyed_job(Q, "r2", "", "", "R"),
            keyed_job(Q, "s1", "", "", "S"),
            job(Q, "plain"),
        ],
    )
    .await;
    let got: Vec<String> = claim_many(&mut c, Q, 10)
        .await
        .into_iter()
        .map(|j| j.name)
        .collect();
    assert_eq!(got, ["r1", "s1", "plain"]);
    assert!(claim_many(&mut c, Q, 10).await.is_empty());
    let r2 = get_job(&mut c, &ids[1]).await;
    assert_eq!(state(&r2), proto::JobState::Pending);
    assert_eq!(r2.attempts, 0);
}

/// Pins: a long-poll that waits only on a rate key's next window is woken when it
/// opens, with nothing enqueued or acked in between, and gets the job then (not
/// before: its start is a full interval after the first).
#[tokio::test]
async fn a_long_poll_waiting_on_a_rate_window_is_woken_when_it_opens() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let period = 1_500;
    set_policy(
        &mut c,
        Q,
        proto::QueuePolicy {
            per_key_rate: Some(rate(1, period, 0)),
            ..Default::default()
        },
    )
    .await;
    enqueue_all(
        &mut c,
        vec![
            keyed_job(Q, "r1", "", "", "R"),
            keyed_job(Q, "r2", "", "", "R"),
        ],
    )
    .await;
    let first = claim_job(&mut c, &[Q], 0, Some(LEASE_MS))
        .await
        .expect("r1");
    assert_eq!(first.name, "r1");
    let second = within_patience(
        "the long-poll",
        claim_job(&mut c, &[Q], LONG_POLL_MS, Some(LEASE_MS)),
    )
    .await
    .expect("r2, once its window opened, within the wait");
    assert_eq!(second.name, "r2");
    let gap = ms(&second.lease_deadline) - ms(&first.lease_deadline);
    assert!(gap >= period as i64, "started {gap} ms after r1");
}

#[test]
fn the_window_count_slides() {
    assert_eq!(most_in_a_window(&[0, 100, 200, 300, 301], 300), 4);
    assert_eq!(most_in_a_window(&[0, 100, 200, 300], 300), 3);
    assert_eq!(most_in_a_window(&[0, 299, 300, 599], 300), 2);
    assert_eq!(most_in_a_window(&[], 300), 0);
}
