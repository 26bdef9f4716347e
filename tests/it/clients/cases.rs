//! The cases of clients/conformance/cases.toml, one function each, run for every
//! client library: the setup over gRPC, the driver's part, and the checks against
//! what the service stored and what the driver printed.

use std::collections::{BTreeMap, BTreeSet};

use prost_types::Duration as PbDuration;
use serde_json::{json, Value};

use super::{
    driver::{Driver, Lang},
    server::{Runner, Server, Setup, Transport, READER_TOKEN},
};
use crate::common::*;

const NS: &str = "conf";
const Q: &str = "q";

fn ms(n: i64) -> Option<PbDuration> {
    Some(PbDuration {
        seconds: n / 1000,
        nanos: ((n % 1000) * 1_000_000) as i32,
    })
}

fn env(server: &Server) -> Vec<(&'static str, String)> {
    let mut env = server.env();
    env.push(("DUEQ_NAMESPACE", NS.into()));
    env
}

fn work(concurrency: u32, lease_ms: Option<u64>, stop_after: Option<usize>) -> Value {
    json!({"mode": "work", "queues": [Q], "concurrency": concurrency,
           "lease_ms": lease_ms, "stop_after": stop_after})
}

/// Enqueues a job with a JSON payload; `tweak` sets the other fields. Its id.
async fn put(
    c: &mut Runner,
    payload: Value,
    tweak: impl FnOnce(&mut proto::EnqueueRequest),
) -> String {
    let mut req = proto::EnqueueRequest {
        namespace: NS.into(),
        queue: Q.into(),
        name: "conf.job".into(),
        payload: payload.to_string().into_bytes(),
        ..Default::default()
    };
    tweak(&mut req);
    c.enqueue(req).await.expect("enqueue").into_inner().job_id
}

async fn get(c: &mut Runner, id: &str) -> proto::Job {
    get_in(c, NS, id).await
}

/// Job `id` of namespace `ns`, as GetJob returns it.
pub(crate) async fn get_in(c: &mut Runner, ns: &str, id: &str) -> proto::Job {
    c.get_job(proto::GetJobRequest {
        namespace: ns.into(),
        job_id: id.into(),
    })
    .await
    .expect("get job")
    .into_inner()
    .job
    .expect("job")
}

/// Waits until job `id` is in `want`; the job then.
async fn settled(c: &mut Runner, id: &str, want: proto::JobState) -> proto::Job {
    let patience = Patience::new(format!("job {id} to be {want:?}"));
    loop {
        let job = get(c, id).await;
        if state(&job) == want {
            return job;
        }
        patience.wait().await;
    }
}

/// How many `start` events each job id has.
fn starts(events: &[Value]) -> BTreeMap<String, usize> {
    let mut n = BTreeMap::new();
    for e in events.iter().filter(|e| e["event"] == "start") {
        *n.entry(e["job_id"].as_str().unwrap_or("").to_owned())
            .or_default() += 1;
    }
    n
}

fn each_once(driver_events: &[Value], ids: &[String]) {
    let n = starts(driver_events);
    for id in ids {
        assert_eq!(
            n.get(id),
            Some(&1),
            "job {id} started {:?} times: {n:?}",
            n.get(id)
        );
    }
}

fn millis(t: &Option<prost_types::Timestamp>) -> i64 {
    let t = t.as_ref().expect("timestamp");
    t.seconds * 1000 + i64::from(t.nanos) / 1_000_000
}

pub async fn acks_what_the_handler_returns(lang: Lang) {
    let server = Server::start(Setup::PLAIN).await;
    let mut c = server.client().await;
    let mut ids = Vec::new();
    for i in 0..20 {
        ids.push(put(&mut c, json!({ "i": i }), |_| {}).await);
    }
    let mut d = Driver::spawn(lang, work(4, None, Some(20)), &env(&server)).await;
    d.exit_ok().await;
    each_once(&d.events, &ids);
    for id in &ids {
        let job = settled(&mut c, id, proto::JobState::Completed).await;
        let result: Value = serde_json::from_slice(&job.result)
            .unwrap_or_else(|e| panic!("job {id}: result is not JSON ({e}): {:?}", job.result));
        assert_eq!(result, json!({"ok": true, "job_id": id}), "job {id}");
        assert_eq!(job.attempts, 1, "{job:?}");
    }
    assert_eq!(d.named("exit").len(), 1, "{:?}", d.events);
}

pub async fn a_raised_error_retries_with_backoff(lang: Lang) {
    let server = Server::start(Setup::PLAIN).await;
    let mut c = server.client().await;
    let id = put(&mut c, json!({"fail": "retry", "fail_attempts": 1}), |r| {
        r.max_attempts = Some(3);
        r.backoff = Some(proto::Backoff {
            kind: proto::BackoffKind::Fixed as i32,
            base: ms(1000),
            ..Default::default()
        });
    })
    .await;
    let mut d = Driver::spawn(lang, work(2, None, None), &env(&server)).await;
    let job = settled(&mut c, &id, proto::JobState::Completed).await;
    d.terminate_ok().await;
    assert_eq!(job.attempts, 2, "{job:?}");
    assert_eq!(job.errors.len(), 1, "{job:?}");
    assert_eq!(job.errors[0].attempt, 1, "{job:?}");
    assert!(job.errors[0].message.contains("planned failure"), "{job:?}");
    // Attempt 2 could not start before the backoff had passed (both Redis clock).
    assert!(
        millis(&job.finish_time) >= millis(&job.errors[0].time) + 1000,
        "finished before the backoff allowed: {job:?}"
    );
    let attempts: Vec<_> = d
        .named("start")
        .iter()
        .map(|e| e["attempt"].clone())
        .collect();
    assert_eq!(attempts, vec![json!(1), json!(2)], "{:?}", d.events);
}

pub async fn non_retryable_makes_the_job_dead(lang: Lang) {
    let server = Server::start(Setup::PLAIN).await;
    let mut c = server.client().await;
    let id = put(&mut c, json!({"fail": "fatal"}), |r| {
        r.max_attempts = Some(5)
    })
    .await;
    let mut d = Driver::spawn(lang, work(2, None, None), &env(&server)).await;
    let job = settled(&mut c, &id, proto::JobState::Dead).await;
    d.terminate_ok().await;
    assert_eq!(job.attempts, 1, "{job:?}");
    assert!(
        job.errors
            .iter()
            .any(|e| e.message.contains("planned fatal")),
        "{job:?}"
    );
    each_once(&d.events, &[id]);
}

pub async fn a_long_handler_has_its_lease_extended(lang: Lang) {
    let server = Server::start(Setup::PLAIN).await;
    let mut c = server.client().await;
    let id = put(&mut c, json!({"sleep_ms": 3000}), |_| {}).await;
    let mut d = Driver::spawn(lang, work(1, Some(1000), Some(1)), &env(&server)).await;
    d.exit_ok().await;
    let job = settled(&mut c, &id, proto::JobState::Completed).await;
    assert_eq!(job.attempts, 1, "the lease ran out: {job:?}");
    assert!(job.errors.is_empty(), "{job:?}");
    each_once(&d.events, &[id]);
}

pub async fn progress_and_cancel_reach_the_handler(lang: Lang) {
    let server = Server::start(Setup::PLAIN).await;
    let mut c = server.client().await;
    let payload = json!({"progress": {"fraction": 0.5, "message": "half"}, "wait_cancel": true});
    let id = put(&mut c, payload, |_| {}).await;
    let mut d = Driver::spawn(lang, work(1, Some(3000), None), &env(&server)).await;
    let patience = Patience::new(format!("job {id}'s progress to show"));
    loop {
        let job = get(&mut c, &id).await;
        if let Some(p) = &job.progress {
            assert_eq!(p.fraction, Some(0.5), "{job:?}");
            assert_eq!(p.message.as_deref(), Some("half"), "{job:?}");
            break;
        }
        patience.wait().await;
    }
    c.cancel_job(proto::CancelJobRequest {
        namespace: NS.into(),
        job_id: id.clone(),
    })
    .await
    .expect("cancel");
    let seen = d.until("cancelled", 1).await;
    assert_eq!(seen[0]["job_id"], json!(id));
    settled(&mut c, &id, proto::JobState::Cancelled).await;
    d.terminate_ok().await;
    each_once(&d.events, &[id]);
}

pub async fn sigterm_drains_in_flight_work(lang: Lang) {
    let server = Server::start(Setup::PLAIN).await;
    let mut c = server.client().await;
    let mut ids = Vec::new();
    for _ in 0..8 {
        ids.push(put(&mut c, json!({"sleep_ms": 1500}), |_| {}).await);
    }
    let mut d = Driver::spawn(lang, work(4, None, None), &env(&server)).await;
    let started: BTreeSet<String> = d
        .until("start", 4)
        .await
        .iter()
        .map(|e| e["job_id"].as_str().unwrap_or("").to_owned())
        .collect();
    d.terminate_ok().await;
    assert_eq!(started.len(), 4, "{:?}", d.events);
    assert_eq!(
        d.named("start").len(),
        4,
        "a job started after SIGTERM: {:?}",
        d.events
    );
    for id in &ids {
        let job = get(&mut c, id).await;
        if started.contains(id) {
            assert_eq!(
                state(&job),
                proto::JobState::Completed,
                "in flight at SIGTERM: {job:?}"
            );
        } else {
            assert_eq!(
                state(&job),
                proto::JobState::Pending,
                "not started: {job:?}"
            );
            assert_eq!(job.attempts, 0, "claimed during the drain: {job:?}");
        }
    }
    let mut again = Driver::spawn(lang, work(4, None, Some(4)), &env(&server)).await;
    again.exit_ok().await;
    let mut all = d.events.clone();
    all.extend(again.events.clone());
    each_once(&all, &ids);
    for id in &ids {
        settled(&mut c, id, proto::JobState::Completed).await;
    }
}

pub async fn a_service_restart_mid_stream_loses_nothing(lang: Lang) {
    let mut server = Server::start(Setup::PLAIN).await;
    let mut c = server.client().await;
    let mut ids = Vec::new();
    for _ in 0..40 {
        ids.push(put(&mut c, json!({"sleep_ms": 150}), |_| {}).await);
    }
    // A short lease: a job the dying service had just leased but not yet sent (its
    // ack-and-refill script ran, the reply never left) comes back soon.
    let mut d = Driver::spawn(lang, work(4, Some(4000), None), &env(&server)).await;
    d.until("done", 5).await;
    server.restart().await;
    let mut c = server.client().await;
    for id in &ids {
        let job = settled(&mut c, id, proto::JobState::Completed).await;
        // Only that job may have a second attempt, and only after a lease that
        // expired; the handler still ran once (each_once below).
        let lost = job.errors.iter().all(|e| e.message == "lease expired");
        assert!(
            job.attempts == 1 || (job.attempts == 2 && lost),
            "run twice: {job:?}"
        );
    }
    d.until("done", 40).await;
    d.terminate_ok().await;
    each_once(&d.events, &ids);
}

/// The driver's `call` mode: one enqueue of `payload_bytes` zero bytes to `queue`;
/// the one event it printed.
async fn call(lang: Lang, env: &[(&str, String)], queue: &str, payload_bytes: usize) -> Value {
    let params = json!({"mode": "call", "call": "enqueue", "queue": queue,
                        "payload_bytes": payload_bytes});
    let mut d = Driver::spawn(lang, params, env).await;
    d.exit_ok().await;
    let answers: Vec<_> = d
        .events
        .iter()
        .filter(|e| e["event"] == "ok" || e["event"] == "error")
        .cloned()
        .collect();
    assert_eq!(answers.len(), 1, "{:?}\n{}", d.events, d.stderr());
    answers[0].clone()
}

fn assert_error(answer: &Value, kind: &str, code: i64) {
    assert_eq!(answer["event"], "error", "{answer}");
    assert_eq!(answer["kind"], kind, "{answer}");
    assert_eq!(answer["code"], code, "{answer}");
}

pub async fn permission_denied_is_typed(lang: Lang) {
    let server = Server::start(Setup {
        transport: Transport::Plain,
        auth: true,
    })
    .await;
    let mut e = env(&server);
    e.push(("DUEQ_TOKEN", READER_TOKEN.into()));
    let answer = call(lang, &e, Q, 3).await;
    assert_error(&answer, "PermissionDenied", 7);
    let message = answer["message"].as_str().unwrap_or("");
    assert!(
        message.contains("conformance-reader"),
        "names the principal: {answer}"
    );
}

pub async fn unauthenticated_is_typed(lang: Lang) {
    let server = Server::start(Setup {
        transport: Transport::Plain,
        auth: true,
    })
    .await;
    let answer = call(lang, &env(&server), Q, 3).await;
    assert_error(&answer, "Unauthenticated", 16);
    let mut e = env(&server);
    e.push(("DUEQ_TOKEN", "not-a-token".into()));
    assert_error(&call(lang, &e, Q, 3).await, "Unauthenticated", 16);
    let mut c = server.client().await;
    let queues = c
        .list_queues(proto::ListQueuesRequest {
            namespace: NS.into(),
            ..Default::default()
        })
        .await
        .expect("list queues")
        .into_inner();
    assert!(
        queues.queues.is_empty(),
        "something was written: {queues:?}"
    );
}

async fn work_three(lang: Lang, server: &Server) {
    let mut c = server.client().await;
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(put(&mut c, json!({ "i": i }), |_| {}).await);
    }
    let mut d = Driver::spawn(lang, work(2, None, Some(3)), &env(server)).await;
    d.exit_ok().await;
    for id in &ids {
        settled(&mut c, id, proto::JobState::Completed).await;
    }
    each_once(&d.events, &ids);
}

pub async fn tls_connects(lang: Lang) {
    let server = Server::start(Setup {
        transport: Transport::Tls,
        auth: false,
    })
    .await;
    work_three(lang, &server).await;
}

pub async fn mtls_connects(lang: Lang) {
    let server = Server::start(Setup {
        transport: Transport::Mtls,
        auth: false,
    })
    .await;
    work_three(lang, &server).await;
    let without: Vec<_> = env(&server)
        .into_iter()
        .filter(|(k, _)| !k.starts_with("DUEQ_TLS_CLIENT_"))
        .collect();
    assert_error(&call(lang, &without, Q, 3).await, "Unavailable", 14);
}

pub async fn schedule_occurrences_run_once_across_two_workers(lang: Lang) {
    let server = Server::start(Setup::PLAIN).await;
    let mut c = server.client().await;
    let ids: Vec<String> = (0..8).map(|i| format!("s-{i}")).collect();
    for id in &ids {
        let mut schedule = every(id, 3600);
        schedule.overlap_policy = proto::OverlapPolicy::Skip as i32;
        c.upsert_schedule(proto::UpsertScheduleRequest {
            namespace: NS.into(),
            schedule: Some(schedule),
        })
        .await
        .expect("upsert");
    }
    let params = json!({"mode": "schedules", "concurrency": 2, "stop_after": null});
    let mut one = Driver::spawn(lang, params.clone(), &env(&server)).await;
    let mut two = Driver::spawn(lang, params, &env(&server)).await;
    // Both run before the first trigger: the second may get no occurrence at all,
    // and its SIGTERM must then find a worker, not a process still starting.
    one.until("ready", 1).await;
    two.until("ready", 1).await;
    let mut triggered = BTreeSet::new();
    for id in &ids {
        let answer = c
            .trigger_schedule(proto::TriggerScheduleRequest {
                namespace: NS.into(),
                id: id.clone(),
                ignore_overlap: true,
            })
            .await
            .expect("trigger")
            .into_inner();
        triggered.insert(answer.occurrence_id);
    }
    let patience = Patience::new("both workers to print every triggered occurrence");
    let printed = loop {
        let mut printed = BTreeMap::<String, usize>::new();
        for e in one
            .named("occurrence")
            .iter()
            .chain(two.named("occurrence").iter())
        {
            let id = e["occurrence_id"].as_str().unwrap_or("").to_owned();
            *printed.entry(id).or_default() += 1;
        }
        if triggered.iter().all(|id| printed.contains_key(id)) {
            break printed;
        }
        patience.wait().await;
    };
    one.terminate_ok().await;
    two.terminate_ok().await;
    for (id, n) in &printed {
        assert_eq!(*n, 1, "occurrence {id} ran {n} times: {printed:?}");
    }
    // Acked: under OVERLAP_POLICY_SKIP a trigger is refused while an occurrence of
    // the schedule is still leased.
    for id in &ids {
        c.trigger_schedule(proto::TriggerScheduleRequest {
            namespace: NS.into(),
            id: id.clone(),
            ignore_overlap: false,
        })
        .await
        .unwrap_or_else(|e| panic!("schedule {id}: an occurrence is still leased: {e}"));
    }
}

pub async fn bad_input_is_refused_before_sending(lang: Lang) {
    // Nothing listens there: a call that went out would be Unavailable.
    let e = vec![
        ("DUEQ_ADDR", format!("http://127.0.0.1:{}", free_port())),
        ("DUEQ_NAMESPACE", NS.into()),
    ];
    let empty = call(lang, &e, "", 3).await;
    assert_error(&empty, "InvalidArgument", 3);
    assert!(
        empty["message"].as_str().unwrap_or("").contains("queue"),
        "{empty}"
    );
    let big = call(lang, &e, Q, 1024 * 1024 + 1).await;
    assert_error(&big, "InvalidArgument", 3);
    assert!(
        big["message"].as_str().unwrap_or("").contains("payload"),
        "{big}"
    );
}

/// A DEAD job of queue "dead-q", for the produce mode's retry.
async fn dead_job(c: &mut Runner) -> String {
    let id = put(c, json!({}), |r| {
        r.queue = "dead-q".into();
        r.max_attempts = Some(1);
    })
    .await;
    let mut claim = claim_req(&["dead-q"], 0, None);
    claim.namespace = NS.into();
    let leased = c.claim_job(claim).await.expect("claim").into_inner().jobs;
    assert_eq!(leased.len(), 1, "{leased:?}");
    c.fail_job(proto::FailJobRequest {
        namespace: NS.into(),
        job_id: id.clone(),
        lease_token: leased[0].lease_token.clone(),
        error: "made dead".into(),
        ..Default::default()
    })
    .await
    .expect("fail");
    settled(c, &id, proto::JobState::Dead).await;
    id
}

pub async fn the_producer_api_stores_what_it_says(lang: Lang) {
    let server = Server::start(Setup::PLAIN).await;
    let mut c = server.client().await;
    let dead = dead_job(&mut c).await;
    let params = json!({"mode": "produce", "queue": Q, "dead_job_id": dead});
    let mut d = Driver::spawn(lang, params, &env(&server)).await;
    d.exit_ok().await;
    let calls = d.named("call");
    let names: Vec<&str> = calls
        .iter()
        .map(|e| e["call"].as_str().unwrap_or(""))
        .collect();
    let want = [
        "enqueue",
        "enqueue_json",
        "enqueue_json",
        "enqueue_batch",
        "get_job",
        "cancel",
        "retry",
        "upsert_schedule",
        "get_schedule",
        "list_schedules",
        "pause_schedule",
        "resume_schedule",
        "trigger_schedule",
        "delete_schedule",
    ];
    assert_eq!(names, want, "{:?}", d.events);
    let by = |i: usize| calls[i].clone();
    assert_eq!(by(0)["job_id"], "p-1");
    assert_eq!(
        (by(1)["duplicate"].clone(), by(2)["duplicate"].clone()),
        (json!(false), json!(true))
    );
    assert_eq!(by(1)["job_id"], by(2)["job_id"], "{:?}", d.events);
    assert_eq!(by(3)["job_ids"], json!(["b-1", "b-2", "b-3"]));
    assert_eq!(
        (by(4)["priority"].clone(), by(4)["max_attempts"].clone()),
        (json!(5), json!(7))
    );
    assert_eq!(by(4)["headers"], json!({"h": "v"}));
    assert_eq!(by(8)["id"], "s-1");
    assert!(
        by(9)["ids"]
            .as_array()
            .is_some_and(|ids| ids.contains(&json!("s-1"))),
        "{:?}",
        by(9)
    );
    assert_eq!(
        (by(10)["paused"].clone(), by(11)["paused"].clone()),
        (json!(true), json!(false))
    );
    assert!(
        by(12)["occurrence_id"]
            .as_str()
            .is_some_and(|s| !s.is_empty()),
        "{:?}",
        by(12)
    );

    let p1 = get(&mut c, "p-1").await;
    assert_eq!(state(&p1), proto::JobState::Cancelled, "{p1:?}");
    assert_eq!(
        (p1.payload.as_slice(), p1.priority, p1.max_attempts),
        (&b"raw"[..], 5, 7)
    );
    assert_eq!(p1.headers.get("h").map(String::as_str), Some("v"));
    let backoff = p1.backoff.expect("backoff");
    assert_eq!(
        backoff.kind,
        proto::BackoffKind::Exponential as i32,
        "{p1:?}"
    );
    assert_eq!(backoff.base.map(|b| b.seconds), Some(2), "{p1:?}");
    assert!(
        millis(&p1.run_at) >= millis(&p1.create_time) + 59_000,
        "delay 60 s: {p1:?}"
    );
    let json_id = by(1)["job_id"].as_str().unwrap_or("").to_owned();
    let deduped = get(&mut c, &json_id).await;
    assert_eq!(deduped.dedup_key, "d-1");
    let payload: Value = serde_json::from_slice(&deduped.payload).expect("a JSON payload");
    assert_eq!(payload, json!({"n": 1}));
    for b in ["b-1", "b-2", "b-3"] {
        assert_eq!(
            state(&get(&mut c, b).await),
            proto::JobState::Pending,
            "{b}"
        );
    }
    assert_eq!(
        state(&get(&mut c, &dead).await),
        proto::JobState::Pending,
        "retried"
    );
    let gone = c
        .get_schedule(proto::GetScheduleRequest {
            namespace: NS.into(),
            id: "s-1".into(),
        })
        .await
        .expect_err("deleted");
    assert_eq!(gone.code(), tonic::Code::NotFound);
}

/// The driver's events named `call` with `"call": name`, in order.
fn calls(d: &mut Driver, name: &str) -> Vec<Value> {
    d.named("call")
        .into_iter()
        .filter(|e| e["call"] == name)
        .collect()
}

/// The handler's `start` event of node `reference` of flow `flow`.
fn started(d: &mut Driver, flow: &str, reference: &str) -> Value {
    let seen: Vec<Value> = d
        .named("start")
        .into_iter()
        .filter(|e| e["flow_id"] == flow && e["flow_ref"] == reference)
        .collect();
    assert_eq!(seen.len(), 1, "{flow}/{reference} started: {:?}", d.events);
    seen[0].clone()
}

/// Every node of flow `flow` (one page: these flows are small), by ref.
async fn flow_nodes(c: &mut Runner, flow: &str) -> BTreeMap<String, proto::FlowNodeStatus> {
    let reply = c
        .get_flow(proto::GetFlowRequest {
            namespace: NS.into(),
            flow_id: flow.into(),
            ..Default::default()
        })
        .await
        .expect("get flow")
        .into_inner();
    reply
        .nodes
        .into_iter()
        .map(|n| (n.r#ref.clone(), n))
        .collect()
}

fn node_state(nodes: &BTreeMap<String, proto::FlowNodeStatus>, r: &str) -> proto::JobState {
    proto::JobState::try_from(nodes[r].state).expect("a state")
}

pub async fn flow_dependencies(lang: Lang) {
    let server = Server::start(Setup::PLAIN).await;
    let mut c = server.client().await;
    let params = json!({"mode": "flow", "queue": Q, "concurrency": 2});
    let mut d = Driver::spawn(lang, params, &env(&server)).await;
    d.exit_ok().await;
    let enqueued = calls(&mut d, "enqueue_flow");
    let ids: Vec<&str> = enqueued
        .iter()
        .filter_map(|e| e["flow_id"].as_str())
        .collect();
    assert_eq!(ids, ["f-ok", "f-fail", "f-cancel"], "{:?}", d.events);
    // The job ids by ref are the stored nodes'.
    for e in &enqueued {
        let flow = e["flow_id"].as_str().unwrap_or("");
        assert_eq!(e["outcome"], "CREATED", "{e}");
        let stored = flow_nodes(&mut c, flow).await;
        let printed: BTreeMap<String, String> =
            serde_json::from_value(e["job_ids"].clone()).expect("job_ids by ref");
        let want: BTreeMap<String, String> = stored
            .iter()
            .map(|(r, n)| (r.clone(), n.job_id.clone()))
            .collect();
        assert_eq!(printed, want, "{flow}");
    }
    // a -> (b, c) -> d: each ran once, after its dependencies, seeing their results.
    let ok = flow_nodes(&mut c, "f-ok").await;
    for r in ["a", "b", "c", "d"] {
        assert_eq!(node_state(&ok, r), proto::JobState::Completed, "f-ok/{r}");
    }
    let b = started(&mut d, "f-ok", "b");
    assert_eq!(b["results"], json!({"a": {"ref": "a"}}), "{b}");
    let top = started(&mut d, "f-ok", "d");
    assert_eq!(top["job_id"], json!(ok["d"].job_id), "{top}");
    assert_eq!(
        top["results"],
        json!({"b": {"ref": "b"}, "c": {"ref": "c"}}),
        "{top}"
    );
    assert_eq!(
        top["dependencies"],
        json!([{"ref": "b", "job_id": ok["b"].job_id, "state": "COMPLETED"},
               {"ref": "c", "job_id": ok["c"].job_id, "state": "COMPLETED"}]),
        "{top}"
    );
    check_the_failed_flow(&mut c, &mut d).await;
    check_the_other_calls(&mut c, &mut d).await;
}

/// f-fail: a fails non-retryable; x (CANCEL) ends CANCELLED naming a without
/// running, y (RUN) runs and sees a DEAD; then RetryFlow re-armed a and x.
async fn check_the_failed_flow(c: &mut Runner, d: &mut Driver) {
    let y = started(d, "f-fail", "y");
    let failed = flow_nodes(c, "f-fail").await;
    assert_eq!(
        y["dependencies"],
        json!([{"ref": "a", "job_id": failed["a"].job_id, "state": "DEAD"}]),
        "{y}"
    );
    assert_eq!(y["results"], json!({}), "{y}");
    assert!(
        !d.named("start")
            .iter()
            .any(|e| e["flow_id"] == "f-fail" && e["flow_ref"] == "x"),
        "x ran: {:?}",
        d.events
    );
    let shown: Vec<Value> = calls(d, "get_flow");
    assert_eq!(shown.len(), 2, "{:?}", d.events);
    assert_eq!(
        (&shown[0]["flow_id"], &shown[0]["state"]),
        (&json!("f-ok"), &json!("COMPLETED"))
    );
    assert_eq!(
        (&shown[1]["flow_id"], &shown[1]["state"]),
        (&json!("f-fail"), &json!("FAILED"))
    );
    let x = shown[1]["nodes"]
        .as_array()
        .and_then(|n| n.iter().find(|n| n["ref"] == "x"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        (&x["state"], &x["failed_dependency"], &x["after"]),
        (&json!("CANCELLED"), &json!("a"), &json!(["a"])),
        "{x}"
    );
    let retried = calls(d, "retry_flow");
    assert_eq!(retried.len(), 1, "{:?}", d.events);
    assert_eq!(
        (&retried[0]["state"], &retried[0]["failed"]),
        (&json!("RUNNING"), &json!(0))
    );
    let now = flow_nodes(c, "f-fail").await;
    assert_eq!(node_state(&now, "a"), proto::JobState::Pending, "{now:?}");
    assert_eq!(node_state(&now, "x"), proto::JobState::Waiting, "{now:?}");
    assert_eq!(node_state(&now, "y"), proto::JobState::Completed, "{now:?}");
}

/// CancelFlow ended both nodes of f-cancel; a node after an unknown ref was
/// InvalidArgument naming it, and nothing was stored.
async fn check_the_other_calls(c: &mut Runner, d: &mut Driver) {
    let cancelled = calls(d, "cancel_flow");
    assert_eq!(cancelled.len(), 1, "{:?}", d.events);
    assert_eq!(
        (
            &cancelled[0]["state"],
            &cancelled[0]["unfinished"],
            &cancelled[0]["failed"]
        ),
        (&json!("FAILED"), &json!(0), &json!(2)),
        "{:?}",
        cancelled[0]
    );
    let nodes = flow_nodes(c, "f-cancel").await;
    for r in ["a", "b"] {
        assert_eq!(
            node_state(&nodes, r),
            proto::JobState::Cancelled,
            "f-cancel/{r}"
        );
    }
    let refused = d.named("error");
    assert_eq!(refused.len(), 1, "{:?}", d.events);
    assert_error(&refused[0], "InvalidArgument", 3);
    let message = refused[0]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("nodes[0]") && message.contains("nope"),
        "{message}"
    );
    let gone = c
        .get_flow(proto::GetFlowRequest {
            namespace: NS.into(),
            flow_id: "f-bad".into(),
            ..Default::default()
        })
        .await
        .expect_err("not stored");
    assert_eq!(gone.code(), tonic::Code::NotFound);
}
