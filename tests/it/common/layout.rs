//! dueq's key layout, as tests read and rewrite it behind the service's back: the
//! schedule records and their listing (schema 3, or schema 2 rebuilt from it), and the
//! job listing. Record encoding is left to the service's own code, through
//! `dueq::probe`.

use std::collections::HashMap;

use deadpool_redis::redis::aio::MultiplexedConnection;
use dueq::probe::{self, Keys};

use super::raw::{cmd, pipe};

pub use dueq::probe::RecordOp;

/// Makes a stored schedule due now by rewriting its record and its index score, as a
/// clock jump would. Tests use it instead of sleeping for minutes. Its follow slot is
/// cleared, so a cron claim takes the compute-in-Rust path.
pub async fn force_due(conn: &mut MultiplexedConnection, ns: &str, id: &str, next_ms: i64) {
    probe::set_next_run(conn, &Keys::new("dueq", ns), id, next_ms)
        .await
        .expect("force due");
}

/// The leaf boundaries of schema 3's schedule listing, in order.
async fn listing_boundaries(conn: &mut MultiplexedConnection, ns: &str) -> Vec<String> {
    cmd("ZRANGE")
        .arg(format!("dueq:{{{ns}}}:lt"))
        .arg(0)
        .arg(-1)
        .query_async(conn)
        .await
        .expect("ZRANGE lt")
}

/// The ids of schema 3's schedule listing (`lt` boundaries, `lk:<boundary>` leaves),
/// in listing order, with the leaves they sit in; checks the listing's shape as it
/// goes: no leaf empty or over its bound, every id within its leaf's range.
pub async fn listed_schedule_ids(conn: &mut MultiplexedConnection, ns: &str) -> Vec<String> {
    let boundaries = listing_boundaries(conn, ns).await;
    let mut out: Vec<String> = Vec::new();
    for (i, b) in boundaries.iter().enumerate() {
        let ids: Vec<String> = cmd("ZRANGE")
            .arg(format!("dueq:{{{ns}}}:lk:{b}"))
            .arg(0)
            .arg(-1)
            .query_async(conn)
            .await
            .expect("ZRANGE leaf");
        assert!(
            !ids.is_empty() && ids.len() <= 120,
            "leaf {b:?}: {} ids",
            ids.len()
        );
        let next = boundaries.get(i + 1);
        for id in &ids {
            assert!(id.as_bytes() >= b.as_bytes(), "{id:?} below its leaf {b:?}");
            assert!(
                next.is_none_or(|n| id.as_bytes() < n.as_bytes()),
                "{id:?} at or past the next leaf {next:?}"
            );
        }
        out.extend(ids);
    }
    out
}

/// Turns a namespace written by this dueq into schema 2: the same schedules as
/// hashes, listed in one `:ids` zset, meta `schema` 2.
pub async fn to_schema_2(conn: &mut MultiplexedConnection, ns: &str) {
    let ids = listed_schedule_ids(conn, ns).await;
    schedule_layout(conn, ns, RecordOp::ToHash, &ids).await;
    let boundaries = listing_boundaries(conn, ns).await;
    let mut pipe = pipe();
    pipe.cmd("DEL").arg(format!("dueq:{{{ns}}}:lt")).ignore();
    for b in &boundaries {
        pipe.cmd("DEL")
            .arg(format!("dueq:{{{ns}}}:lk:{b}"))
            .ignore();
    }
    for id in &ids {
        pipe.cmd("ZADD")
            .arg(format!("dueq:{{{ns}}}:ids"))
            .arg(0)
            .arg(id)
            .ignore();
    }
    pipe.cmd("HSET")
        .arg(format!("dueq:{{{ns}}}:meta"))
        .arg("schema")
        .arg("2")
        .ignore();
    pipe.cmd("HDEL")
        .arg(format!("dueq:{{{ns}}}:meta"))
        .arg("listed")
        .ignore();
    let _: () = pipe.query_async(conn).await.expect("to schema 2");
}

/// Runs `op` on the records of `ids` in `ns`; returns each record's fields as text
/// (after the op).
pub async fn schedule_layout(
    conn: &mut MultiplexedConnection,
    ns: &str,
    op: RecordOp,
    ids: &[String],
) -> Vec<HashMap<String, String>> {
    probe::schedule_records(conn, &Keys::new("dueq", ns), op, ids)
        .await
        .expect("schedule layout tool")
        .into_iter()
        .map(|fields| fields.into_iter().collect())
        .collect()
}

/// The job ids a queue's listing holds, in enqueue order, read straight from its
/// listing buckets (`lb:<n/64>:<queue>`, field n mod 64), as ListJobs walks them.
pub async fn listed_job_ids(
    conn: &mut MultiplexedConnection,
    ns: &str,
    queue: &str,
) -> Vec<String> {
    let last: Option<i64> = cmd("HGET")
        .arg(format!("dueq:{{{ns}}}:meta"))
        .arg(format!("n:{queue}"))
        .query_async(conn)
        .await
        .expect("HGET");
    let mut ids = Vec::new();
    for bucket in 0..=last.unwrap_or(0) / 64 {
        let entries: Vec<(i64, String)> = cmd("HGETALL")
            .arg(format!("dueq:{{{ns}}}:lb:{bucket}:{queue}"))
            .query_async(conn)
            .await
            .expect("HGETALL");
        let mut entries = entries;
        entries.sort();
        ids.extend(entries.into_iter().map(|(_, id)| id));
    }
    ids
}
