//! The concurrency and crash tests of a single Redis, over a 3-master cluster.

use crate::{common::*, jobs::crash, schedules::concurrency};

use super::basics::cluster_config;

/// Pins: two instances x 64 claimers over a cluster, 2,000 due schedules: every
/// occurrence is handed out exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_instances_64_claimers_2000_due_each_claimed_exactly_once_on_a_cluster() {
    let cluster = Cluster::start().await;
    let conn = cluster
        .conn_to(cluster.master_of("dueq:{ns}:due").await)
        .await;
    concurrency::two_instances_claim_each_due_occurrence_once(cluster_config(&cluster), conn).await;
}

/// Pins: the jobs crash test (two instances, workers that ack, fail, abandon and
/// extend at random) over a cluster: every job ends completed or dead exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_job_ends_completed_or_dead_exactly_once_on_a_cluster() {
    let cluster = Cluster::start().await;
    let conn = cluster
        .conn_to(cluster.master_of("dueq:{ns}:jdone").await)
        .await;
    crash::crash_test(cluster_config(&cluster), conn, 3_000).await;
}
