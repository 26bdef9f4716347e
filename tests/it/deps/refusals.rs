//! A flow refused stores nothing: bad shapes, sizes and fields (INVALID_ARGUMENT
//! naming the node), a job id already taken (FAILED_PRECONDITION, also when found by
//! a later part of a large flow), and the namespace's job quota (RESOURCE_EXHAUSTED).

use tonic::Code;

use super::*;

/// Enqueues `nodes` as flow `flow_id`, expects `code` whose message holds each of
/// `names`, and that nothing of the flow was stored.
async fn refused(
    redis: &Redis,
    c: &mut Client,
    flow_id: &str,
    nodes: Vec<proto::FlowNode>,
    code: Code,
    names: &[&str],
) {
    // (a job taken before the flow stays: only the flow's own ids must be absent)
    let ids: Vec<String> = ids_of(&nodes)
        .into_iter()
        .filter(|id| id != "taken-id")
        .collect();
    let status = enqueue_flow(c, flow_id, nodes)
        .await
        .expect_err(&format!("{flow_id} is refused"));
    assert_eq!(status.code(), code, "{flow_id}: {status:?}");
    for name in names {
        assert!(
            status.message().contains(name),
            "{flow_id}: {name:?} not in {:?}",
            status.message()
        );
    }
    assert_nothing_stored(redis, c, flow_id, &ids).await;
}

fn with_job(
    mut n: proto::FlowNode,
    edit: impl FnOnce(&mut proto::EnqueueRequest),
) -> proto::FlowNode {
    edit(n.job.as_mut().expect("job"));
    n
}

/// Pins: a cycle, an unknown ref, a duplicate ref, a self edge and a ref twice in
/// `after` are INVALID_ARGUMENT naming the node (index, ref and field), nothing stored.
#[tokio::test]
async fn a_bad_shape_is_refused_naming_the_node_and_nothing_is_stored() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let bad = Code::InvalidArgument;
    let cases: Vec<(&str, Vec<proto::FlowNode>, Vec<&str>)> = vec![
        (
            "f-cycle",
            vec![
                node_id("root", "q", &[], "cy-root"),
                node_id("a", "q", &["root", "b"], "cy-a"),
                node_id("b", "q", &["a"], "cy-b"),
            ],
            vec!["nodes[1] (ref \"a\").after", "cycle"],
        ),
        (
            "f-unknown",
            vec![
                node_id("a", "q", &[], "un-a"),
                node_id("b", "q", &["a", "nope"], "un-b"),
            ],
            vec!["nodes[1] (ref \"b\").after[1]", "nope"],
        ),
        (
            "f-dupref",
            vec![
                node_id("a", "q", &[], "dr-a"),
                node_id("a", "q", &[], "dr-b"),
            ],
            vec!["nodes[1] (ref \"a\").ref"],
        ),
        (
            "f-self",
            vec![node_id("a", "q", &["a"], "se-a")],
            vec!["nodes[0] (ref \"a\").after[0]", "itself"],
        ),
        (
            "f-twice",
            vec![
                node_id("a", "q", &[], "tw-a"),
                node_id("b", "q", &["a", "a"], "tw-b"),
            ],
            vec!["nodes[1] (ref \"b\").after[1]", "twice"],
        ),
    ];
    for (flow_id, nodes, names) in cases {
        refused(&redis, &mut c, flow_id, nodes, bad, &names).await;
    }
}

/// Pins: an empty ref, a 129-byte ref, 0 and 1,001 nodes, and 10,001 edges are
/// INVALID_ARGUMENT (naming the node, or `nodes` for the counts), nothing stored; 128
/// bytes and 1,000 nodes pass.
#[tokio::test]
async fn sizes_beyond_the_limits_are_refused_and_nothing_is_stored() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let bad = Code::InvalidArgument;
    let long = "r".repeat(129);
    let cases: Vec<(&str, Vec<proto::FlowNode>, Vec<&str>)> = vec![
        (
            "f-empty-ref",
            vec![
                node_id("a", "q", &[], "er-a"),
                node_id("", "q", &[], "er-b"),
            ],
            vec!["nodes[1].ref", "1-128 bytes"],
        ),
        (
            "f-long-ref",
            vec![node_id(&long, "q", &[], "lr-a")],
            vec!["nodes[0].ref", "got 129"],
        ),
        ("f-none", vec![], vec!["nodes", "got 0"]),
        (
            "f-1001",
            (0..1001)
                .map(|i| node_id(&format!("n{i}"), "q", &[], &format!("big-{i}")))
                .collect(),
            vec!["nodes", "got 1001"],
        ),
        ("f-edges", edges(10_001), vec!["nodes", "got 10001"]),
    ];
    for (flow_id, nodes, names) in cases {
        refused(&redis, &mut c, flow_id, nodes, bad, &names).await;
    }
    let longest = "r".repeat(128);
    enqueue_flow(&mut c, "f-ok", vec![node(&longest, "q", &[])])
        .await
        .expect("a 128-byte ref");
    let stored = enqueue_flow(&mut c, "f-10000", edges(10_000))
        .await
        .expect("10,000 edges");
    assert_eq!(stored.job_ids.len(), 200);
}

/// 200 nodes, the last 100 each after the first 100 (10,000 edges), plus edges beyond
/// 10,000 from the last node to the second hundred's first ones.
fn edges(total: usize) -> Vec<proto::FlowNode> {
    let firsts: Vec<String> = (0..100).map(|i| format!("a{i}")).collect();
    let mut nodes: Vec<proto::FlowNode> = firsts
        .iter()
        .map(|r| node_id(r, "q", &[], &format!("ed{total}-{r}")))
        .collect();
    for i in 0..100 {
        let r = format!("b{i}");
        let mut n = node_id(&r, "q", &[], &format!("ed{total}-{r}"));
        n.after = firsts.clone();
        nodes.push(n);
    }
    for extra in 0..total - 10_000 {
        let to = format!("b{extra}");
        nodes[199].after.push(to);
    }
    nodes
}

/// Pins: a node's dedup_key, retention, other namespace, unknown rule, missing job and
/// a bad job field are INVALID_ARGUMENT naming the node and its field, nothing stored.
#[tokio::test]
async fn a_bad_node_field_is_refused_naming_the_node_and_nothing_is_stored() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let bad = Code::InvalidArgument;
    let ok = || node_id("ok", "q", &[], "fld-ok");
    let cases: Vec<(&str, proto::FlowNode, &str)> = vec![
        (
            "f-dedup",
            with_job(node_id("x", "q", &[], "fld-x1"), |j| {
                j.dedup_key = "k".into()
            }),
            "nodes[1] (ref \"x\").job.dedup_key",
        ),
        (
            "f-retention",
            with_job(node_id("x", "q", &[], "fld-x2"), |j| {
                j.retention = Some(proto::JobRetention::default())
            }),
            "nodes[1] (ref \"x\").job.retention",
        ),
        (
            "f-namespace",
            with_job(node_id("x", "q", &[], "fld-x3"), |j| {
                j.namespace = "other".into()
            }),
            "nodes[1] (ref \"x\").job.namespace",
        ),
        (
            "f-rule",
            proto::FlowNode {
                on_dependency_failure: 42,
                ..node_id("x", "q", &["ok"], "fld-x4")
            },
            "nodes[1] (ref \"x\").on_dependency_failure",
        ),
        (
            "f-nojob",
            proto::FlowNode {
                job: None,
                ..node("x", "q", &[])
            },
            "nodes[1] (ref \"x\").job",
        ),
        (
            "f-queue",
            with_job(node_id("x", "q", &[], "fld-x6"), |j| {
                j.queue = String::new()
            }),
            "nodes[1] (ref \"x\").job.queue",
        ),
    ];
    for (flow_id, bad_node, name) in cases {
        refused(&redis, &mut c, flow_id, vec![ok(), bad_node], bad, &[name]).await;
    }
}

/// Pins: a node whose job id is taken is FAILED_PRECONDITION naming the node, nothing
/// of the flow stored and the taken job untouched — in a small flow, and at node 150
/// of a 200-node flow (stored in parts; the first part checks every id).
#[tokio::test]
async fn a_taken_job_id_is_refused_naming_the_node_and_nothing_is_stored() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut taken = job("other", "taken");
    taken.job_id = "taken-id".into();
    enqueue(&mut c, taken).await;
    let small = vec![
        node_id("a", "q", &[], "sm-a"),
        node_id("b", "q", &["a"], "taken-id"),
    ];
    let pre = Code::FailedPrecondition;
    refused(
        &redis,
        &mut c,
        "f-small",
        small,
        pre,
        &["\"b\"", "taken-id"],
    )
    .await;
    let mut large = chain(200, "lg");
    large[150].job.as_mut().expect("job").job_id = "taken-id".into();
    refused(
        &redis,
        &mut c,
        "f-large",
        large,
        pre,
        &["\"n150\"", "taken-id"],
    )
    .await;
    let kept = get_job(&mut c, "taken-id").await;
    assert_eq!(
        (kept.queue.as_str(), state(&kept)),
        ("other", proto::JobState::Pending)
    );
    assert!(queue_info(&mut c, "q").await.is_none_or(|q| q.pending == 0));
}

/// Pins: a job id found taken by a later part of a large flow (two nodes of one flow
/// with one id: node 10's part writes it, node 150's part finds it) refuses the flow
/// FAILED_PRECONDITION naming node 150, and the parts already written are deleted
/// again (abort_flow): nothing of the flow stays, the waiting count is back to 0.
#[tokio::test]
async fn a_taken_id_found_by_a_later_part_deletes_the_parts_written() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut nodes = chain(200, "lp");
    nodes[10].job.as_mut().expect("job").job_id = "twice-id".into();
    nodes[150].job.as_mut().expect("job").job_id = "twice-id".into();
    refused(
        &redis,
        &mut c,
        "f-later",
        nodes,
        Code::FailedPrecondition,
        &["\"n150\"", "twice-id"],
    )
    .await;
    assert_eq!(job_records(&redis).await, 0);
    let after = enqueue_flow(&mut c, "f-later", chain(200, "lp"))
        .await
        .expect("the flow id is free again");
    assert_eq!(after.outcome(), proto::EnqueueOutcome::Created);
}

/// A chain of `n` nodes n0 → n1 → …, job ids `<prefix>-<i>`.
pub fn chain(n: usize, prefix: &str) -> Vec<proto::FlowNode> {
    (0..n)
        .map(|i| {
            let r = format!("n{i}");
            let before = format!("n{}", i.saturating_sub(1));
            let after: Vec<&str> = if i == 0 {
                vec![]
            } else {
                vec![before.as_str()]
            };
            node_id(&r, "q", &after, &format!("{prefix}-{i}"))
        })
        .collect()
}

/// Pins: a flow that would take the namespace past --max-jobs-per-namespace is
/// RESOURCE_EXHAUSTED and stores nothing (a large one too); one that fits is stored.
#[tokio::test]
async fn a_flow_past_the_job_quota_is_refused_and_nothing_is_stored() {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.max_jobs_per_namespace = 100;
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    for i in 0..50 {
        enqueue(&mut c, job("other", &format!("j{i}"))).await;
    }
    let exhausted = Code::ResourceExhausted;
    refused(&redis, &mut c, "f-quota", chain(51, "qa"), exhausted, &[]).await;
    refused(&redis, &mut c, "f-quota2", chain(200, "qb"), exhausted, &[]).await;
    assert_eq!(job_records(&redis).await, 50);
    let fits = enqueue_flow(&mut c, "f-fits", chain(50, "qc"))
        .await
        .expect("50 more fit");
    assert_eq!(fits.job_ids.len(), 50);
}
