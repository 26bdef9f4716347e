//! Schedules that enqueue jobs (issue 30): `Schedule.target = enqueue{...}` makes each
//! due slot a job of the target queue, enqueued by the service's dispatcher, with the
//! slot's occurrence id as the job id, exactly once across replicas and crashes.

use std::collections::{HashMap, HashSet};

use deadpool_redis::redis::aio::MultiplexedConnection;
use tonic::Code;

use crate::common::*;

pub(crate) fn target(queue: &str) -> proto::EnqueueTarget {
    proto::EnqueueTarget {
        queue: queue.into(),
        ..Default::default()
    }
}

/// `s` with the target `t`.
pub(crate) fn targeted(s: proto::Schedule, t: proto::EnqueueTarget) -> proto::Schedule {
    proto::Schedule {
        target: Some(proto::schedule::Target::Enqueue(t)),
        ..s
    }
}

/// Makes a target schedule due at `at_ms` behind the service's back (a clock jump),
/// and registers its namespace in the dispatch due-set as an upsert would.
pub(crate) async fn force_due_target(
    conn: &mut MultiplexedConnection,
    ns: &str,
    id: &str,
    at_ms: i64,
) {
    force_due(conn, ns, id, at_ms).await;
    register_dispatch(conn, ns, at_ms).await;
}

pub(crate) async fn register_dispatch(conn: &mut MultiplexedConnection, ns: &str, at_ms: i64) {
    let _: i64 = cmd("ZADD")
        .arg("dueq:dispatch-due")
        .arg("LT")
        .arg(at_ms)
        .arg(ns)
        .query_async(conn)
        .await
        .expect("ZADD dispatch-due");
}

/// The schedule's recent runs that became jobs, newest first.
pub(crate) async fn enqueued(c: &mut Client, ns: &str, id: &str) -> Vec<proto::ScheduleRun> {
    c.get_schedule(proto::GetScheduleRequest {
        namespace: ns.into(),
        id: id.into(),
    })
    .await
    .expect("get")
    .into_inner()
    .recent_runs
    .into_iter()
    .filter(|r| r.outcome == proto::RunOutcome::Enqueued as i32)
    .collect()
}

/// Waits until the schedule has made `n` jobs (its run count), and returns it.
pub(crate) async fn wait_runs(c: &mut Client, ns: &str, id: &str, n: u64) -> proto::Schedule {
    let patience = Patience::new(format!("schedule {id} to make {n} jobs"));
    loop {
        let s = get(c, ns, id).await;
        if s.run_count >= n {
            return s;
        }
        patience.wait().await;
    }
}

/// Every job of `queue` in namespace "ns".
pub(crate) async fn jobs_of(c: &mut Client, queue: &str) -> Vec<proto::Job> {
    list_all_jobs(c, "ns", queue, 1000).await
}

/// Pins: a due slot becomes exactly one job: id = the slot's occurrence id, the
/// schedule's job name and payload, its headers under the target's, the target's
/// priority and attempts, and the slot (schedule id, due time, run number) in GetJob
/// and in the claim; the run is recorded as ENQUEUED; the schedule moves on.
#[tokio::test]
async fn a_due_slot_becomes_exactly_one_job_with_the_schedules_fields() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let s = proto::Schedule {
        payload: b"p-1".to_vec(),
        headers: [("a", "sched"), ("b", "sched")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
        ..every("s", 3600)
    };
    let t = proto::EnqueueTarget {
        priority: 7,
        max_attempts: Some(5),
        headers: [("b".to_owned(), "target".to_owned())].into(),
        ..target("invoices")
    };
    let stored = upsert(&mut c, "ns", targeted(s, t))
        .await
        .schedule
        .expect("schedule");
    let Some(proto::schedule::Target::Enqueue(back)) = &stored.target else {
        panic!("the target is stored: {stored:?}")
    };
    assert_eq!(
        (back.queue.as_str(), back.priority, back.max_attempts),
        ("invoices", 7, Some(5))
    );
    let due = redis_now(&mut conn).await - 1_000;
    force_due_target(&mut conn, "ns", "s", due).await;

    let claimed = claim_job(&mut c, &["invoices"], LONG_POLL_MS, None)
        .await
        .expect("the slot's job");
    let slot = claimed.schedule.clone().expect("the claim names the slot");
    assert_eq!(slot.schedule_id, "s");
    assert_eq!(ms(&slot.due_time), due);
    assert_eq!(slot.run_number, 1);
    let s = get(&mut c, "ns", "s").await;
    let runs = enqueued(&mut c, "ns", "s").await;
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(
        claimed.job_id, runs[0].occurrence_id,
        "job id = occurrence id"
    );
    assert_eq!(ms(&runs[0].due_time), due);
    assert!(ms(&s.next_run_time) > due, "the schedule moved on");

    let job = get_job(&mut c, &claimed.job_id).await;
    assert_eq!(
        (job.name.as_str(), job.payload.as_slice()),
        ("job", &b"p-1"[..])
    );
    assert_eq!((job.priority, job.max_attempts), (7, 5));
    let headers: HashMap<&str, &str> = job
        .headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(headers, HashMap::from([("a", "sched"), ("b", "target")]));
    let from = job.schedule.expect("GetJob names the slot");
    assert_eq!(
        (
            from.schedule_id.as_str(),
            ms(&from.due_time),
            from.run_number
        ),
        ("s", due, 1)
    );
    assert_eq!(
        jobs_of(&mut c, "invoices").await.len(),
        1,
        "exactly one job"
    );
    assert!(
        claim_due(&mut c, "ns").await.is_none(),
        "ClaimDueSchedule never hands out a target schedule"
    );
}

async fn claim_due(c: &mut Client, ns: &str) -> Option<proto::Occurrence> {
    claim(c, ns, 0).await
}

/// Waits until queue `queue` holds `n` jobs, and returns them.
pub(crate) async fn wait_jobs(c: &mut Client, queue: &str, n: usize) -> Vec<proto::Job> {
    let patience = Patience::new(format!("{n} jobs in {queue}"));
    loop {
        let jobs = jobs_of(c, queue).await;
        assert!(jobs.len() <= n, "more than {n} jobs: {}", jobs.len());
        if jobs.len() == n {
            return jobs;
        }
        patience.wait().await;
    }
}

/// `n` target schedules `t0..` (hourly, queue `queue`), made due together.
async fn due_fleet(c: &mut Client, conn: &mut MultiplexedConnection, n: usize, queue: &str) -> i64 {
    let mut tasks = Vec::new();
    for chunk in 0..8 {
        let mut c = c.clone();
        let queue = queue.to_owned();
        tasks.push(tokio::spawn(async move {
            for i in (chunk..n).step_by(8) {
                upsert(
                    &mut c,
                    "ns",
                    targeted(every(&format!("t{i}"), 3600), target(&queue)),
                )
                .await;
            }
        }));
    }
    for task in tasks {
        task.await.expect("upserts");
    }
    let due = redis_now(conn).await - 1_000;
    for i in 0..n {
        force_due(conn, "ns", &format!("t{i}"), due).await;
    }
    register_dispatch(conn, "ns", due).await;
    due
}

/// Each of `n` schedules made exactly one job: job ids unique, one per schedule, run 1.
fn assert_one_job_each(jobs: &[proto::Job], n: usize, due: i64) {
    let ids: HashSet<&str> = jobs.iter().map(|j| j.job_id.as_str()).collect();
    assert_eq!(ids.len(), n, "job ids are unique");
    let mut per_schedule: HashMap<&str, usize> = HashMap::new();
    for job in jobs {
        let slot = job.schedule.as_ref().expect("the job names its slot");
        assert_eq!((ms(&slot.due_time), slot.run_number), (due, 1));
        *per_schedule.entry(slot.schedule_id.as_str()).or_default() += 1;
    }
    assert_eq!(per_schedule.len(), n, "every schedule made a job");
    assert!(per_schedule.values().all(|&k| k == 1), "none made two");
}

/// Pins: two instances dispatching together enqueue each of 500 slots due at once
/// exactly once (each slot's take and its job are one script, the job id the slot's
/// occurrence id).
#[tokio::test]
async fn two_instances_enqueue_each_of_500_due_slots_exactly_once() {
    let redis = Redis::start().await;
    let a = Service::start(&redis.url()).await;
    let b = Service::start(&redis.url()).await;
    let mut c = a.client().await;
    let mut conn = redis.conn().await;
    let due = due_fleet(&mut c, &mut conn, 500, "fleet").await;
    let jobs = wait_jobs(&mut b.client().await, "fleet", 500).await;
    assert_one_job_each(&jobs, 500, due);
    for i in [0, 250, 499] {
        assert_eq!(get(&mut c, "ns", &format!("t{i}")).await.run_count, 1);
    }
}

/// Pins: a dispatching `dueq serve` process SIGKILLed mid-way (once its first jobs
/// exist) and another instance started: every slot still becomes exactly one job.
#[tokio::test]
async fn a_dispatcher_sigkilled_mid_way_loses_and_repeats_no_slot() {
    let redis = Redis::start().await;
    let mut conn = redis.conn().await;
    let setup = Service::start_with(config_without_dispatch(&redis.url())).await;
    let due = due_fleet(&mut setup.client().await, &mut conn, 3000, "crash").await;
    setup.stop().await;
    let mut process = std::process::Command::new(env!("CARGO_BIN_EXE_dueq"))
        .args(["serve", "--listen", &format!("127.0.0.1:{}", free_port())])
        .args(["--redis-url", &redis.url()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start dueq serve");
    let patience = Patience::new("the process's first jobs");
    loop {
        let numbered: Option<i64> = cmd("HGET")
            .arg("dueq:{ns}:meta")
            .arg("n:crash")
            .query_async(&mut conn)
            .await
            .expect("HGET");
        if numbered.is_some_and(|n| n > 0) {
            break;
        }
        patience.wait().await;
    }
    process.kill().expect("SIGKILL");
    process.wait().expect("reaped");
    let b = Service::start(&redis.url()).await;
    let jobs = wait_jobs(&mut b.client().await, "crash", 3000).await;
    assert_one_job_each(&jobs, 3000, due);
}

/// A service whose dispatcher looks at the due-set only once an hour (it still runs
/// the schedule writes it serves through it: a poke wakes it).
fn config_without_dispatch(url: &str) -> dueq::config::ServeConfig {
    let mut config = config(url);
    config.recheck_interval = std::time::Duration::from_secs(3600);
    config
}

/// Pins: after the service was down, CATCHUP_POLICY_ALL enqueues one job per missed
/// slot, the most recent catchup_limit of them, oldest first; the older ones are
/// counted as skipped.
#[tokio::test]
async fn catchup_all_enqueues_each_missed_slot_up_to_the_limit() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let s = proto::Schedule {
        catchup_policy: proto::CatchupPolicy::All as i32,
        catchup_limit: 3,
        ..every("s", 60)
    };
    upsert(&mut c, "ns", targeted(s, target("catchup"))).await;
    let now = redis_now(&mut conn).await;
    let first = (now / 60_000 - 10) * 60_000; // ten or eleven slots behind
    force_due_target(&mut conn, "ns", "s", first).await;
    let s = wait_runs(&mut c, "ns", "s", 3).await;
    let mut dues: Vec<i64> = wait_jobs(&mut c, "catchup", 3)
        .await
        .iter()
        .map(|j| ms(&j.schedule.as_ref().expect("slot").due_time))
        .collect();
    dues.sort_unstable();
    assert_eq!(dues[1] - dues[0], 60_000);
    assert_eq!(dues[2] - dues[1], 60_000);
    let missed = (dues[2] - first) / 60_000 + 1;
    assert_eq!(s.skipped_catchup, u64::try_from(missed - 3).expect("count"));
    assert!(ms(&s.next_run_time) > dues[2]);
}

/// Claims the job `id` of `queue` and acks it.
async fn finish_job(c: &mut Client, queue: &str, id: &str) {
    let job = claim_job(c, &[queue], LONG_POLL_MS, None)
        .await
        .expect("a job");
    assert_eq!(job.job_id, id);
    ack_job(c, &job.job_id, &job.lease_token)
        .await
        .expect("ack");
}

/// Pins: under OVERLAP_POLICY_SKIP a slot that comes due while the previous slot's job
/// is unfinished is skipped (counted, no job); once that job completed, the next slot
/// is a job again.
#[tokio::test]
async fn overlap_skip_skips_a_slot_while_the_previous_job_is_unfinished() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let s = proto::Schedule {
        overlap_policy: proto::OverlapPolicy::Skip as i32,
        ..every("s", 3600)
    };
    upsert(&mut c, "ns", targeted(s, target("skip"))).await;
    let now = redis_now(&mut conn).await;
    force_due_target(&mut conn, "ns", "s", now - 3_000).await;
    let first = wait_jobs(&mut c, "skip", 1).await.remove(0);
    force_due_target(&mut conn, "ns", "s", now - 2_000).await;
    let patience = Patience::new("the slot skipped for overlap");
    while get(&mut c, "ns", "s").await.skipped_overlap == 0 {
        patience.wait().await;
    }
    assert_eq!(
        jobs_of(&mut c, "skip").await.len(),
        1,
        "no job for the skipped slot"
    );
    finish_job(&mut c, "skip", &first.job_id).await;
    force_due_target(&mut conn, "ns", "s", now - 1_000).await;
    let jobs = wait_jobs(&mut c, "skip", 2).await;
    let second = jobs
        .iter()
        .find(|j| j.job_id != first.job_id)
        .expect("the next job");
    assert_eq!(
        ms(&second.schedule.as_ref().expect("slot").due_time),
        now - 1_000
    );
    assert_eq!(get(&mut c, "ns", "s").await.skipped_overlap, 1);
}

/// Pins: under OVERLAP_POLICY_BUFFER_ONE the first slot that comes due while the
/// previous job is unfinished waits (buffered_time), later ones are skipped, and the
/// waiting slot becomes a job once that job has finished (no job script tells the
/// schedule: the dispatcher looks again).
#[tokio::test]
async fn buffer_one_holds_one_slot_until_the_previous_job_finished() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let s = proto::Schedule {
        overlap_policy: proto::OverlapPolicy::BufferOne as i32,
        ..every("s", 3600)
    };
    upsert(&mut c, "ns", targeted(s, target("buffer"))).await;
    let now = redis_now(&mut conn).await;
    force_due_target(&mut conn, "ns", "s", now - 3_000).await;
    let first = wait_jobs(&mut c, "buffer", 1).await.remove(0);
    force_due_target(&mut conn, "ns", "s", now - 2_000).await;
    let patience = Patience::new("the slot buffered");
    while get(&mut c, "ns", "s").await.buffered_time.is_none() {
        patience.wait().await;
    }
    force_due_target(&mut conn, "ns", "s", now - 1_000).await;
    let patience = Patience::new("the later slot skipped");
    while get(&mut c, "ns", "s").await.skipped_overlap == 0 {
        patience.wait().await;
    }
    assert_eq!(jobs_of(&mut c, "buffer").await.len(), 1);
    finish_job(&mut c, "buffer", &first.job_id).await;
    let jobs = wait_jobs(&mut c, "buffer", 2).await;
    let second = jobs
        .iter()
        .find(|j| j.job_id != first.job_id)
        .expect("the buffered job");
    assert_eq!(
        ms(&second.schedule.as_ref().expect("slot").due_time),
        now - 2_000
    );
    assert!(get(&mut c, "ns", "s").await.buffered_time.is_none());
}

async fn zscore(conn: &mut MultiplexedConnection, key: &str, member: &str) -> Option<f64> {
    cmd("ZSCORE")
        .arg(key)
        .arg(member)
        .query_async(conn)
        .await
        .expect("ZSCORE")
}

/// Waits until the dispatcher has visited `ns` and found nothing more due: it left
/// the dispatch due-set, or stays there only for a later time.
async fn wait_dispatched(conn: &mut MultiplexedConnection, ns: &str) {
    let patience = Patience::new(format!("a dispatcher visit of {ns}"));
    loop {
        let now = redis_now(conn).await;
        match zscore(conn, "dueq:dispatch-due", ns).await {
            Some(at) if (at as i64) <= now => patience.wait().await,
            _ => return,
        }
    }
}

/// Pins: a paused target schedule makes no job, even when its slot is due; pausing
/// the target queue does not pause the schedule (its jobs wait in the paused queue).
#[tokio::test]
async fn a_paused_schedule_makes_nothing_and_a_paused_queue_still_gets_its_jobs() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", targeted(every("s", 3600), target("paused"))).await;
    c.pause_schedule(proto::PauseScheduleRequest {
        namespace: "ns".into(),
        id: "s".into(),
        note: String::new(),
    })
    .await
    .expect("pause");
    let now = redis_now(&mut conn).await;
    force_due_target(&mut conn, "ns", "s", now - 1_000).await;
    wait_dispatched(&mut conn, "ns").await;
    assert!(
        jobs_of(&mut c, "paused").await.is_empty(),
        "a paused schedule makes nothing"
    );
    assert_eq!(get(&mut c, "ns", "s").await.run_count, 0);

    c.pause_queue(proto::PauseQueueRequest {
        namespace: "ns".into(),
        queue: "held".into(),
    })
    .await
    .expect("pause queue");
    upsert(&mut c, "ns", targeted(every("q", 3600), target("held"))).await;
    force_due_target(&mut conn, "ns", "q", now - 1_000).await;
    let job = wait_jobs(&mut c, "held", 1).await.remove(0);
    assert_eq!(
        state(&job),
        proto::JobState::Pending,
        "waiting in the paused queue"
    );
}

/// Pins: ClaimDueSchedule never hands out a target schedule: target schedules live in
/// their own index, and one found in the workers' due index (written there by an older
/// build) is moved out by the claim that meets it, not handed out.
#[tokio::test]
async fn claim_due_schedule_never_returns_a_target_schedule() {
    let redis = Redis::start().await;
    let service = Service::start_with(config_without_dispatch(&redis.url())).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", targeted(every("t", 3600), target("q"))).await;
    upsert(&mut c, "ns", every("w", 3600)).await;
    let now = redis_now(&mut conn).await;
    force_due(&mut conn, "ns", "t", now - 2_000).await;
    force_due(&mut conn, "ns", "w", now - 1_000).await;
    let _: i64 = cmd("ZADD")
        .arg("dueq:{ns}:due")
        .arg(now - 2_000)
        .arg("t")
        .query_async(&mut conn)
        .await
        .expect("ZADD");
    let o = claim(&mut c, "ns", 0).await.expect("the worker schedule");
    assert_eq!(o.schedule.expect("schedule").id, "w");
    assert!(
        claim(&mut c, "ns", 0).await.is_none(),
        "the target schedule is not handed out"
    );
    assert_eq!(zscore(&mut conn, "dueq:{ns}:due", "t").await, None);
    assert!(
        zscore(&mut conn, "dueq:{ns}:due:t", "t").await.is_some(),
        "moved to its index"
    );
}

/// Pins: a target is checked by Enqueue's rules, each error naming the field
/// (`schedule.enqueue.<field>`), and a refused upsert writes nothing.
#[tokio::test]
async fn bad_targets_are_refused_naming_the_field_and_write_nothing() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let many: HashMap<String, String> = (0..40).map(|i| (format!("t{i}"), "v".into())).collect();
    let sched_many: HashMap<String, String> =
        (0..40).map(|i| (format!("s{i}"), "v".into())).collect();
    let cases: Vec<(&str, proto::Schedule)> = vec![
        (
            "schedule.enqueue.queue",
            targeted(every("s", 60), target("")),
        ),
        (
            "schedule.enqueue.queue",
            targeted(every("s", 60), target(&"q".repeat(257))),
        ),
        (
            "schedule.enqueue.max_attempts",
            targeted(
                every("s", 60),
                proto::EnqueueTarget {
                    max_attempts: Some(0),
                    ..target("q")
                },
            ),
        ),
        (
            "schedule.enqueue.backoff.kind",
            targeted(
                every("s", 60),
                proto::EnqueueTarget {
                    backoff: Some(proto::Backoff {
                        kind: 99,
                        ..Default::default()
                    }),
                    ..target("q")
                },
            ),
        ),
        (
            "schedule.enqueue.lease",
            targeted(
                every("s", 60),
                proto::EnqueueTarget {
                    lease: Some(dur(0)),
                    ..target("q")
                },
            ),
        ),
        (
            "schedule.enqueue.headers",
            targeted(
                proto::Schedule {
                    headers: sched_many,
                    ..every("s", 60)
                },
                proto::EnqueueTarget {
                    headers: many,
                    ..target("q")
                },
            ),
        ),
        (
            "schedule.job_name",
            targeted(
                proto::Schedule {
                    job_name: String::new(),
                    ..every("s", 60)
                },
                target("q"),
            ),
        ),
    ];
    let before = snapshot(&mut conn).await;
    for (field, schedule) in cases {
        let refused = try_upsert(&mut c, "ns", schedule).await.expect_err(field);
        assert_eq!(
            refused.code(),
            Code::InvalidArgument,
            "{field}: {refused:?}"
        );
        assert!(
            refused.message().starts_with(&format!("{field}: ")),
            "{field}: {refused:?}"
        );
    }
    assert_eq!(snapshot(&mut conn).await, before, "nothing written");
}

/// Pins: a schedule switched from a target to none is claimed by workers again (and
/// makes no job), and switched back makes jobs again.
#[tokio::test]
async fn switching_the_target_off_and_on_moves_the_schedule_between_workers_and_jobs() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", targeted(every("s", 3600), target("sw"))).await;
    let now = redis_now(&mut conn).await;
    force_due_target(&mut conn, "ns", "s", now - 3_000).await;
    wait_jobs(&mut c, "sw", 1).await;

    let plain = upsert(&mut c, "ns", every("s", 3600))
        .await
        .schedule
        .expect("schedule");
    assert!(plain.target.is_none());
    force_due(&mut conn, "ns", "s", now - 2_000).await;
    let o = claim(&mut c, "ns", 0)
        .await
        .expect("workers claim it again");
    assert_eq!(ms(&o.due_time), now - 2_000);

    upsert(&mut c, "ns", targeted(every("s", 3600), target("sw"))).await;
    assert!(claim(&mut c, "ns", 0).await.is_none());
    force_due_target(&mut conn, "ns", "s", now - 1_000).await;
    let jobs = wait_jobs(&mut c, "sw", 2).await;
    assert!(jobs
        .iter()
        .any(|j| ms(&j.schedule.as_ref().expect("slot").due_time) == now - 1_000));
}

/// Pins: the dispatcher of any replica serves a namespace no one long-polls, written
/// through another replica that is gone; TriggerSchedule of a target schedule makes a
/// job now (kind triggered, its id the one the trigger returned).
#[tokio::test]
async fn any_replica_dispatches_a_namespace_nobody_polls_and_a_trigger_makes_a_job() {
    let redis = Redis::start().await;
    let mut conn = redis.conn().await;
    let writer = Service::start(&redis.url()).await;
    let mut c = writer.client().await;
    upsert(&mut c, "quiet", targeted(every("s", 3600), target("q"))).await;
    writer.stop().await;
    let other = Service::start(&redis.url()).await;
    let mut c = other.client().await;
    let due = redis_now(&mut conn).await - 1_000;
    force_due_target(&mut conn, "quiet", "s", due).await;
    let patience = Patience::new("the job in a namespace nobody polls");
    loop {
        let runs = enqueued(&mut c, "quiet", "s").await;
        if let Some(run) = runs.first() {
            let job = c
                .get_job(proto::GetJobRequest {
                    namespace: "quiet".into(),
                    job_id: run.occurrence_id.clone(),
                })
                .await
                .expect("the job")
                .into_inner()
                .job
                .expect("job");
            assert_eq!(job.queue, "q");
            break;
        }
        patience.wait().await;
    }
    let t = c
        .trigger_schedule(proto::TriggerScheduleRequest {
            namespace: "quiet".into(),
            id: "s".into(),
            ignore_overlap: false,
        })
        .await
        .expect("trigger")
        .into_inner();
    let patience = Patience::new("the triggered job");
    loop {
        let got = c
            .get_job(proto::GetJobRequest {
                namespace: "quiet".into(),
                job_id: t.occurrence_id.clone(),
            })
            .await;
        if let Ok(job) = got {
            let job = job.into_inner().job.expect("job");
            assert_eq!(ms(&job.schedule.expect("slot").due_time), ms(&t.due_time));
            break;
        }
        patience.wait().await;
    }
    let runs = enqueued(&mut c, "quiet", "s").await;
    assert_eq!(runs[0].kind, proto::OccurrenceKind::Triggered as i32);
}

/// Pins: the docs' nightly schedule feeding "invoices" (docs/schedules.md, "Schedules
/// that enqueue jobs") runs as written: the trigger's occurrence becomes the job the
/// worker claims, with the slot, the job name and the merged headers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs grpcurl"]
async fn the_schedules_doc_target_example_runs() {
    crate::common::tools::require("grpcurl");
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let addr = service.addr.to_string();
    let commands = crate::doc_examples::commands_between("schedule-target-examples");
    assert_eq!(commands.len(), 3, "{commands:?}");
    let mut outputs = Vec::new();
    for command in &commands {
        let (ok, text) = tokio::task::block_in_place(|| crate::doc_examples::run(command, &addr));
        assert!(ok, "docs/schedules.md example failed:\n{command}\n{text}");
        outputs.push(text);
    }
    assert!(
        outputs[0].contains("\"queue\": \"invoices\""),
        "{}",
        outputs[0]
    );
    let trigger: serde_json::Value = serde_json::from_str(&outputs[1]).expect("trigger JSON");
    let claimed: serde_json::Value = serde_json::from_str(&outputs[2]).expect("claim JSON");
    let job = &claimed["jobs"][0];
    assert_eq!(job["jobId"], trigger["occurrenceId"], "{claimed}");
    assert_eq!(job["name"], "invoices.run");
    assert_eq!(job["schedule"]["scheduleId"], "nightly-invoices");
    assert_eq!(job["schedule"]["dueTime"], trigger["dueTime"]);
    assert_eq!(job["headers"]["team"], "billing");
    assert_eq!(job["headers"]["source"], "nightly");
    assert_eq!(job["priority"], 5);
}

/// Pins: each dispatched slot counts in dueq_schedule_occurrences_total (as a claim
/// does) and its job in dueq_jobs_enqueued_total of the target queue.
#[tokio::test]
async fn dispatched_slots_are_counted_as_occurrences() {
    let redis = Redis::start().await;
    let metrics = format!("127.0.0.1:{}", free_port());
    let mut config = config(&redis.url());
    config.metrics_listen = Some(metrics.clone());
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    for id in ["a", "b"] {
        upsert(&mut c, "ns", targeted(every(id, 3600), target("counted"))).await;
        let due = redis_now(&mut conn).await - 1_000;
        force_due_target(&mut conn, "ns", id, due).await;
    }
    wait_jobs(&mut c, "counted", 2).await;
    let patience = Patience::new("the occurrences counted");
    loop {
        let s = scrape(&metrics).await;
        if s.value("dueq_schedule_occurrences_total{namespace=\"ns\"}") == 2.0 {
            let enqueued = s.series_of("dueq_jobs_enqueued_total");
            assert!(
                enqueued
                    .iter()
                    .any(|(series, v)| series.contains("counted") && *v == 2.0),
                "{enqueued:?}"
            );
            break;
        }
        patience.wait().await;
    }
}

/// Pins: BackfillSchedule of a target schedule makes one job per backfilled slot
/// (kind backfill, the slot's own occurrence id), and the next run does not move.
#[tokio::test]
async fn a_backfill_of_a_target_schedule_makes_a_job_per_slot() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let before = upsert(&mut c, "ns", targeted(every("s", 3600), target("bf")))
        .await
        .schedule
        .expect("schedule");
    let now = redis_now(&mut conn).await;
    let hour = 3_600_000;
    let (from, to) = ((now / hour - 3) * hour, (now / hour - 1) * hour);
    let filled = c
        .backfill_schedule(proto::BackfillScheduleRequest {
            namespace: "ns".into(),
            id: "s".into(),
            start_time: Some(ts(from)),
            end_time: Some(ts(to)),
        })
        .await
        .expect("backfill")
        .into_inner();
    assert_eq!(filled.slots, 3);
    let jobs = wait_jobs(&mut c, "bf", 3).await;
    let mut dues: Vec<i64> = jobs
        .iter()
        .map(|j| ms(&j.schedule.as_ref().expect("slot").due_time))
        .collect();
    dues.sort_unstable();
    assert_eq!(dues, vec![from, from + hour, to]);
    let runs = enqueued(&mut c, "ns", "s").await;
    assert!(runs
        .iter()
        .all(|r| r.kind == proto::OccurrenceKind::Backfill as i32));
    assert_eq!(
        get(&mut c, "ns", "s").await.next_run_time,
        before.next_run_time
    );
}

/// Pins: one namespace with thousands of due slots does not starve another: the
/// dispatcher serves each due namespace a bounded number of calls per visit, so the
/// small namespace's job is created before the big one's last.
#[tokio::test]
async fn a_namespace_with_many_due_slots_does_not_starve_another() {
    let redis = Redis::start().await;
    let setup = Service::start_with(config_without_dispatch(&redis.url())).await;
    let mut c = setup.client().await;
    let mut conn = redis.conn().await;
    let due = due_fleet(&mut c, &mut conn, 3000, "big").await;
    upsert(&mut c, "small", targeted(every("s", 3600), target("one"))).await;
    force_due(&mut conn, "small", "s", due).await;
    // Registered after "ns" (due at the same time), so visited after it.
    register_dispatch(&mut conn, "small", due).await;
    setup.stop().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let big = wait_jobs(&mut c, "big", 3000).await;
    let patience = Patience::new("the small namespace's job");
    let small = loop {
        let got = c
            .list_jobs(proto::ListJobsRequest {
                namespace: "small".into(),
                queue: "one".into(),
                page_size: 10,
                view: proto::JobView::Full as i32,
                ..Default::default()
            })
            .await
            .expect("ListJobs")
            .into_inner()
            .jobs;
        if let Some(job) = got.into_iter().next() {
            break job;
        }
        patience.wait().await;
    };
    let last_big = big.iter().map(|j| ms(&j.create_time)).max().expect("jobs");
    assert!(
        ms(&small.create_time) < last_big,
        "the small namespace waited for all of the big one's slots"
    );
}

/// Pins: ListSchedules by next run (and `--overdue`) pages both indexes merged in
/// (next run, id) order, so target schedules are listed with the others.
#[tokio::test]
async fn listing_by_next_run_merges_target_schedules_in() {
    let redis = Redis::start().await;
    let service = Service::start_with(config_without_dispatch(&redis.url())).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let now = redis_now(&mut conn).await;
    let hour = 3_600_000;
    let plan = [
        ("w1", false, now + hour),
        ("t1", true, now + 2 * hour),
        ("t0", true, now + 2 * hour),
        ("w2", false, now + 3 * hour),
        ("t2", true, now + 4 * hour),
    ];
    for (id, is_target, at) in plan {
        let s = if is_target {
            targeted(every(id, 3600 * 24), target("q"))
        } else {
            every(id, 3600 * 24)
        };
        upsert(&mut c, "ns", s).await;
        force_due(&mut conn, "ns", id, at).await;
    }
    let mut seen = Vec::new();
    let mut token = String::new();
    loop {
        let page = c
            .list_schedules(proto::ListSchedulesRequest {
                namespace: "ns".into(),
                page_size: 2,
                page_token: token,
                order: proto::ScheduleOrder::NextRun as i32,
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
    assert_eq!(seen, ["w1", "t0", "t1", "w2", "t2"]);
}

/// Pins: at the namespace's job quota (--max-jobs-per-namespace) the dispatcher takes
/// no slot: the schedule stays due (nothing skipped, nothing run), and its slot
/// becomes a job once a job has finished.
#[tokio::test]
async fn at_the_job_quota_a_slot_waits_until_a_job_finished() {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.max_jobs_per_namespace = 1;
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", targeted(every("s", 3600), target("quota"))).await;
    let now = redis_now(&mut conn).await;
    force_due_target(&mut conn, "ns", "s", now - 2_000).await;
    let first = wait_jobs(&mut c, "quota", 1).await.remove(0);
    force_due_target(&mut conn, "ns", "s", now - 1_000).await;
    wait_dispatched(&mut conn, "ns").await;
    let s = get(&mut c, "ns", "s").await;
    assert_eq!(
        (s.run_count, ms(&s.next_run_time)),
        (1, now - 1_000),
        "still due"
    );
    assert_eq!(jobs_of(&mut c, "quota").await.len(), 1);
    finish_job(&mut c, "quota", &first.job_id).await;
    let jobs = wait_jobs(&mut c, "quota", 2).await;
    assert!(jobs
        .iter()
        .any(|j| ms(&j.schedule.as_ref().expect("slot").due_time) == now - 1_000));
}
