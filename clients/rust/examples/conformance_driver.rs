//! The Rust client's conformance driver (clients/conformance/README.md): one mode
//! per run, its parameters as one JSON argument, its connection only from the
//! `DUEQ_*` environment; one JSON event per line on stdout.
//!
//!     cargo run -p dueq-client --example conformance_driver -- '{"mode":"work","queues":["q"],"concurrency":4}'

use std::{
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use dueq_client::{
    proto, ActiveJob, Backoff, Client, Config, DependencyFailure, FlowNode, HandlerError, Job,
    NonRetryable, Occurrence, Output, Progress, Schedule, ScheduleWorker, Worker,
};
use serde_json::{json, Value};

type Failure = Box<dyn std::error::Error>;

/// One event, on its own line (Rust's stdout flushes at each newline).
fn emit(event: Value) {
    println!("{event}");
}

#[tokio::main]
async fn main() {
    let params: Value = match std::env::args().nth(1).map(|a| serde_json::from_str(&a)) {
        Some(Ok(params)) => params,
        _ => {
            eprintln!("usage: conformance_driver '<json params>'");
            std::process::exit(2);
        }
    };
    let result = match params["mode"].as_str().unwrap_or("") {
        "work" => work(&params).await,
        "schedules" => schedules(&params).await,
        "produce" => produce(&params).await,
        "call" => call(&params).await,
        "bench" => bench(&params).await,
        "flow" => flow(&params).await,
        other => Err(format!("unknown mode {other:?}").into()),
    };
    if let Err(e) = result {
        eprintln!("conformance_driver: {e}");
        std::process::exit(1);
    }
}

async fn connect() -> Result<Client, Failure> {
    Ok(Client::connect(Config::from_env()?).await?)
}

fn queues(params: &Value) -> Vec<String> {
    params["queues"]
        .as_array()
        .map(|q| {
            q.iter()
                .filter_map(|q| q.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn concurrency(params: &Value) -> usize {
    params["concurrency"].as_u64().unwrap_or(1) as usize
}

/// Calls `stop` once `stop_after` handlers have returned (never without it).
#[derive(Clone)]
struct StopAfter {
    done: Arc<AtomicU64>,
    after: Option<u64>,
    stop: dueq_client::StopHandle,
}

impl StopAfter {
    fn returned(&self) {
        let done = self.done.fetch_add(1, Ordering::SeqCst) + 1;
        if self.after == Some(done) {
            self.stop.stop();
        }
    }
}

async fn work(params: &Value) -> Result<(), Failure> {
    let client = connect().await?;
    let stopper: Arc<Mutex<Option<StopAfter>>> = Arc::default();
    let slot = stopper.clone();
    let mut worker = Worker::new(client, queues(params), move |job: ActiveJob| {
        let stopper = slot.lock().ok().and_then(|s| s.clone());
        async move {
            let outcome = handle(job).await;
            if let Some(stopper) = stopper {
                stopper.returned();
            }
            outcome
        }
    })
    .concurrency(concurrency(params))
    .on_ready(|| emit(json!({"event": "ready"})));
    if let Some(ms) = params["lease_ms"].as_u64() {
        worker = worker.lease(Duration::from_millis(ms));
    }
    let stop = StopAfter {
        done: Arc::default(),
        after: params["stop_after"].as_u64(),
        stop: worker.stop_handle(),
    };
    *stopper.lock().map_err(|_| "poisoned")? = Some(stop);
    worker.run().await?;
    emit(json!({"event": "exit"}));
    Ok(())
}

/// The work mode's handler: what the payload asks for.
async fn handle(job: ActiveJob) -> Result<Output, HandlerError> {
    emit(
        json!({"event": "start", "job_id": job.id(), "attempt": job.attempt(), "name": job.name()}),
    );
    let asks: Value = job.json()?;
    if asks["progress"].is_object() {
        job.progress(Progress::from_json(&asks["progress"]));
    }
    if let Some(ms) = asks["sleep_ms"].as_u64() {
        #[allow(clippy::disallowed_methods)] // the job's own work: it takes this long
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    if asks["wait_cancel"] == json!(true) {
        job.cancelled().cancelled().await;
        emit(json!({"event": "cancelled", "job_id": job.id()}));
        return Err(HandlerError::msg("cancelled"));
    }
    match asks["fail"].as_str() {
        Some("retry")
            if u64::from(job.attempt()) <= asks["fail_attempts"].as_u64().unwrap_or(1) =>
        {
            return Err(HandlerError::msg("planned failure"));
        }
        Some("fatal") => return Err(NonRetryable::new("planned fatal").into()),
        _ => {}
    }
    emit(json!({"event": "done", "job_id": job.id()}));
    Output::json(&json!({"ok": true, "job_id": job.id()}))
}

async fn schedules(params: &Value) -> Result<(), Failure> {
    let client = connect().await?;
    let stopper: Arc<Mutex<Option<StopAfter>>> = Arc::default();
    let slot = stopper.clone();
    let worker = ScheduleWorker::new(client, move |occurrence: Occurrence| {
        let stopper = slot.lock().ok().and_then(|s| s.clone());
        async move {
            emit(json!({
                "event": "occurrence",
                "occurrence_id": occurrence.occurrence_id(),
                "schedule_id": occurrence.schedule_id(),
            }));
            if let Some(stopper) = stopper {
                stopper.returned();
            }
            Ok::<_, HandlerError>(())
        }
    })
    .concurrency(concurrency(params))
    .on_ready(|| emit(json!({"event": "ready"})));
    let stop = StopAfter {
        done: Arc::default(),
        after: params["stop_after"].as_u64(),
        stop: worker.stop_handle(),
    };
    *stopper.lock().map_err(|_| "poisoned")? = Some(stop);
    worker.run().await?;
    emit(json!({"event": "exit"}));
    Ok(())
}

fn call_event(name: &str, fields: Value) -> Value {
    let mut event = json!({"event": "call", "call": name});
    if let (Some(e), Some(f)) = (event.as_object_mut(), fields.as_object()) {
        e.extend(f.clone());
    }
    event
}

async fn produce(params: &Value) -> Result<(), Failure> {
    let client = connect().await?;
    let queue = params["queue"].as_str().unwrap_or("q");
    produce_jobs(&client, queue, params["dead_job_id"].as_str().unwrap_or("")).await?;
    produce_schedules(&client).await
}

async fn produce_jobs(client: &Client, queue: &str, dead_job_id: &str) -> Result<(), Failure> {
    let job = Job::new(queue, "raw", b"raw".to_vec())
        .priority(5)
        .delay(Duration::from_secs(60))
        .job_id("p-1")
        .header("h", "v")
        .max_attempts(7)
        .backoff(Backoff::exponential(
            Duration::from_secs(2),
            Duration::from_secs(3600),
        ));
    let e = client.enqueue(job).await?;
    emit(call_event(
        "enqueue",
        json!({"job_id": e.job_id, "duplicate": e.is_duplicate()}),
    ));
    for _ in 0..2 {
        let job =
            Job::json(queue, "json", &json!({"n": 1})).dedup("d-1", Duration::from_secs(3600));
        let e = client.enqueue(job).await?;
        emit(call_event(
            "enqueue_json",
            json!({"job_id": e.job_id, "duplicate": e.is_duplicate()}),
        ));
    }
    let batch =
        ["b-1", "b-2", "b-3"].map(|id| Job::json(queue, "batch", &json!({"id": id})).job_id(id));
    let mut ids = Vec::new();
    for item in client.enqueue_batch(batch).await? {
        ids.push(item?.job_id);
    }
    emit(call_event("enqueue_batch", json!({"job_ids": ids})));
    let job = client.get_job("p-1").await?;
    emit(call_event(
        "get_job",
        json!({"job_id": job.job_id, "state": job.state().as_str_name(), "priority": job.priority,
               "max_attempts": job.max_attempts, "headers": job.headers}),
    ));
    let job = client.cancel("p-1").await?;
    emit(call_event(
        "cancel",
        json!({"job_id": job.job_id, "state": job.state().as_str_name()}),
    ));
    let job = client.retry(dead_job_id).await?;
    emit(call_event(
        "retry",
        json!({"job_id": job.job_id, "state": job.state().as_str_name()}),
    ));
    Ok(())
}

async fn produce_schedules(client: &Client) -> Result<(), Failure> {
    let schedule = Schedule::every("s-1", Duration::from_secs(3600))
        .job_name("tick")
        .json(&json!({"s": 1}));
    let up = client.upsert_schedule(schedule).await?;
    emit(call_event(
        "upsert_schedule",
        json!({"id": up.schedule.id, "created": up.created}),
    ));
    let s = client.get_schedule("s-1").await?;
    emit(call_event(
        "get_schedule",
        json!({"id": s.id, "payload": String::from_utf8_lossy(&s.payload)}),
    ));
    let ids: Vec<String> = client
        .list_schedules()
        .await?
        .into_iter()
        .map(|s| s.id)
        .collect();
    emit(call_event("list_schedules", json!({"ids": ids})));
    let s = client.pause_schedule("s-1").await?;
    emit(call_event(
        "pause_schedule",
        json!({"id": s.id, "paused": s.status() == dueq_client::proto::ScheduleStatus::Paused}),
    ));
    let s = client.resume_schedule("s-1").await?;
    emit(call_event(
        "resume_schedule",
        json!({"id": s.id, "paused": s.status() == dueq_client::proto::ScheduleStatus::Paused}),
    ));
    let t = client.trigger_schedule("s-1").await?;
    emit(call_event(
        "trigger_schedule",
        json!({"id": "s-1", "occurrence_id": t.occurrence_id}),
    ));
    client.delete_schedule("s-1").await?;
    emit(call_event("delete_schedule", json!({"id": "s-1"})));
    Ok(())
}

async fn call(params: &Value) -> Result<(), Failure> {
    let client = connect().await?;
    let queue = params["queue"].as_str().unwrap_or("");
    let size = params["payload_bytes"].as_u64().unwrap_or(0) as usize;
    match client
        .enqueue(Job::new(queue, "call", vec![0u8; size]))
        .await
    {
        Ok(e) => emit(json!({"event": "ok", "job_id": e.job_id})),
        Err(e) => emit(json!({
            "event": "error",
            "kind": e.kind().name(),
            "code": e.code() as i32,
            "message": e.message(),
        })),
    }
    Ok(())
}

/// A job state's name without its prefix (`COMPLETED`).
fn state_name(state: proto::JobState) -> &'static str {
    let name = state.as_str_name();
    name.strip_prefix("JOB_STATE_").unwrap_or(name)
}

fn flow_state_name(state: proto::FlowState) -> &'static str {
    let name = state.as_str_name();
    name.strip_prefix("FLOW_STATE_").unwrap_or(name)
}

/// A node of the flow mode: job `flow.<ref>` of `queue`, a JSON payload.
fn flow_node(queue: &str, reference: &str, after: &[&str], payload: Value) -> FlowNode {
    let job = Job::json(queue, format!("flow.{reference}"), &payload);
    FlowNode::new(reference, job).after(after.iter().copied())
}

async fn flow(params: &Value) -> Result<(), Failure> {
    let client = connect().await?;
    let q = params["queue"].as_str().unwrap_or("q");
    let delayed = Job::json(q, "flow.a", &json!({})).delay(Duration::from_secs(3600));
    let flows = [
        (
            "f-ok",
            vec![
                flow_node(q, "a", &[], json!({})),
                flow_node(q, "b", &["a"], json!({})),
                flow_node(q, "c", &["a"], json!({})),
                flow_node(q, "d", &["b", "c"], json!({})),
            ],
        ),
        (
            "f-fail",
            vec![
                flow_node(q, "a", &[], json!({"fail": "fatal"})),
                flow_node(q, "x", &["a"], json!({})),
                flow_node(q, "y", &["a"], json!({})).on_dependency_failure(DependencyFailure::Run),
            ],
        ),
        (
            "f-cancel",
            vec![
                FlowNode::new("a", delayed),
                flow_node(q, "b", &["a"], json!({})),
            ],
        ),
    ];
    for (flow_id, nodes) in flows {
        let r = client.enqueue_flow(nodes, Some(flow_id)).await?;
        let outcome = r
            .outcome
            .as_str_name()
            .trim_start_matches("ENQUEUE_OUTCOME_");
        emit(call_event(
            "enqueue_flow",
            json!({"flow_id": r.flow_id, "outcome": outcome, "job_ids": r.job_ids}),
        ));
    }
    let c = client.cancel_flow("f-cancel").await?;
    emit(call_event(
        "cancel_flow",
        json!({"state": flow_state_name(c.state()), "unfinished": c.unfinished, "failed": c.failed}),
    ));
    match client
        .enqueue_flow([flow_node(q, "a", &["nope"], json!({}))], Some("f-bad"))
        .await
    {
        Ok(_) => emit(json!({"event": "ok", "call": "enqueue_flow"})),
        Err(e) => emit(json!({
            "event": "error", "call": "enqueue_flow", "kind": e.kind().name(),
            "code": e.code() as i32, "message": e.message(),
        })),
    }
    flow_worker(&client, params).await?;
    for flow_id in ["f-ok", "f-fail"] {
        let f = client.get_flow(flow_id).await?;
        let nodes: Vec<Value> = f
            .nodes
            .iter()
            .map(|n| {
                json!({
                    "ref": n.r#ref, "job_id": n.job_id, "state": state_name(n.state()),
                    "after": n.after, "failed_dependency": n.failed_dependency,
                })
            })
            .collect();
        emit(call_event(
            "get_flow",
            json!({"flow_id": f.flow_id, "state": flow_state_name(f.state()), "nodes": nodes}),
        ));
    }
    let r = client.retry_flow("f-fail").await?;
    emit(call_event(
        "retry_flow",
        json!({"state": flow_state_name(r.state()), "unfinished": r.unfinished, "failed": r.failed}),
    ));
    Ok(())
}

/// Works the flow mode's six runnable nodes, printing what each handler sees.
async fn flow_worker(client: &Client, params: &Value) -> Result<(), Failure> {
    let stopper: Arc<Mutex<Option<StopAfter>>> = Arc::default();
    let slot = stopper.clone();
    let queue = params["queue"].as_str().unwrap_or("q").to_owned();
    let worker = Worker::new(client.clone(), [queue], move |job: ActiveJob| {
        let stopper = slot.lock().ok().and_then(|s| s.clone());
        async move {
            let outcome = handle_node(job);
            if let Some(stopper) = stopper {
                stopper.returned();
            }
            outcome
        }
    })
    .concurrency(params["concurrency"].as_u64().unwrap_or(2) as usize)
    .on_ready(|| emit(json!({"event": "ready"})));
    let stop = StopAfter {
        done: Arc::default(),
        after: Some(6),
        stop: worker.stop_handle(),
    };
    *stopper.lock().map_err(|_| "poisoned")? = Some(stop);
    worker.run().await?;
    Ok(())
}

/// The flow mode's handler: prints the node's flow, dependencies and their results.
fn handle_node(job: ActiveJob) -> Result<Output, HandlerError> {
    let dependencies: Vec<Value> = job
        .dependencies()
        .iter()
        .map(|d| json!({"ref": d.r#ref, "job_id": d.job_id, "state": state_name(d.state())}))
        .collect();
    let mut results = serde_json::Map::new();
    for reference in job.dependency_results().keys() {
        if let Some(value) = job.dependency_json::<Value>(reference) {
            results.insert(reference.clone(), value?);
        }
    }
    emit(json!({
        "event": "start", "job_id": job.id(), "flow_id": job.flow_id(), "flow_ref": job.flow_ref(),
        "dependencies": dependencies, "results": results,
    }));
    let asks: Value = job.json()?;
    if asks["fail"] == "fatal" {
        return Err(NonRetryable::new("planned fatal").into());
    }
    Output::json(&json!({"ref": job.flow_ref()}))
}

/// A no-op worker that stops after `jobs` handlers returned; the time from the
/// first job handed over to the last ack answered (run's return), and the
/// process's CPU time.
async fn bench(params: &Value) -> Result<(), Failure> {
    let client = connect().await?;
    let jobs = params["jobs"].as_u64().unwrap_or(1000);
    let first: Arc<Mutex<Option<Instant>>> = Arc::default();
    let done = Arc::new(AtomicU64::new(0));
    let stop: Arc<std::sync::OnceLock<dueq_client::StopHandle>> = Arc::default();
    let worker = Worker::new(client, queues(params), {
        let (first, done, stop) = (first.clone(), done.clone(), stop.clone());
        move |_job: ActiveJob| {
            let n = done.fetch_add(1, Ordering::Relaxed) + 1;
            if n == 1 {
                if let Ok(mut first) = first.lock() {
                    first.get_or_insert_with(Instant::now);
                }
            }
            if n == jobs {
                if let Some(stop) = stop.get() {
                    stop.stop();
                }
            }
            std::future::ready(Ok(Output::none()))
        }
    })
    .concurrency(concurrency(params));
    let _ = stop.set(worker.stop_handle());
    worker.run().await?;
    let started = first
        .lock()
        .map_err(|_| "poisoned")?
        .unwrap_or_else(Instant::now);
    emit(json!({
        "event": "bench",
        "jobs": done.load(Ordering::Relaxed),
        "seconds": started.elapsed().as_secs_f64(),
        "cpu_seconds": cpu_seconds(),
    }));
    Ok(())
}

/// User + system CPU time of this process so far.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into the struct it is given and reads nothing else.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}
