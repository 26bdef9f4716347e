//! Walks every operation against its script: the script loads in a real Redis, the
//! KEYS and ARGV its header declares are the arity the operation declares, a sample
//! call sends what that arity admits, and names its ARGV as the header does, in the
//! header's order.

use deadpool_redis::redis;

use super::{samples, SCRIPTS};
use crate::{
    store::{
        keys::NamespaceKeys,
        script::{Arity, Call, Operation, ScriptDef},
    },
    testing::TestRedis,
};

/// What one operation sent, for the check against its script's header.
pub(crate) struct Sample {
    script: &'static ScriptDef,
    keys: usize,
    args: usize,
    /// The name of each ARGV value, in the order the operation pushed them.
    names: Vec<&'static str>,
}

impl Sample {
    pub(crate) fn of<O: Operation>(op: &O) -> Sample {
        let mut call = Call::default();
        op.encode(&NamespaceKeys::new("dueq", "ns"), &mut call);
        let (keys, args) = call.counts();
        Sample {
            script: op.script(),
            keys,
            args,
            names: call.names().to_vec(),
        }
    }
}

/// One ARGV entry a header declares: `ARGV[i] name:`, `ARGV[i..j] name:` (every
/// value of the range so named) or `ARGV[i..j] a, b, ...:` (one name each),
/// `ARGV[i..] a, b:` (the open tail: runs named a, then b, each possibly empty) or
/// `ARGV[i..] name{a, b, ...}:` (the tail in groups whose values are named a, b, ...).
/// Any other mention of `ARGV[...]` is prose.
#[derive(Debug)]
struct Entry {
    from: usize,
    /// `None` for the open tail.
    to: Option<usize>,
    names: Vec<String>,
    /// A group's value names.
    members: Vec<String>,
}

/// `a, b, c` at the start of `text`, then what follows.
fn name_list(text: &str) -> (Vec<String>, &str) {
    let is_name = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_';
    let mut names = Vec::new();
    let mut rest = text;
    loop {
        let end = rest.find(|c: char| !is_name(c)).unwrap_or(rest.len());
        if end == 0 {
            return (names, rest);
        }
        names.push(rest[..end].to_owned());
        rest = &rest[end..];
        match rest.strip_prefix(", ") {
            Some(more) if more.starts_with(is_name) => rest = more,
            _ => return (names, rest),
        }
    }
}

/// The ARGV entries a header declares, by first position.
fn argv_entries(header: &str) -> Vec<Entry> {
    let text: String = header
        .lines()
        .map(|line| line.trim_start_matches('-').trim())
        .collect::<Vec<_>>()
        .join(" ");
    let mut entries = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("ARGV[") {
        rest = &rest[at + "ARGV[".len()..];
        let Some(end) = rest.find(']') else { break };
        let (spec, after) = (&rest[..end], &rest[end + 1..]);
        let Some(after) = after.strip_prefix(' ') else {
            continue;
        };
        let (names, after) = name_list(after.trim_start());
        let (members, after) = match after.strip_prefix('{') {
            Some(inside) => {
                let (members, close) = name_list(inside);
                (members, close.strip_prefix('}').unwrap_or(""))
            }
            None => (Vec::new(), after),
        };
        if names.is_empty() || !after.starts_with(':') {
            continue; // prose
        }
        let (from, to) = match spec.split_once("..") {
            None => (spec.parse().ok(), spec.parse().ok()),
            Some((from, "")) => (from.parse().ok(), None),
            Some((from, to)) => (from.parse().ok(), to.parse().ok()),
        };
        let Some(from) = from else { continue };
        entries.push(Entry {
            from,
            to,
            names,
            members,
        });
    }
    entries.sort_by_key(|entry| entry.from);
    entries
}

/// Whether `names` (what an operation pushed) is what the header's `entries` declare.
fn names_match(entries: &[Entry], names: &[&str]) -> Result<(), String> {
    let mut at = 1;
    for entry in entries {
        if entry.from != at {
            return Err(format!("ARGV[{}] is not declared (next: {entry:?})", at));
        }
        let Some(to) = entry.to else {
            return tail_matches(entry, names.get(at - 1..).unwrap_or_default());
        };
        let count = to + 1 - entry.from;
        let expected: Vec<&str> = match entry.names.len() {
            1 => vec![entry.names[0].as_str(); count],
            n if n == count => entry.names.iter().map(String::as_str).collect(),
            n => {
                return Err(format!(
                    "ARGV[{}..{to}]: {n} names for {count} values",
                    entry.from
                ))
            }
        };
        let sent = names.get(at - 1..to).unwrap_or_default();
        if sent != expected {
            return Err(format!(
                "ARGV[{}..{to}]: sent {sent:?}, declared {expected:?}",
                at
            ));
        }
        at = to + 1;
    }
    match names.get(at - 1..) {
        Some([]) | None => Ok(()),
        Some(more) => Err(format!("ARGV[{at}..] sent {more:?}, declared none")),
    }
}

/// The open tail: groups of the members, or runs of the names in their order.
fn tail_matches(entry: &Entry, sent: &[&str]) -> Result<(), String> {
    let ok = if entry.members.is_empty() {
        let rank = |name: &&str| entry.names.iter().position(|n| n == name);
        let ranks: Option<Vec<usize>> = sent.iter().map(rank).collect();
        ranks.is_some_and(|ranks| ranks.is_sorted())
    } else {
        sent.chunks(entry.members.len())
            .all(|group| group == entry.members.as_slice())
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "ARGV[{}..]: sent {sent:?}, declared {entry:?}",
            entry.from
        ))
    }
}

/// The arity a header declares for `KEYS` or `ARGV`: every `NAME[i]`, `NAME[i..j]`
/// and `NAME[i..]` it mentions; `groups of G` / `G values per` after an open range
/// makes it a group arity.
fn declared(header: &str, name: &str) -> Arity {
    let mut fixed = 0;
    let mut open_from = None;
    let mut rest = header;
    while let Some(at) = rest.find(&format!("{name}[")) {
        rest = &rest[at + name.len() + 1..];
        let Some(end) = rest.find(']') else { break };
        let inside = &rest[..end];
        match inside.split_once("..") {
            None => fixed = fixed.max(inside.parse().unwrap_or(0)),
            Some((from, "")) => open_from = from.parse::<usize>().ok(),
            Some((_, to)) => fixed = fixed.max(to.parse().unwrap_or(0)),
        }
    }
    let group = ["groups of ", " values per job"]
        .iter()
        .find_map(|marker| group_size(header, marker));
    match (open_from, group) {
        (None, _) => Arity::Exactly(fixed),
        (Some(from), Some(group)) => Arity::Groups {
            fixed: from - 1,
            group,
        },
        (Some(from), None) => Arity::AtLeast(from - 1),
    }
}

/// The number next to a marker: after "groups of ", before " values per job".
fn group_size(header: &str, marker: &str) -> Option<usize> {
    let at = header.find(marker)?;
    if marker.starts_with(' ') {
        let before = header[..at].rsplit(|c: char| !c.is_ascii_digit()).next()?;
        before.parse().ok()
    } else {
        let after = &header[at + marker.len()..];
        let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    }
}

/// The comment block that opens a script.
fn header(def: &ScriptDef) -> String {
    def.shebang()
        .1
        .lines()
        .take_while(|line| line.starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_operation_sends_what_its_script_header_declares() {
    let samples = samples();
    assert_eq!(samples.len(), SCRIPTS.len(), "one sample per operation");
    let mut names: Vec<&str> = SCRIPTS.iter().map(|def| def.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), SCRIPTS.len(), "one operation per script");
    for sample in samples {
        let def = sample.script;
        let header = header(def);
        assert!(
            header.starts_with(&format!("-- {}:", def.name)),
            "{}: the header names the script",
            def.name
        );
        assert_eq!(declared(&header, "KEYS"), def.keys, "{}: KEYS", def.name);
        assert_eq!(declared(&header, "ARGV"), def.argv, "{}: ARGV", def.name);
        assert!(
            def.keys.admits(sample.keys) && def.argv.admits(sample.args),
            "{}: sent {} keys and {} args",
            def.name,
            sample.keys,
            sample.args
        );
        if let Err(why) = names_match(&argv_entries(&header), &sample.names) {
            panic!("{}: ARGV names: {why}", def.name);
        }
    }
}

#[test]
fn every_lua_file_has_its_operation() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("lua");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter_map(|name| name.strip_suffix(".lua").map(str::to_owned))
        .collect();
    files.sort();
    let mut names: Vec<String> = SCRIPTS.iter().map(|def| def.name.to_owned()).collect();
    names.sort();
    assert_eq!(files, names);
}

/// Scripts Redis runs at `maxmemory` (`#!lua flags=allow-oom`): those that finish,
/// release or drop work, and reads. Every other script is refused at `maxmemory`
/// before it changes anything, above all those that hand work out (issue 12 item 4:
/// a full Redis drains instead of re-handing leases it cannot let anyone finish).
const RUN_WHEN_FULL: &[&str] = &[
    "abort_flow",
    "ack_job",
    "ack_jobs",
    "ack_occurrence",
    "cancel_flow",
    "cancel_job",
    "cancel_jobs",
    "delete_job",
    "delete_jobs",
    "drain_graph",
    "delete_schedule",
    "distrust_jobs",
    "extend_lease",
    "fail_job",
    "get_flow",
    "get_job",
    "get_queue_policy",
    "get_schedule",
    "list_dead_groups",
    "list_audit",
    "list_due_schedules",
    "list_flow_keys",
    "list_jobs",
    "list_schedules",
    "list_workers",
    "migrate_lock",
    "namespace_status",
    "pause_queue",
    "pause_schedule",
    "peek_due",
    "peek_jobs",
    "prune_jobs",
    "purge_jobs",
    "queue_stats",
    "release_job",
    "release_claim",
    "release_jobs",
    "release_occurrence",
    "set_follow",
    "throttle_key",
    "watch_job",
];

/// Scripts that never write (not even a repair, as list_jobs makes of a stale
/// listing entry): flagged `no-writes`, so they run with FCALL_RO
/// (src/store/library.rs). Redis refuses any write they would make, so a write added
/// to one of them fails its tests.
const READ_ONLY: &[&str] = &[
    "get_flow",
    "get_job",
    "get_queue_policy",
    "list_audit",
    "list_dead_groups",
    "namespace_status",
    "peek_due",
    "peek_jobs",
    "queue_stats",
];

#[test]
fn every_script_declares_what_it_does_at_maxmemory() {
    assert!(READ_ONLY.iter().all(|name| RUN_WHEN_FULL.contains(name)));
    for def in SCRIPTS {
        let first = def.body.lines().next().unwrap_or_default();
        let expected = if READ_ONLY.contains(&def.name) {
            "#!lua flags=allow-oom,no-writes"
        } else if RUN_WHEN_FULL.contains(&def.name) {
            "#!lua flags=allow-oom"
        } else {
            "#!lua"
        };
        assert_eq!(first, expected, "{}: its first line", def.name);
        assert!(
            def.source().starts_with(&format!("{expected}\n")),
            "{}: the shebang must be the first line Redis reads",
            def.name
        );
    }
    for name in ["claim_jobs", "claim_due", "enqueue_jobs", "upsert_schedule"] {
        assert!(
            !RUN_WHEN_FULL.contains(&name),
            "{name} hands out or adds work"
        );
    }
}

#[tokio::test]
async fn every_script_loads() {
    let redis = TestRedis::start().await;
    let mut conn = redis.conn().await;
    for def in SCRIPTS {
        let sha: String = redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(def.source())
            .query_async(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{} does not load: {e}", def.name));
        assert_eq!(sha, def.script().get_hash(), "{}", def.name);
    }
}

#[test]
fn argv_names_are_read_as_declared() {
    let h = "-- ARGV[1..2] pre: two   ARGV[3] id: the id, at most ARGV[3] long\n\
             -- ARGV[4..5] a, b: one each\n-- ARGV[6..] queues, ids: then";
    let entries = argv_entries(h);
    assert_eq!(entries.len(), 4, "{entries:?}");
    assert!(names_match(&entries, &["pre", "pre", "id", "a", "b", "queues", "ids"]).is_ok());
    assert!(names_match(&entries, &["pre", "pre", "id", "a", "b"]).is_ok());
    assert!(names_match(&entries, &["pre", "pre", "id", "b", "a"]).is_err());
    assert!(names_match(&entries, &["pre", "pre", "id", "a", "b", "ids", "queues"]).is_err());
    assert!(names_match(&entries, &["pre", "id", "pre", "a", "b"]).is_err());
    let h = "-- ARGV[1] t: x\n-- ARGV[2..] lease{id,\n--   token}: groups of 2";
    let entries = argv_entries(h);
    assert!(names_match(&entries, &["t", "id", "token", "id", "token"]).is_ok());
    assert!(names_match(&entries, &["t", "token", "id"]).is_err());
    let h = "-- ARGV[1] a: x\n-- ARGV[3] c: z";
    assert!(
        names_match(&argv_entries(h), &["a", "b", "c"]).is_err(),
        "a gap"
    );
}

#[test]
fn headers_are_read_as_declared() {
    let h = "-- x: y\n-- KEYS[1] a   KEYS[2] b\n-- ARGV[1..8] p\n-- ARGV[9] q   ARGV[10..] queues";
    assert_eq!(declared(h, "KEYS"), Arity::Exactly(2));
    assert_eq!(declared(h, "ARGV"), Arity::AtLeast(9));
    let h = "-- ARGV[3] t\n-- ARGV[4..] names, any number";
    assert_eq!(declared(h, "ARGV"), Arity::AtLeast(3));
    let h = "-- ARGV[5..] groups of 16, one per schedule";
    assert_eq!(
        declared(h, "ARGV"),
        Arity::Groups {
            fixed: 4,
            group: 16
        }
    );
}

#[test]
fn the_lua_libraries_know_this_builds_layouts() {
    use crate::domain::{JOB_LAYOUT, SCHEDULE_SCHEMA};
    let schedule = crate::store::Prelude::Schedule.parts().concat();
    assert!(schedule.contains(&format!("local DUEQ_SCHEMA = '{SCHEDULE_SCHEMA}'")));
    let job = crate::store::Prelude::Job.parts().concat();
    assert!(job.contains(&format!("local JOBS_LAYOUT = '{JOB_LAYOUT}'")));
}

/// A script's refusal of a namespace in another layout reaches Rust as NeedsMigrate
/// for the namespace the call was for, with the layout the guard found.
#[tokio::test]
async fn a_guard_refusal_names_the_namespace_and_what_it_found() {
    use crate::{
        domain::{Found, Layout, NeedsMigrate},
        store::{
            ops::{get_job::GetJob, get_schedule::GetSchedule},
            StoreError,
        },
    };
    let redis = TestRedis::start().await;
    let mut conn = redis.conn().await;
    let keys = NamespaceKeys::new("dueq", "billing.eu");
    // Schema 2 (a listing zset and meta schema 2) and job layout 1 (job_seq in meta).
    let _: () = redis::pipe()
        .cmd("ZADD")
        .arg(keys.ids())
        .arg(0)
        .arg("s")
        .ignore()
        .cmd("HSET")
        .arg(keys.meta())
        .arg("schema")
        .arg("2")
        .arg("job_seq")
        .arg("7")
        .ignore()
        .query_async(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let store = redis.store();
    fn refusal<T: std::fmt::Debug>(result: Result<T, StoreError>) -> (String, NeedsMigrate) {
        match result {
            Err(StoreError::NeedsMigrate { namespace, needs }) => (namespace, needs),
            other => panic!("not refused: {other:?}"),
        }
    }
    let (namespace, needs) = refusal(store.run("billing.eu", &GetSchedule { id: "s" }).await);
    assert_eq!(namespace, "billing.eu");
    assert_eq!(
        needs,
        NeedsMigrate {
            layout: Layout::Schedules,
            found: Found::Version(2)
        }
    );
    let (_, needs) = refusal(store.run("billing.eu", &GetJob { id: "j" }).await);
    assert_eq!(
        needs,
        NeedsMigrate {
            layout: Layout::Jobs,
            found: Found::Version(1)
        }
    );
}

/// Every file a script's comments point at (`src/…`, `docs/…`, `tools/…`, `tests/…`,
/// `proto/…`, and `lib/…` beside the scripts) exists: a comment that names a file
/// that moved sends its reader nowhere.
#[test]
fn every_file_a_script_names_exists() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let lua = root.join("lua");
    let mut missing = Vec::new();
    for dir in [lua.clone(), lua.join("lib")] {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.extension().is_none_or(|ext| ext != "lua") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
            let is_path_char = |c: char| c.is_ascii_alphanumeric() || "_./-".contains(c);
            for token in text.split(|c: char| !is_path_char(c)) {
                let token = token.trim_end_matches('.');
                let base = if token.starts_with("lib/") {
                    &lua
                } else if ["src/", "docs/", "tools/", "tests/", "proto/"]
                    .iter()
                    .any(|prefix| token.starts_with(prefix))
                {
                    root
                } else {
                    continue;
                };
                if token.contains('.') && !base.join(token).exists() {
                    missing.push(format!("{}: {token}", path.display()));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "files named but not there: {missing:#?}"
    );
}
