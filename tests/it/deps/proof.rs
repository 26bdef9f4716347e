//! The proof (issue 34): random flows run by workers that ack, fail and abandon jobs
//! while a second service over the same Redis is killed and restarted; every flow
//! ends, no node runs before its dependencies finished or completes twice, and each
//! rule holds.
//!
//! `DUEQ_FLOW_PROOF_DAGS` sets how many flows (default 150, well under a minute on two
//! busy cores); the full run is
//! `DUEQ_FLOW_PROOF_DAGS=10000 cargo test --release --test it deps::proof -- --nocapture`.
//! `DUEQ_FLOW_PROOF_SEED` repeats a run (each run prints its seed).

use std::{
    collections::{BTreeMap, HashMap},
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Arc, Mutex,
    },
};

use super::*;
use proto::{DependencyFailure as Rule, JobState as S};

const QUEUES: [&str; 4] = ["p0", "p1", "p2", "p3"];
const LEASE_MS: u64 = 300;

/// xorshift64*: enough randomness for shapes and choices, reproducible by seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A random DAG of 1-100 nodes over the four queues, each node after up to 3 earlier
/// ones, random rules and 1-3 attempts.
fn random_dag(rng: &mut Rng) -> Vec<proto::FlowNode> {
    let n = 1 + rng.below(100) as usize;
    let mut nodes: Vec<proto::FlowNode> = Vec::with_capacity(n);
    for i in 0..n {
        let queue = QUEUES[rng.below(4) as usize];
        let mut after: Vec<String> = Vec::new();
        if i > 0 {
            for _ in 0..rng.below(4) {
                let d = format!("n{}", rng.below(i as u64));
                if !after.contains(&d) {
                    after.push(d);
                }
            }
        }
        let refs: Vec<&str> = after.iter().map(String::as_str).collect();
        let rule = [Rule::Cancel, Rule::Run, Rule::Skip][rng.below(3) as usize];
        let mut node = node_with(&format!("n{i}"), queue, &refs, rule);
        let job = node.job.as_mut().expect("job");
        job.max_attempts = Some(1 + rng.below(3) as u32);
        job.backoff = Some(proto::Backoff {
            kind: proto::BackoffKind::Fixed as i32,
            base: Some(dur(1)),
            cap: Some(dur(5)),
            ..Default::default()
        });
        nodes.push(node);
    }
    nodes
}

/// What the workers saw.
#[derive(Default)]
struct Seen {
    /// Successful acks by job id.
    completed: HashMap<String, u32>,
    claims: usize,
    violations: Vec<String>,
}

/// Checks a claim: every dependency is listed and finished, ok unless the node's rule
/// is RUN.
fn check_claim(job: &proto::ClaimedJob, rules: &HashMap<String, (i32, usize)>) -> Option<String> {
    let Some((rule, deps)) = rules.get(&job.job_id) else {
        return Some(format!("{}: not a node of a flow stored", job.job_id));
    };
    if job.dependencies.len() != *deps {
        return Some(format!(
            "{}: {} of {deps} dependencies",
            job.job_id,
            job.dependencies.len()
        ));
    }
    let run = *rule == Rule::Run as i32;
    for d in &job.dependencies {
        let ok = d.state == S::Completed as i32 || d.state == S::Skipped as i32;
        let failed = d.state == S::Dead as i32 || d.state == S::Cancelled as i32;
        if !(ok || run && failed) {
            return Some(format!(
                "{}/{} claimed while dependency {} is {:?}",
                job.flow_id,
                job.flow_ref,
                d.r#ref,
                S::try_from(d.state)
            ));
        }
    }
    None
}

/// A worker: claims batches from the four queues through `endpoint` (reconnecting
/// when its service goes away) and acks, fails or abandons each job at random.
async fn worker(
    endpoint: Arc<Mutex<String>>,
    seed: u64,
    rules: Arc<Mutex<HashMap<String, (i32, usize)>>>,
    seen: Arc<Mutex<Seen>>,
    stop: Arc<AtomicBool>,
) {
    let mut rng = Rng(seed | 1);
    let mut client: Option<Client> = None;
    while !stop.load(Ordering::Acquire) {
        let Some(c) = client.as_mut() else {
            let at = endpoint.lock().expect("lock").clone();
            client = connect_to(&at).await;
            continue;
        };
        let Ok(reply) = c
            .claim_job(proto::ClaimJobRequest {
                max_jobs: 8,
                ..claim_req(&QUEUES, 200, Some(LEASE_MS))
            })
            .await
        else {
            client = None;
            continue;
        };
        for job in reply.into_inner().jobs {
            let violation = check_claim(&job, &rules.lock().expect("lock"));
            {
                let mut seen = seen.lock().expect("lock");
                seen.claims += 1;
                seen.violations.extend(violation);
            }
            if !act(c, &mut rng, &job).await {
                continue;
            }
            *seen
                .lock()
                .expect("lock")
                .completed
                .entry(job.job_id)
                .or_default() += 1;
        }
    }
}

/// A client of the service at `endpoint`, or None while it is away (the caller tries
/// again; the patience of the whole test bounds it).
async fn connect_to(endpoint: &str) -> Option<Client> {
    let channel = tonic::transport::Channel::from_shared(endpoint.to_owned())
        .expect("endpoint")
        .connect()
        .await;
    match channel {
        Ok(channel) => Some(proto::queue_service_client::QueueServiceClient::new(
            channel,
        )),
        Err(_) => {
            Patience::new("a service to connect to").wait().await;
            None
        }
    }
}

/// Acks (55%), fails retryable (20%), fails for good (10%) or abandons (15%) `job`;
/// true when an ack succeeded.
async fn act(c: &mut Client, rng: &mut Rng, job: &proto::ClaimedJob) -> bool {
    let roll = rng.below(100);
    if roll < 55 {
        return ack_job(c, &job.job_id, &job.lease_token).await.is_ok();
    }
    if roll < 85 {
        let _ = c
            .fail_job(proto::FailJobRequest {
                namespace: "ns".into(),
                job_id: job.job_id.clone(),
                lease_token: job.lease_token.clone(),
                error: "proof".into(),
                non_retryable: roll >= 75,
                ..Default::default()
            })
            .await;
    }
    false
}

/// Checks flow `flow` at its end: each rule held for each node, the counts agree.
fn check_flow(flow: &proto::GetFlowResponse, violations: &mut Vec<String>) {
    let states: BTreeMap<&str, i32> = flow
        .nodes
        .iter()
        .map(|n| (n.r#ref.as_str(), n.state))
        .collect();
    let failed_state = |s: i32| s == S::Dead as i32 || s == S::Cancelled as i32;
    let mut failed = 0;
    for n in &flow.nodes {
        let failed_deps: Vec<&str> = n
            .after
            .iter()
            .map(String::as_str)
            .filter(|d| failed_state(states[d]))
            .collect();
        failed += u32::from(failed_state(n.state));
        let ran = n.state == S::Completed as i32 || n.state == S::Dead as i32;
        let ok = if failed_deps.is_empty() || n.on_dependency_failure == Rule::Run as i32 {
            ran && n.attempts >= 1
        } else {
            let want = if n.on_dependency_failure == Rule::Skip as i32 {
                S::Skipped
            } else {
                S::Cancelled
            };
            n.state == want as i32 && failed_deps.contains(&n.failed_dependency.as_str())
        };
        if !ok {
            violations.push(format!(
                "{}/{}: {:?} (rule {}, failed deps {failed_deps:?}, failed_dependency {:?})",
                flow.flow_id,
                n.r#ref,
                S::try_from(n.state),
                n.on_dependency_failure,
                n.failed_dependency
            ));
        }
    }
    let want = if failed > 0 {
        proto::FlowState::Failed
    } else {
        proto::FlowState::Completed
    };
    if (flow.state, flow.failed) != (want as i32, failed) {
        violations.push(format!(
            "{}: state {} failed {}",
            flow.flow_id, flow.state, flow.failed
        ));
    }
}

/// Kills and restarts service B (its pruner and drains cut mid-way, a worker of its
/// own reconnecting) each time the workers made 100 more claims, until `stop`.
async fn chaos(
    redis_url: String,
    endpoint: Arc<Mutex<String>>,
    seen: Arc<Mutex<Seen>>,
    stop: Arc<AtomicBool>,
) -> usize {
    let mut restarts = 0;
    while !stop.load(Ordering::Acquire) {
        let b = Service::start_with(proof_config(&redis_url)).await;
        *endpoint.lock().expect("lock") = b.endpoint();
        let from = seen.lock().expect("lock").claims;
        let patience = Patience::new("100 more claims");
        while !stop.load(Ordering::Acquire) && seen.lock().expect("lock").claims < from + 100 {
            patience.wait().await;
        }
        b.kill();
        restarts += 1;
    }
    restarts
}

fn proof_config(redis_url: &str) -> dueq::config::ServeConfig {
    let mut config = config(redis_url);
    config.job_prune_interval = std::time::Duration::from_millis(100);
    config
}

/// Waits until no flow runs: a bounded wait for each next flow to end (progress
/// resets the patience), not for all of them.
async fn wait_all_ended(c: &mut Client, flows: &[String]) -> Vec<proto::GetFlowResponse> {
    let mut ended: BTreeMap<String, proto::GetFlowResponse> = BTreeMap::new();
    let mut patience = Patience::new("the next flow to end");
    while ended.len() < flows.len() {
        let before = ended.len();
        let open: Vec<&String> = flows.iter().filter(|f| !ended.contains_key(*f)).collect();
        for f in open {
            let flow = get_flow(c, f).await.expect("GetFlow");
            if flow.state != proto::FlowState::Running as i32 {
                ended.insert(f.clone(), flow);
            }
        }
        if ended.len() > before {
            patience = Patience::new(format!(
                "the next flow to end ({} of {})",
                ended.len(),
                flows.len()
            ));
        } else {
            patience.wait().await;
        }
    }
    ended.into_values().collect()
}

/// Pins the proof: random DAGs (up to 100 nodes, 4 queues, every rule) run
/// by workers that ack, fail retryable, fail for good and abandon (300 ms leases),
/// over two services on one Redis, one killed and restarted on a loop: every flow
/// ends, no node is claimed before its dependencies finished (ok ones unless its rule
/// is RUN), none completes twice, and each rule is seen to hold at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_flows_end_in_order_under_failures_and_a_crashing_service() {
    let dags = env_number("DUEQ_FLOW_PROOF_DAGS", 150) as usize;
    let seed = env_number("DUEQ_FLOW_PROOF_SEED", uuid::Uuid::new_v4().as_u64_pair().0);
    println!("flow proof: {dags} DAGs, DUEQ_FLOW_PROOF_SEED={seed}");
    let redis = Redis::start().await;
    let a = Service::start_with(proof_config(&redis.url())).await;
    let mut c = a.client().await;
    let rules: Arc<Mutex<HashMap<String, (i32, usize)>>> = Arc::default();
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let stable = Arc::new(Mutex::new(a.endpoint()));
    let crashing = Arc::new(Mutex::new(a.endpoint()));
    let chaos = tokio::spawn(chaos(
        redis.url(),
        crashing.clone(),
        seen.clone(),
        stop.clone(),
    ));
    let mut workers = Vec::new();
    for w in 0..5u64 {
        let endpoint = if w == 4 {
            crashing.clone()
        } else {
            stable.clone()
        };
        workers.push(tokio::spawn(worker(
            endpoint,
            seed ^ ((w + 1) * 0x9E37_79B9),
            rules.clone(),
            seen.clone(),
            stop.clone(),
        )));
    }
    let mut rng = Rng(seed | 1);
    let mut flows = Vec::with_capacity(dags);
    let nodes_total = AtomicUsize::new(0);
    for i in 0..dags {
        let id = format!("proof-{i}");
        let mut nodes = random_dag(&mut rng);
        nodes_total.fetch_add(nodes.len(), Ordering::Relaxed);
        // Known before the flow is stored, so every claim is checked.
        for n in &mut nodes {
            let job_id = format!("{id}-{}", n.r#ref);
            rules
                .lock()
                .expect("lock")
                .insert(job_id.clone(), (n.on_dependency_failure, n.after.len()));
            n.job.as_mut().expect("job").job_id = job_id;
        }
        enqueue_flow(&mut c, &id, nodes).await.expect("EnqueueFlow");
        flows.push(id);
    }
    let ended = wait_all_ended(&mut c, &flows).await;
    stop.store(true, Ordering::Release);
    for w in workers {
        w.await.expect("worker");
    }
    let restarts = chaos.await.expect("chaos");
    let seen = seen.lock().expect("lock");
    let mut violations = seen.violations.clone();
    for flow in &ended {
        check_flow(flow, &mut violations);
    }
    violations.extend(
        seen.completed
            .iter()
            .filter(|(_, n)| **n > 1)
            .map(|(id, n)| format!("{id} completed {n} times")),
    );
    println!(
        "flow proof: {} flows, {} nodes, {} claims, {} completed, {restarts} restarts of B",
        ended.len(),
        nodes_total.load(Ordering::Relaxed),
        seen.claims,
        seen.completed.len()
    );
    assert!(
        violations.is_empty(),
        "{} violations: {:?}",
        violations.len(),
        &violations[..violations.len().min(20)]
    );
}
