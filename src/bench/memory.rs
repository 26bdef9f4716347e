//! Redis memory per stored record: INFO memory used_memory before and after writing
//! `records` schedules (seeded, API layout) and `records` jobs (through EnqueueBatch).

use deadpool_redis::redis::{self, aio::MultiplexedConnection};

use super::{
    env::{info_field, redis_now, Env},
    report::{Report, Row},
    seed, Plan, Result,
};
use crate::proto;

const S: &str = "memory";

async fn used(conn: &mut MultiplexedConnection) -> Result<f64> {
    let info: String = redis::cmd("INFO").arg("memory").query_async(conn).await?;
    info_field(&info, "used_memory")
        .and_then(|v| v.parse::<f64>().ok())
        .ok_or_else(|| "INFO memory has no used_memory".into())
}

pub async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    let n = plan.records;
    let tpl = seed::template(env).await?;
    let mut conn = env.conn().await?;
    let before = used(&mut conn).await?;
    let now = redis_now(&mut conn).await?;
    seed::schedules(
        &mut conn,
        &tpl,
        "mem",
        n,
        now + 3_600_000,
        seed::Layout::Current,
    )
    .await?;
    let after = used(&mut conn).await?;
    let per = (after - before) / n as f64;
    report.push(
        Row::new(S, "per schedule")
            .with("bytes", per)
            .with("records", n)
            .note(format!(
                "{per:.0} B over {n} schedules (hash + :ids + :due entries)"
            )),
    );

    let mut client = env.client().await?;
    let before = used(&mut conn).await?;
    let mut left = n;
    while left > 0 {
        let k = left.min(1000);
        let jobs = (0..k)
            .map(|_| proto::EnqueueRequest {
                namespace: "mem".into(),
                queue: "work".into(),
                name: "bench".into(),
                payload: b"{\"n\":1}".to_vec(),
                ..Default::default()
            })
            .collect();
        client
            .enqueue_batch(proto::EnqueueBatchRequest {
                namespace: "mem".into(),
                jobs,
            })
            .await?;
        left -= k;
    }
    let after = used(&mut conn).await?;
    let per = (after - before) / n as f64;
    report.push(
        Row::new(S, "per job")
            .with("bytes", per)
            .with("records", n)
            .note(format!(
                "{per:.0} B over {n} pending jobs (hash + ready + listing entries)"
            )),
    );
    report.note(
        S,
        "used_memory delta / records; payload {\"n\":1}, job name \"bench\"",
    );
    Ok(())
}
