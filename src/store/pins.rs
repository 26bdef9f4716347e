//! Rules that exist in both languages, pinned together: each test runs the Lua
//! (through a real Redis) and the Rust over thousands of generated inputs and fails
//! on any difference — the `every` advance and its skip cap (lua/lib/rules.lua
//! `every_advance`, `timing::Timing::advance`), the occurrence id (`occurrence_id`
//! in both), and the two job keys Lua composes (lua/lib/job.lua `ready_list` and
//! `listing_bucket`, `keys.rs`), and the flow-control keys (lua/lib/flow.lua
//! `flow.key`, `keys.rs` `flow_key`).

use deadpool_redis::redis::{self, aio::MultiplexedConnection, Value};

use super::{keys::NamespaceKeys, script::Prelude};
use crate::{
    domain::occurrence_id,
    testing::TestRedis,
    timing::{Timing, TimingSpec, MAX_SKIP_COUNT},
};

/// splitmix64: a small, seeded generator, so a failure names a reproducible case.
struct Cases(u64);

impl Cases {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn between(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % ((hi - lo) as u64 + 1)) as i64
    }
}

/// Runs `body` after `prelude` with `args`; the reply's items as text.
async fn eval(
    conn: &mut MultiplexedConnection,
    prelude: Prelude,
    body: &str,
    args: &[String],
) -> Vec<String> {
    let source = format!("{}{body}", prelude.parts().concat());
    let reply: Value = redis::cmd("EVAL")
        .arg(source)
        .arg(0)
        .arg(args)
        .query_async(conn)
        .await
        .unwrap_or_else(|e| panic!("eval: {e}"));
    let Value::Array(items) = reply else {
        panic!("not an array: {reply:?}")
    };
    items
        .into_iter()
        .map(|item| match item {
            Value::Int(n) => n.to_string(),
            Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
            other => panic!("unexpected {other:?}"),
        })
        .collect()
}

/// One `every` claim: slots `anchor + k * every`, claimed at `due` (a slot) at `now`.
#[derive(Debug)]
struct EveryCase {
    anchor: i64,
    every: i64,
    due: i64,
    now: i64,
    end: Option<i64>,
}

fn every_case(cases: &mut Cases) -> EveryCase {
    let every = match cases.between(0, 3) {
        0 => 1_000,
        1 => cases.between(1, 3_600) * 1_000,
        2 => cases.between(1_000, 366 * 86_400_000),
        _ => cases.between(1, 366) * 86_400_000,
    };
    // Now and then at the end of time, where the next slot is past the year 9999.
    let anchor = match cases.between(0, 9) {
        0 => crate::timing::MAX_TIME_MS - cases.between(0, 10_000) * every,
        _ => cases.between(0, 2_000_000_000_000),
    };
    let due = anchor + cases.between(0, 10_000) * every;
    // Late by nothing, by a little, or by far more than the skip cap's worth.
    let late = match cases.between(0, 3) {
        0 => 0,
        1 => cases.between(0, 3 * every),
        2 => cases.between(0, 1_000 * every),
        _ => cases.between(0, 1_000_000_000_000),
    };
    let now = due + late;
    let end = match cases.between(0, 2) {
        0 => None,
        // Anywhere from the due slot (the claim only runs while due <= end) to past now.
        _ => Some(cases.between(due.max(anchor + 1), now + 2 * every)),
    };
    EveryCase {
        anchor,
        every,
        due,
        now,
        end,
    }
}

#[tokio::test]
async fn every_advance_is_the_same_in_lua_and_rust() {
    let redis = TestRedis::start().await;
    let mut conn = redis.conn().await;
    let mut cases = Cases(0x6475_6571);
    let batch: Vec<EveryCase> = (0..4000).map(|_| every_case(&mut cases)).collect();
    let mut args = Vec::new();
    for c in &batch {
        args.extend([c.due, c.every, c.now].map(|v| v.to_string()));
        args.push(c.end.map(|e| e.to_string()).unwrap_or_default());
    }
    let body = "local out = {}
for i = 1, #ARGV, 4 do
  local next_ms, skipped = every_advance(tonumber(ARGV[i]), tonumber(ARGV[i + 1]),
    tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]) or '')
  out[#out + 1] = next_ms or ''
  out[#out + 1] = skipped
end
return out";
    let lua = eval(&mut conn, Prelude::Schedule, body, &args).await;
    let mut capped = 0;
    for (c, got) in batch.iter().zip(lua.chunks(2)) {
        let timing = Timing::parse(&TimingSpec {
            every_ms: Some(c.every),
            start_ms: Some(c.anchor),
            end_ms: c.end,
            ..TimingSpec::default()
        })
        .unwrap_or_else(|e| panic!("{c:?}: {e}"));
        let rust = timing.advance(c.due, c.now);
        let want = [
            rust.next_ms.map(|n| n.to_string()).unwrap_or_default(),
            rust.skipped.to_string(),
        ];
        assert_eq!(got, want, "{c:?}");
        capped += usize::from(rust.skipped == MAX_SKIP_COUNT);
    }
    assert!(capped > 100, "the skip cap was reached only {capped} times");
}

#[tokio::test]
async fn occurrence_ids_are_the_same_in_lua_and_rust() {
    let redis = TestRedis::start().await;
    let mut conn = redis.conn().await;
    let mut cases = Cases(7);
    let pieces = ["a", "|", ":", "1:", "ü", "🦀", "{x}", "s:", " ", "0"];
    let mut inputs = Vec::new();
    for _ in 0..3000 {
        let namespace: String = (0..cases.between(1, 12))
            .map(|_| ['a', 'Z', '0', '_', '-', '.'][cases.between(0, 5) as usize])
            .collect();
        let id: String = (0..cases.between(1, 8))
            .map(|_| pieces[cases.between(0, 9) as usize])
            .collect();
        let due = cases.between(0, 9_007_199_254_740_991);
        let rev = cases.between(1, 1_000_000);
        inputs.push((namespace, id, due, rev));
    }
    let mut args = Vec::new();
    for (ns, id, due, rev) in &inputs {
        args.extend([ns.clone(), id.clone(), due.to_string(), rev.to_string()]);
    }
    let body = "local out = {}
for i = 1, #ARGV, 4 do
  out[#out + 1] = occurrence_id(ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]))
end
return out";
    let lua = eval(&mut conn, Prelude::Schedule, body, &args).await;
    for ((ns, id, due, rev), got) in inputs.iter().zip(&lua) {
        let rust = occurrence_id(ns, id, *due, *rev as u64);
        assert_eq!(got, &rust, "{ns:?} {id:?} {due} {rev}");
    }
}

#[tokio::test]
async fn the_job_keys_lua_composes_are_the_ones_keys_rs_names() {
    let redis = TestRedis::start().await;
    let mut conn = redis.conn().await;
    let keys = NamespaceKeys::new("dueq", "ns");
    let mut cases = Cases(11);
    let mut inputs = Vec::new();
    for _ in 0..500 {
        let queue = ["q", "a:b", "{x}", "emails", "ü"][cases.between(0, 4) as usize].to_owned();
        let priority = cases.between(-1_000_000, 1_000_000) as i32;
        let n = cases.between(0, 1_000_000_000) as u64;
        inputs.push((queue, priority, n));
    }
    let mut args: Vec<String> = keys.job_prefixes().0.to_vec();
    for (queue, priority, n) in &inputs {
        args.extend([queue.clone(), priority.to_string(), n.to_string()]);
    }
    let body = "local K = job_keys(ARGV, 1)
local out = {}
for i = 9, #ARGV, 3 do
  out[#out + 1] = ready_list(K, ARGV[i], tonumber(ARGV[i + 1]))
  out[#out + 1] = listing_bucket(K, ARGV[i], tonumber(ARGV[i + 2]))
end
return out";
    let lua = eval(&mut conn, Prelude::Job, body, &args).await;
    for ((queue, priority, n), got) in inputs.iter().zip(lua.chunks(2)) {
        assert_eq!(got[0], keys.ready_list(queue, *priority));
        assert_eq!(got[1], keys.listing_bucket(queue, *n));
    }
}

#[tokio::test]
async fn the_jobs_marker_lua_composes_is_the_one_keys_rs_names() {
    let redis = TestRedis::start().await;
    let mut conn = redis.conn().await;
    let keys = NamespaceKeys::new("dueq", "billing.eu");
    let lua = eval(
        &mut conn,
        Prelude::Job,
        "return { jobs_marker(ARGV[1]) }",
        &[keys.meta()],
    )
    .await;
    assert_eq!(lua, vec![keys.jobs_marker()]);
}

#[tokio::test]
async fn the_dead_group_keys_lua_composes_are_the_ones_keys_rs_names() {
    let redis = TestRedis::start().await;
    let mut conn = redis.conn().await;
    let keys = NamespaceKeys::new("dueq", "billing.eu");
    let lua = eval(
        &mut conn,
        Prelude::Job,
        "return { dg.groups(ARGV[1]), dg.set(ARGV[1], ARGV[2], ARGV[3]), \
         dg.order(ARGV[1], ''), dg.order(ARGV[1], ARGV[3]) }",
        &[keys.meta(), "0123456789abcdef".into(), "q:{x}".into()],
    )
    .await;
    let want = vec![
        keys.dead_groups(),
        keys.dead_group("0123456789abcdef", "q:{x}"),
        keys.dead_order(""),
        keys.dead_order("q:{x}"),
    ];
    assert_eq!(lua, want);
}

/// The error normaliser (lib/job.lua `dg.normalise`, `dg.fingerprint`; issue 33):
/// messages that differ only in numbers, ids and quoted strings share a fingerprint;
/// others do not.
#[tokio::test]
async fn error_fingerprints_ignore_numbers_ids_and_quoted_strings() {
    let redis = TestRedis::start().await;
    let mut conn = redis.conn().await;
    let pairs_same = [
        (
            "timeout after 30s on job 7f3a9c",
            "timeout after 12s on job 99b1e0",
        ),
        (
            "Order 550e8400-e29b-41d4-a716-446655440000 not found",
            "order 6ba7b810-9dad-11d1-80b4-00c04fd430c8 NOT FOUND",
        ),
        ("user 'alice' has no access", "user 'bob' has no access"),
        ("bad key \"x-1\" at 0x7ffe1234", "bad key \"yz\" at 0x1"),
        ("id a8Xk29Qz7 rejected", "id Q2w9zzTT1 rejected"),
    ];
    let pairs_differ = [
        ("timeout after 30s", "connection refused after 30s"),
        ("disk full", "disk quota exceeded"),
        ("timeout after 30s", "timeout after 30ms"),
    ];
    let mut args = Vec::new();
    for (a, b) in pairs_same.iter().chain(pairs_differ.iter()) {
        args.push((*a).to_owned());
        args.push((*b).to_owned());
    }
    let lua = eval(
        &mut conn,
        Prelude::Job,
        "local out = {} for i, m in ipairs(ARGV) do out[i] = dg.fingerprint(m) end return out",
        &args,
    )
    .await;
    for fp in &lua {
        assert!(
            fp.len() == 16 && fp.bytes().all(|b| b.is_ascii_hexdigit()),
            "{fp:?}: 16 hex digits"
        );
    }
    for (i, (a, b)) in pairs_same.iter().enumerate() {
        assert_eq!(lua[2 * i], lua[2 * i + 1], "{a:?} and {b:?}: one group");
    }
    let base = 2 * pairs_same.len();
    for (i, (a, b)) in pairs_differ.iter().enumerate() {
        assert_ne!(
            lua[base + 2 * i],
            lua[base + 2 * i + 1],
            "{a:?} and {b:?}: two groups"
        );
    }
    let normal = eval(
        &mut conn,
        Prelude::Job,
        "return { dg.normalise(ARGV[1]) }",
        &["Timeout after 30s on job 7f3a9c (user 'alice')".into()],
    )
    .await;
    assert_eq!(
        normal,
        vec!["timeout after #s on job # (user '…')".to_owned()]
    );
}

/// The cap on a namespace's groups (lib/job.lua `dg.MAX`, lowered to 2 here): past
/// it a new error joins its queue's group "other", an existing group still takes its
/// own; a job leaves "other" as it leaves any group, and an empty group is gone.
#[tokio::test]
async fn past_the_group_cap_new_errors_join_other() {
    let redis = TestRedis::start().await;
    let mut conn = redis.conn().await;
    let keys = NamespaceKeys::new("dueq", "ns");
    let body = "dg.MAX = 2 \
        local meta = ARGV[1] \
        local function r(m) return { queue = 'q', \
          errors = cjson.encode({ { attempt = 1, message = m, at = 0 } }) } end \
        dg.add(meta, 'a', r('disk full'), 1, false) \
        dg.add(meta, 'b', r('timeout'), 2, false) \
        dg.add(meta, 'c', r('no route'), 3, false) \
        dg.add(meta, 'd', r('disk full'), 4, false) \
        local fp = dg.fingerprint('disk full') \
        local out = { redis.call('HLEN', dg.groups(meta)), \
          redis.call('ZCARD', dg.set(meta, 'other', 'q')), \
          redis.call('ZCARD', dg.set(meta, fp, 'q')), dg.of(meta, 'c', r('no route')) } \
        dg.remove(meta, 'c', r('no route')) \
        out[#out + 1] = redis.call('EXISTS', dg.set(meta, 'other', 'q')) \
        out[#out + 1] = redis.call('HLEN', dg.groups(meta)) \
        out[#out + 1] = redis.call('ZCARD', dg.order(meta, 'q')) \
        return out";
    let got = eval(&mut conn, Prelude::Job, body, &[keys.meta()]).await;
    assert_eq!(got, ["3", "1", "2", "other", "0", "2", "2"]);
}

#[tokio::test]
async fn the_flow_graph_keys_lua_composes_are_the_ones_keys_rs_names() {
    let redis = TestRedis::start().await;
    let mut conn = redis.conn().await;
    let keys = NamespaceKeys::new("dueq", "billing.eu");
    let lua = eval(
        &mut conn,
        Prelude::Job,
        "return { graph.key(ARGV[1], ARGV[2]), graph.open_set(ARGV[1]), \
         graph.done_set(ARGV[1]), graph.stage_set(ARGV[1]), graph.queue(ARGV[1]) }",
        &[keys.meta(), "flow:{x}".into()],
    )
    .await;
    let mut want = vec![keys.flow("flow:{x}")];
    want.extend(keys.flow_sets());
    assert_eq!(lua, want);
}

#[tokio::test]
async fn the_changes_channel_lua_composes_is_the_one_keys_rs_names() {
    let redis = TestRedis::start().await;
    let mut conn = redis.conn().await;
    let ids = ["j", "a:b", "{x}", "}:j:", "x}{y", "ü 🦀", "j:j:"];
    for (prefix, namespace) in [("dueq", "ns"), ("app:dueq", "billing.eu"), ("p", "a-b_c")] {
        let keys = NamespaceKeys::new(prefix, namespace);
        let mut args = Vec::new();
        for id in ids {
            args.push(String::from_utf8(keys.job(id)).expect("utf-8"));
        }
        let body = "local out = {}
for i = 1, #ARGV do
  local channel, id = changes_of(ARGV[i])
  out[#out + 1] = channel
  out[#out + 1] = id
end
return out";
        let lua = eval(&mut conn, Prelude::Job, body, &args).await;
        for (id, got) in ids.iter().zip(lua.chunks(2)) {
            assert_eq!(got[0], keys.job_changes(), "{prefix} {namespace} {id}");
            assert_eq!(got[1], *id, "{prefix} {namespace}");
            assert_eq!(
                super::keys::job_changes_namespace(prefix, &got[0]),
                Some(namespace)
            );
        }
    }
}

#[tokio::test]
async fn the_target_index_lua_composes_is_the_one_keys_rs_names() {
    let redis = TestRedis::start().await;
    let mut conn = redis.conn().await;
    let keys = NamespaceKeys::new("dueq", "billing.eu");
    let lua = eval(
        &mut conn,
        Prelude::Schedule,
        "return { sched_target_index(ARGV[1]) }",
        &[keys.due()],
    )
    .await;
    assert_eq!(lua, vec![keys.target_due()]);
}

#[tokio::test]
async fn the_flow_keys_lua_composes_are_the_ones_keys_rs_names() {
    let redis = TestRedis::start().await;
    let mut conn = redis.conn().await;
    let queues = ["q", "a:b", "{x}", "ü 🦀", "12:q", ""];
    let rests = ["", "1:a1:bc", "tenant:42", "ü"];
    let kinds = ['l', 'r', 'p', 'w', 't', 'c', 'b', 'h', 'k', 'g', 'a', 'q'];
    for (prefix, namespace) in [("dueq", "ns"), ("app:dueq", "billing.eu")] {
        let keys = NamespaceKeys::new(prefix, namespace);
        let mut args = vec![keys.meta()];
        let mut expected = Vec::new();
        for (i, queue) in queues.iter().enumerate() {
            for (j, kind) in kinds.iter().enumerate() {
                let rest = rests[(i + j) % rests.len()];
                args.extend([kind.to_string(), (*queue).to_owned(), rest.to_owned()]);
                expected.push(keys.flow_key(*kind, queue, rest));
            }
        }
        let body = "local out = {}
for i = 2, #ARGV, 3 do
  out[#out + 1] = flow.key(ARGV[1], ARGV[i], ARGV[i + 1], ARGV[i + 2])
end
return out";
        let lua = eval(&mut conn, Prelude::Job, body, &args).await;
        assert_eq!(lua, expected);
    }
}

#[tokio::test]
async fn the_flow_indexes_lua_composes_are_the_ones_keys_rs_finds() {
    let redis = TestRedis::start().await;
    let mut conn = redis.conn().await;
    let keys = NamespaceKeys::new("app:dueq", "billing.eu");
    let queues = ["q", "a:b", "{x}", "12:q", "ü", "*?[l]"];
    let names = ["0:0:", "1:a0:", "3:a:b2:cdr", "0:1:k", "k", "ü 🦀"];
    let mut args = vec![keys.meta()];
    let mut want = Vec::new();
    for (i, queue) in queues.iter().enumerate() {
        for (j, name) in names.iter().enumerate() {
            let kind = if (i + j) % 2 == 0 { 'l' } else { 'w' };
            args.extend([kind.to_string(), (*queue).to_owned(), (*name).to_owned()]);
            want.push((kind, (*queue).to_owned(), (*name).to_owned()));
        }
    }
    // Every key composed, and one of every other kind, which the pattern must skip.
    let body = "local out = {}
for i = 2, #ARGV, 3 do
  local key = flow.key(ARGV[1], ARGV[i], ARGV[i + 1], ARGV[i + 2])
  redis.call('SET', key, '1')
  redis.call('SET', flow.key(ARGV[1], 'c', ARGV[i + 1]), '1')
  out[#out + 1] = key
end
return out";
    let lua = eval(&mut conn, Prelude::Job, body, &args).await;
    for (key, want) in lua.iter().zip(&want) {
        assert_eq!(keys.flow_index_of(key.as_bytes()).as_ref(), Some(want));
    }
    let found: Vec<String> = redis::cmd("KEYS")
        .arg(keys.flow_index_pattern())
        .query_async(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("keys: {e}"));
    let mut found: Vec<_> = found
        .iter()
        .filter_map(|key| keys.flow_index_of(key.as_bytes()))
        .collect();
    found.sort();
    want.sort();
    want.dedup();
    assert_eq!(found, want);
}
