//! dueq's key layout, as tests read and rewrite it behind the service's back: the
//! schedule records and their listing (schema 3, or schema 2 rebuilt from it), and the
//! job listing. Record encoding is left to `lua/lib/schedule.lua`, the service's own.

use std::{collections::HashMap, sync::LazyLock};

use deadpool_redis::redis::{self, aio::MultiplexedConnection};

/// The service's schedule-record library, which the tools below build on.
macro_rules! with_schedule_lib {
    ($script:literal) => {
        concat!(
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/lua/lib/schedule.lua")),
            $script
        )
    };
}

/// Makes a stored schedule due now by rewriting its record and its index score, as a
/// clock jump would. Tests use it instead of sleeping for minutes.
pub async fn force_due(conn: &mut MultiplexedConnection, ns: &str, id: &str, next_ms: i64) {
    // Clearing follow_ms makes a cron claim take the compute-in-Rust path.
    static FORCE_DUE: LazyLock<redis::Script> = LazyLock::new(|| {
        redis::Script::new(with_schedule_lib!(
            r#"
local r = sched_load(KEYS[1])
assert(r and not s_is_error(r), 'no schedule record at ' .. KEYS[1])
r.next_ms, r.follow_ms = tonumber(ARGV[1]), ''
sched_save(KEYS[1], r)
redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])
return 1
"#
        ))
    });
    let _: i64 = FORCE_DUE
        .key(format!("dueq:{{{ns}}}:s:{id}"))
        .key(format!("dueq:{{{ns}}}:due"))
        .arg(next_ms)
        .arg(id)
        .invoke_async(conn)
        .await
        .expect("force due");
}

/// The leaf boundaries of schema 3's schedule listing, in order.
async fn listing_boundaries(conn: &mut MultiplexedConnection, ns: &str) -> Vec<String> {
    redis::cmd("ZRANGE")
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
        let ids: Vec<String> = redis::cmd("ZRANGE")
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
    let mut pipe = redis::pipe();
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

/// What `schedule_layout` does to each record.
#[derive(Clone, Copy)]
pub enum RecordOp {
    /// Rewrite a packed record (schema 3) as the hash of schemas 1 and 2.
    ToHash,
    /// Rewrite such a hash as a packed record and list it, as Migrate does.
    ToPacked,
    /// Read it, in either layout: its fields, or nothing when it is missing.
    Read,
}

/// Runs `op` on the records of `ids` in `ns`, in one script per 500 ids; returns
/// each record's fields as text (after the op).
pub async fn schedule_layout(
    conn: &mut MultiplexedConnection,
    ns: &str,
    op: RecordOp,
    ids: &[String],
) -> Vec<HashMap<String, String>> {
    static TOOL: LazyLock<redis::Script> = LazyLock::new(|| {
        redis::Script::new(with_schedule_lib!(
            r#"
local out = {}
for i = 3, #KEYS do
  local key, id = KEYS[i], ARGV[i - 1]
  local r = sched_read(key)
  assert(not s_is_error(r), 'not a schedule record: ' .. key)
  if r == nil then
    out[i - 2] = {}
  else
    if ARGV[1] == 'hash' then
      redis.call('DEL', key)
      redis.call('HSET', key, unpack(sched_fields(id, r)))
    elseif ARGV[1] == 'pack' then
      sched_save(key, r)
      listing_add(KEYS[1], KEYS[2], id)
    end
    out[i - 2] = sched_fields(id, r)
  end
end
return out
"#
        ))
    });
    let op = match op {
        RecordOp::ToHash => "hash",
        RecordOp::ToPacked => "pack",
        RecordOp::Read => "read",
    };
    let mut out = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(500) {
        let mut invocation = TOOL.prepare_invoke();
        invocation
            .key(format!("dueq:{{{ns}}}:ids"))
            .key(format!("dueq:{{{ns}}}:meta"))
            .arg(op);
        for id in chunk {
            invocation.key(format!("dueq:{{{ns}}}:s:{id}")).arg(id);
        }
        let rows: Vec<Vec<String>> = invocation
            .invoke_async(conn)
            .await
            .expect("schedule layout tool");
        out.extend(rows.into_iter().map(|flat| {
            flat.chunks_exact(2)
                .map(|p| (p[0].clone(), p[1].clone()))
                .collect()
        }));
    }
    out
}

/// The job ids a queue's listing holds, in enqueue order, read straight from its
/// listing buckets (`lb:<n/64>:<queue>`, field n mod 64), as ListJobs walks them.
pub async fn listed_job_ids(
    conn: &mut MultiplexedConnection,
    ns: &str,
    queue: &str,
) -> Vec<String> {
    let last: Option<i64> = redis::cmd("HGET")
        .arg(format!("dueq:{{{ns}}}:meta"))
        .arg(format!("n:{queue}"))
        .query_async(conn)
        .await
        .expect("HGET");
    let mut ids = Vec::new();
    for bucket in 0..=last.unwrap_or(0) / 64 {
        let entries: Vec<(i64, String)> = redis::cmd("HGETALL")
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
