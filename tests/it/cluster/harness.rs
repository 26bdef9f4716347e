//! The harness itself: a cluster whose slots are served by three masters, each with a
//! replica in sync, and a sentinel setup whose sentinels all know the master.

use crate::common::{cmd, Cluster, Sentinels};

#[tokio::test]
async fn a_cluster_has_three_masters_each_with_a_replica() {
    let cluster = Cluster::start().await;
    let masters = cluster.master_ports().await;
    assert_eq!(masters.len(), 3, "{masters:?}");
    for port in masters {
        let mut conn = cluster.conn_to(port).await;
        let info: String = cmd("INFO")
            .arg("replication")
            .query_async(&mut conn)
            .await
            .expect("INFO");
        assert!(info.contains("connected_slaves:1"), "{info}");
    }
}

#[tokio::test]
async fn a_sentinel_setup_names_its_master() {
    let setup = Sentinels::start().await;
    assert_eq!(setup.master_port().await, setup.master.port);
}
