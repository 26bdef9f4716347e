//! Routing on a cluster: a namespace's slot moved to another master (MOVED is
//! followed), and scripts flushed from a node (NOSCRIPT reloads them there).

use deadpool_redis::redis::aio::MultiplexedConnection;

use crate::common::*;

use super::basics::cluster_config;

async fn myid(conn: &mut MultiplexedConnection) -> String {
    cmd("CLUSTER")
        .arg("MYID")
        .query_async(conn)
        .await
        .expect("CLUSTER MYID")
}

/// Moves the slot of `key` from its master to another one, keys and all, as
/// `redis-cli --cluster reshard` does; returns the new master's port.
async fn move_slot(cluster: &Cluster, key: &str) -> u16 {
    let from = cluster.master_of(key).await;
    let to = *cluster
        .master_ports()
        .await
        .iter()
        .find(|p| **p != from)
        .expect("another master");
    let mut src = cluster.conn_to(from).await;
    let mut dst = cluster.conn_to(to).await;
    let slot: u16 = cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query_async(&mut src)
        .await
        .expect("KEYSLOT");
    let (src_id, dst_id) = (myid(&mut src).await, myid(&mut dst).await);
    let setslot = |state: &str, id: &str| {
        cmd("CLUSTER")
            .arg("SETSLOT")
            .arg(slot)
            .arg(state)
            .arg(id)
            .to_owned()
    };
    let _: () = setslot("IMPORTING", &src_id)
        .query_async(&mut dst)
        .await
        .expect("IMPORTING");
    let _: () = setslot("MIGRATING", &dst_id)
        .query_async(&mut src)
        .await
        .expect("MIGRATING");
    loop {
        let keys: Vec<String> = cmd("CLUSTER")
            .arg("GETKEYSINSLOT")
            .arg(slot)
            .arg(100)
            .query_async(&mut src)
            .await
            .expect("GETKEYSINSLOT");
        if keys.is_empty() {
            break;
        }
        let _: () = cmd("MIGRATE")
            .arg("127.0.0.1")
            .arg(to)
            .arg("")
            .arg(0)
            .arg(5000)
            .arg("KEYS")
            .arg(&keys)
            .query_async(&mut src)
            .await
            .expect("MIGRATE");
    }
    for port in cluster.master_ports().await {
        let mut conn = cluster.conn_to(port).await;
        let _: () = setslot("NODE", &dst_id)
            .query_async(&mut conn)
            .await
            .expect("SETSLOT NODE");
    }
    to
}

/// Pins: after the namespace's slot moves to another master under a running
/// service, its calls go on (the client follows MOVED) and see the moved data.
#[tokio::test]
async fn calls_follow_a_namespace_whose_slot_moved_to_another_master() {
    let cluster = Cluster::start().await;
    let service = Service::start_with(cluster_config(&cluster)).await;
    let mut c = service.client().await;
    let before = enqueue(&mut c, job("q", "before")).await.job_id;
    let to = move_slot(&cluster, "dueq:{ns}:meta").await;
    let patience = Patience::new("the slot move to be seen by every master");
    while cluster.master_of("dueq:{ns}:meta").await != to {
        patience.wait().await;
    }
    let after = enqueue(&mut c, job("q", "after")).await.job_id;
    let first = claim_job(&mut c, &["q"], 0, None).await.expect("a job");
    let second = claim_job(&mut c, &["q"], 0, None).await.expect("another");
    assert_eq!((first.job_id, second.job_id), (before, after));
    let mut conn = cluster.conn_to(to).await;
    assert!(exists(&mut conn, "dueq:{ns}:meta").await, "the keys moved");
}

/// Pins: functions flushed from every node (as on a node that restarted or a replica
/// promoted without them) are loaded again on the node that answered "Function not
/// found", and the call succeeds.
#[tokio::test]
async fn a_node_without_the_scripts_gets_them_again() {
    let cluster = Cluster::start().await;
    let service = Service::start_with(cluster_config(&cluster)).await;
    let mut c = service.client().await;
    enqueue(&mut c, job("q", "a")).await;
    // Functions are replicated: a replica refuses FUNCTION FLUSH (READONLY) and
    // follows its master's.
    for node in &cluster.nodes {
        let mut conn = node.conn().await;
        let flushed: Result<(), _> = cmd("FUNCTION").arg("FLUSH").query_async(&mut conn).await;
        if let Err(e) = flushed {
            assert!(
                e.to_string().contains("read only replica"),
                "FUNCTION FLUSH: {e}"
            );
        }
    }
    let id = enqueue(&mut c, job("q", "b")).await.job_id;
    assert!(!id.is_empty());
    let mut conn = cluster
        .conn_to(cluster.master_of("dueq:{ns}:meta").await)
        .await;
    let libraries: Vec<deadpool_redis::redis::Value> = cmd("FUNCTION")
        .arg("LIST")
        .arg("LIBRARYNAME")
        .arg("dueq_job_*")
        .query_async(&mut conn)
        .await
        .expect("FUNCTION LIST");
    assert_eq!(
        libraries.len(),
        1,
        "the enqueue function's library is back on its master"
    );
}
