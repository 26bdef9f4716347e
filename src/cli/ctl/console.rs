//! `dueq workers` (ListWorkers) and `dueq audit` (ListAuditEvents): what the
//! console's Workers and Audit pages show (issue 33), as tables.

use dueq::{
    config::ctl::{AuditArgs, WorkersArgs},
    proto,
};
use serde_json::json;

use super::{
    connect::connect,
    render::{self, emit},
    Failure,
};

fn kind_name(kind: i32) -> &'static str {
    match proto::WorkerKind::try_from(kind) {
        Ok(proto::WorkerKind::Work) => "work",
        Ok(proto::WorkerKind::ClaimJob) => "claim_job",
        Ok(proto::WorkerKind::ClaimDueSchedule) => "claim_due_schedule",
        _ => "unknown",
    }
}

fn worker_json(w: &proto::WorkerInfo) -> serde_json::Value {
    json!({
        "worker_id": w.worker_id,
        "kind": kind_name(w.kind),
        "queues": w.queues,
        "capacity": w.capacity,
        "in_flight": w.in_flight,
        "connected_since": render::time_json(&w.connected_since),
        "replica": w.replica,
        "last_seen": render::time_json(&w.last_seen),
    })
}

fn lease_json(l: &proto::LeaseInfo) -> serde_json::Value {
    json!({
        "job_id": l.job_id,
        "queue": l.queue,
        "worker_id": l.worker_id,
        "lease_deadline": render::time_json(&l.lease_deadline),
    })
}

pub(crate) async fn workers(args: WorkersArgs) -> Result<(), Failure> {
    let mut client = connect(&args.client, true).await?;
    let limit = args.limit as usize;
    let mut workers = Vec::new();
    let mut leases = Vec::new();
    let mut token = String::new();
    let more = loop {
        let page = client
            .list_workers(proto::ListWorkersRequest {
                namespace: args.namespace.clone(),
                page_size: (limit - workers.len()).min(1000) as u32,
                page_token: token,
            })
            .await?
            .into_inner();
        workers.extend(page.workers);
        leases.extend(page.expiring_leases);
        token = page.next_page_token;
        if token.is_empty() {
            break false;
        }
        if workers.len() >= limit {
            break true;
        }
    };
    workers.truncate(limit);
    let doc = json!({
        "namespace": args.namespace,
        "workers": workers.iter().map(worker_json).collect::<Vec<_>>(),
        "expiring_leases": leases.iter().map(lease_json).collect::<Vec<_>>(),
        "more": more,
    });
    emit(args.client.output, doc, || {
        let mut table = render::table(&[
            "WORKER",
            "KIND",
            "QUEUES",
            "IN FLIGHT",
            "CONNECTED SINCE",
            "REPLICA",
        ]);
        for w in &workers {
            table.add_row(vec![
                render::or_dash(&w.worker_id),
                kind_name(w.kind).into(),
                render::or_dash(&w.queues.join(",")),
                format!("{}/{}", w.in_flight, w.capacity),
                render::time_cell(&w.connected_since),
                w.replica.clone(),
            ]);
        }
        let mut text = table.to_string();
        if more {
            text.push_str(&format!(
                "\nmore workers follow; raise --limit (now {limit}) to see them"
            ));
        }
        let mut soonest = render::table(&["JOB ID", "QUEUE", "WORKER", "LEASE DEADLINE"]);
        for l in &leases {
            soonest.add_row(vec![
                l.job_id.clone(),
                l.queue.clone(),
                render::or_dash(&l.worker_id),
                render::time_cell(&l.lease_deadline),
            ]);
        }
        text.push_str("\n\nleases ending soonest:\n");
        text.push_str(&soonest.to_string());
        text
    });
    Ok(())
}

pub(crate) async fn audit(args: AuditArgs) -> Result<(), Failure> {
    let mut client = connect(&args.client, true).await?;
    let limit = args.limit as usize;
    let mut events = Vec::new();
    let mut token = String::new();
    let more = loop {
        let page = client
            .list_audit_events(proto::ListAuditEventsRequest {
                namespace: args.namespace.clone(),
                page_size: (limit - events.len()).min(1000) as u32,
                page_token: token,
            })
            .await?
            .into_inner();
        events.extend(page.events);
        token = page.next_page_token;
        if token.is_empty() {
            break false;
        }
        if events.len() >= limit {
            break true;
        }
    };
    events.truncate(limit);
    let doc = json!({
        "namespace": args.namespace,
        "events": events.iter().map(|e| json!({
            "time": render::time_json(&e.time),
            "principal": e.principal,
            "method": e.method,
            "target": e.target,
            "outcome": e.outcome,
            "via": e.via,
        })).collect::<Vec<_>>(),
        "more": more,
    });
    emit(args.client.output, doc, || {
        let mut table = render::table(&["TIME", "PRINCIPAL", "METHOD", "TARGET", "OUTCOME", "VIA"]);
        for e in &events {
            table.add_row(vec![
                render::time_cell(&e.time),
                e.principal.clone(),
                e.method.clone(),
                render::or_dash(&e.target),
                e.outcome.clone(),
                e.via.clone(),
            ]);
        }
        let mut text = table.to_string();
        if more {
            text.push_str(&format!(
                "\nolder records follow; raise --limit (now {limit}) to see them"
            ));
        }
        text
    });
    Ok(())
}
