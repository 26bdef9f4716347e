//! ClaimDueSchedule latency against the number of schedules stored: nothing due,
//! and exactly one due. Schedules are seeded straight into Redis (see seed.rs).

use std::time::Instant;

use dueq::proto;

use crate::{
    env::{Client, Env},
    load::Stats,
    plan::Plan,
    redis_info::redis_now,
    report::{Report, Row},
    seed, Result,
};

const S: &str = "claim_scaling";

/// One ClaimDueSchedule without a wait: the occurrence, if one was due.
pub(crate) async fn claim(client: &mut Client, ns: &str) -> Result<Option<proto::Occurrence>> {
    Ok(client
        .claim_due_schedule(proto::ClaimDueScheduleRequest {
            namespace: ns.into(),
            worker_id: "bench".into(),
            wait: None,
            lease: None,
        })
        .await?
        .into_inner()
        .occurrence)
}

pub(crate) async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    let tpl = seed::template(env).await?;
    let mut conn = env.conn().await?;
    let mut client = env.client().await?;
    for &n in &plan.sizes {
        let ns = format!("scale{n}");
        let now = redis_now(&mut conn).await?;
        let t = Instant::now();
        seed::schedules(
            &mut conn,
            &tpl,
            &ns,
            n,
            now + 3_600_000,
            seed::Layout::Current,
        )
        .await?;
        let seeded = t.elapsed().as_secs_f64();

        // Warm up, then time claims that find nothing due.
        for _ in 0..10 {
            claim(&mut client, &ns).await?;
        }
        let mut lat = Vec::with_capacity(plan.samples);
        for _ in 0..plan.samples {
            let t = Instant::now();
            if claim(&mut client, &ns).await?.is_some() {
                return Err(format!("{ns}: a claim found a schedule due").into());
            }
            lat.push(t.elapsed().as_nanos() as u64);
        }
        let s = Stats::from_latencies(lat, plan.samples as u64, 0.0);
        report.push(
            Row::latency(S, format!("nothing due, {n} stored"), &s)
                .with("stored", n)
                .with("seed_s", seeded)
                .note(format!("seeded in {seeded:.2}s")),
        );

        // One due: make the same schedule due again before each timed claim.
        let id = format!("s{}", n / 2);
        let mut lat = Vec::with_capacity(plan.samples);
        for _ in 0..plan.samples {
            let due = redis_now(&mut conn).await? - 1000;
            seed::force_due(&mut conn, &ns, &id, due).await?;
            let t = Instant::now();
            let got = claim(&mut client, &ns).await?;
            lat.push(t.elapsed().as_nanos() as u64);
            if got.is_none() {
                return Err(format!("{ns}: the due schedule was not claimed").into());
            }
        }
        let s = Stats::from_latencies(lat, plan.samples as u64, 0.0);
        report.push(Row::latency(S, format!("one due, {n} stored"), &s).with("stored", n));
    }
    report.note(
        S,
        format!(
            "{} sequential gRPC claims per point (wait 0); schedules seeded directly in Redis",
            plan.samples
        ),
    );
    Ok(())
}
