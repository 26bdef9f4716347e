//! WatchJob on Redis Cluster (issue 30): a replica's one job-changes subscription,
//! on one node, hears the announcements of namespaces whose slots live on the other
//! masters (a PUBLISH, from a script too, reaches every node over the cluster bus).

use crate::{cluster::basics::cluster_config, common::*};

/// Subscriptions (PSUBSCRIBE patterns) on each master, by port.
async fn patterns(cluster: &Cluster) -> Vec<(u16, i64)> {
    let mut out = Vec::new();
    for port in cluster.master_ports().await {
        let mut conn = cluster.conn_to(port).await;
        out.push((
            port,
            query::<i64>(&mut conn, cmd("PUBSUB").arg("NUMPAT")).await,
        ));
    }
    out
}

#[tokio::test]
async fn a_watcher_hears_changes_of_namespaces_on_every_master() {
    let cluster = Cluster::start().await;
    let a = Service::start_with(cluster_config(&cluster)).await;
    let b = Service::start_with(cluster_config(&cluster)).await;
    let (mut ca, mut cb) = (a.client().await, b.client().await);
    let namespaces: Vec<String> = (0..8).map(|i| format!("tenant-{i}")).collect();
    let mut streams = Vec::new();
    for ns in &namespaces {
        let mut req = job("q", "watched");
        req.namespace = ns.clone();
        let id = enqueue(&mut cb, req).await.job_id;
        let mut stream = ca
            .watch_job(proto::WatchJobRequest {
                namespace: ns.clone(),
                job_id: id,
                after_version: 0,
                view: 0,
            })
            .await
            .expect("WatchJob")
            .into_inner();
        let first = within_patience("the first version", stream.message())
            .await
            .expect("healthy")
            .and_then(|m| m.job)
            .expect("the job");
        streams.push((ns, stream, first.version));
    }
    // A's one subscription is on one node; some namespaces live on the others.
    let patience = Patience::new("instance A's job-changes subscription");
    let subscribed = loop {
        let by_master = patterns(&cluster).await;
        if by_master.iter().map(|(_, n)| n).sum::<i64>() == 1 {
            break by_master;
        }
        patience.wait().await;
    };
    let mut elsewhere = 0;
    for (ns, mut stream, version) in streams {
        let master = cluster.master_of(&format!("dueq:{{{ns}}}:meta")).await;
        if subscribed.contains(&(master, 0)) {
            elsewhere += 1;
        }
        let mut claim = claim_req(&["q"], 0, None);
        claim.namespace = ns.clone();
        cb.claim_job(claim).await.expect("claim");
        let changed = within_patience("the change", stream.message())
            .await
            .expect("healthy")
            .and_then(|m| m.job)
            .expect("the job");
        assert!(changed.version > version, "{ns}: {changed:?}");
        assert_eq!(state(&changed), proto::JobState::Active, "{ns}");
    }
    assert!(
        elsewhere > 0,
        "every namespace on the subscribed node: {subscribed:?}"
    );
}

/// Pins: in sentinel mode the subscription is on the master the sentinels name, and
/// a change made through another instance reaches the watcher.
#[tokio::test]
async fn a_watcher_hears_changes_through_the_sentinels_master() {
    let setup = Sentinels::start().await;
    let config = || crate::cluster::sentinel::sentinel_config(&setup.url());
    let a = Service::start_with(config()).await;
    let b = Service::start_with(config()).await;
    let (mut ca, mut cb) = (a.client().await, b.client().await);
    let id = enqueue(&mut cb, job("q", "watched")).await.job_id;
    let mut stream = ca
        .watch_job(proto::WatchJobRequest {
            namespace: "ns".into(),
            job_id: id,
            after_version: 0,
            view: 0,
        })
        .await
        .expect("WatchJob")
        .into_inner();
    let first = within_patience("the first version", stream.message())
        .await
        .expect("healthy")
        .and_then(|m| m.job)
        .expect("the job");
    let mut master = setup.master.conn().await;
    let patience = Patience::new("instance A's subscription on the master");
    while query::<i64>(&mut master, cmd("PUBSUB").arg("NUMPAT")).await != 1 {
        patience.wait().await;
    }
    claim_job(&mut cb, &["q"], 0, None).await.expect("claimed");
    let changed = within_patience("the change", stream.message())
        .await
        .expect("healthy")
        .and_then(|m| m.job)
        .expect("the job");
    assert!(changed.version > first.version);
    assert_eq!(state(&changed), proto::JobState::Active);
}
