//! Jobs stored but not listed under their number (issue 29 item 14): two
//! redis-servers appending to one AOF (two `dueq dev` runs on one data folder) left
//! a namespace whose queue counted jobs that ListJobs never showed and no claim
//! reached, and a Migrate dry run reported nothing.

use std::collections::BTreeSet;

use crate::common::*;

/// Pins issue 29 item 14 (Migrate): a dry run of a current namespace reports every
/// job record the listing does not name under its number, naming the job, its
/// number and what the listing holds there, and writes nothing. Here the second
/// store's jobs took the first store's numbers in the listing, as two servers
/// numbering one queue from 1 do.
#[tokio::test]
async fn a_dry_run_reports_jobs_stored_but_not_listed() {
    let redis = Redis::start().await;
    let service = Service::start_with(config_without_background_work(&redis.url())).await;
    let mut c = service.client().await;
    let mut admin = admin(&service).await;
    let mut conn = redis.conn().await;
    for id in ["a1", "a2", "a3", "b1", "b2", "b3"] {
        let mut req = job("q", "j");
        req.job_id = id.into();
        enqueue(&mut c, req).await;
    }
    let clean = migrate_done(
        &mut admin,
        proto::MigrateRequest {
            dry_run: true,
            ..migrate_req("ns")
        },
    )
    .await;
    assert!(clean.problems.is_empty(), "{clean:?}");

    // b1..b3 (numbers 4..6) also under numbers 1..3, where a1..a3 were.
    for (n, id) in [(1, "b1"), (2, "b2"), (3, "b3")] {
        let _: () = query(
            &mut conn,
            cmd("HSET").arg("dueq:{ns}:lb:0:q").arg(n).arg(id),
        )
        .await;
    }
    let before = snapshot(&mut conn).await;

    let done = migrate_done(
        &mut admin,
        proto::MigrateRequest {
            dry_run: true,
            ..migrate_req("ns")
        },
    )
    .await;
    let reported: BTreeSet<&str> = done.problems.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(
        reported,
        BTreeSet::from(["a1", "a2", "a3"]),
        "{:#?}",
        done.problems
    );
    let a1 = done
        .problems
        .iter()
        .find(|p| p.id == "a1")
        .expect("a1 reported");
    assert!(
        a1.reason.contains("not listed")
            && a1.reason.contains("job number 1 of queue q")
            && a1.reason.contains("job b1"),
        "{}",
        a1.reason
    );
    assert_eq!(
        snapshot(&mut conn).await,
        before,
        "a dry run writes nothing"
    );
    let listed: BTreeSet<String> = list_all_jobs(&mut c, "ns", "q", 100)
        .await
        .into_iter()
        .map(|j| j.job_id)
        .collect();
    assert_eq!(
        listed,
        ["b1", "b2", "b3"].map(String::from).into(),
        "6 jobs stored, 3 listed (ListJobs drops the entries that name a job of another number)"
    );
}
