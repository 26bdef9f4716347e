//! dueq's scripts as Redis function libraries (issue 35): one library per prelude
//! (`lua/lib/*` combination, [`Prelude`]), loaded once with `FUNCTION LOAD` and
//! called with `FCALL` (`FCALL_RO` for a script flagged `no-writes`).
//!
//! Why functions. An `EVALSHA` re-runs its script's whole text on every call: the
//! prelude defines some 150 local functions and tables before the script's own
//! first line runs. Measured with `INFO commandstats` on Redis 7.0, the job prelude
//! followed by `return 1` took 17 µs of script time against 0.7 µs for `return 1`
//! alone, and `enqueue_jobs` for one job 41–46 µs as an EVALSHA against 23–25 µs as
//! an FCALL of the same code. A library runs its preludes once, when it is loaded;
//! each call runs only its function.
//!
//! What the scripts guaranteed is kept:
//! * atomicity: a function runs as one step, as a script does;
//! * the shebang's flags (`allow-oom`, `no-writes`) become the function's flags, so
//!   a function without `allow-oom` is refused at `maxmemory` before it runs;
//! * per-call state: a script's file-level variables started fresh on every call;
//!   a library's persist between calls, so each `lua/lib` file that keeps per-call
//!   state resets it in its `<file>_begin()`, which every function calls first (a
//!   library test finds every write to file-level state and holds it to a begin);
//! * versions: a library's name carries a hash of everything in it
//!   (`dueq_<prelude>_<hash>`), and so does each function's name, so two dueq
//!   versions on one Redis during a rolling upgrade each call their own code and
//!   never load over each other's (a load never uses `REPLACE`);
//! * a lost library (`FUNCTION FLUSH`, a restart without persistence, a failover to
//!   a node that lacks it) is answered "Function not found" and loaded again, on
//!   the node that answered so, as a NOSCRIPT was (src/store/exec.rs);
//! * Redis Cluster: `FCALL` is routed by its keys as `EVALSHA` was; a library is
//!   loaded on every master at start (`FUNCTION LOAD` goes to all of them) and on
//!   any node that answers "not found".
//!
//! The script texts stay valid `EVAL` scripts (prelude, then body): the bench's
//! seeding tools (src/probe.rs) still run some that way.

use std::sync::OnceLock;

use deadpool_redis::redis::{self, aio::ConnectionLike, Cmd, RedisResult, Script, Value};

use super::{
    ops::SCRIPTS,
    script::{Call, Prelude, ScriptDef},
};

/// Every prelude, in the order their libraries are loaded.
pub(crate) const PRELUDES: [Prelude; 5] = [
    Prelude::Core,
    Prelude::Schedule,
    Prelude::Job,
    Prelude::Claim,
    Prelude::Dispatch,
];

/// The prefix of every library (and function) name dueq loads.
pub(crate) const LIBRARY_PREFIX: &str = "dueq_";

/// One function library: its name and its source, as `FUNCTION LOAD` takes it.
pub(crate) struct Library {
    pub(crate) name: String,
    pub(crate) source: String,
}

impl Library {
    /// `FUNCTION LOAD <source>` (never `REPLACE`: a library's name fixes its code).
    pub(crate) fn load(&self) -> Cmd {
        redis::cmd("FUNCTION")
            .arg("LOAD")
            .arg(self.source.as_str())
            .to_owned()
    }
}

/// The library of `prelude`, built once.
pub(crate) fn library(prelude: Prelude) -> &'static Library {
    static LIBRARIES: OnceLock<Vec<Library>> = OnceLock::new();
    let all = LIBRARIES.get_or_init(|| PRELUDES.iter().map(|&p| build(p)).collect());
    let i = PRELUDES.iter().position(|&p| p == prelude).unwrap_or(0);
    &all[i]
}

/// The name of `prelude`'s library: `dueq_<prelude>_<hash>`, the hash (12 hex digits
/// of a SHA1) over the prelude's files and each script's name and text, so any
/// change to the code is a new name.
fn library_name(prelude: Prelude) -> String {
    let mut all = String::new();
    for part in prelude.parts() {
        all.push_str(part);
    }
    for def in scripts_of(prelude) {
        all.push_str(def.name);
        all.push('\n');
        all.push_str(def.body);
    }
    let hash = Script::new(&all).get_hash().to_owned();
    format!("{LIBRARY_PREFIX}{}_{}", prelude.word(), &hash[..12])
}

/// The function that runs `def`: its library's name, then the script's.
pub(crate) fn function(def: &ScriptDef) -> &str {
    named(def).0
}

/// The function's name and the verb that calls it, worked out once per script.
fn named(def: &ScriptDef) -> (&str, &'static str) {
    def.function_named(|| {
        let verb = if read_only(def) { "FCALL_RO" } else { "FCALL" };
        (format!("{}_{}", library(def.prelude).name, def.name), verb)
    })
}

/// `FCALL function numkeys keys... args...` (`FCALL_RO` for a script that only
/// reads): the call of `def`'s function with `call`'s KEYS and ARGV.
pub(crate) fn fcall(call: &Call, def: &ScriptDef) -> Cmd {
    let (name, verb) = named(def);
    call.command(verb, name)
}

fn scripts_of(prelude: Prelude) -> impl Iterator<Item = &'static ScriptDef> {
    SCRIPTS
        .iter()
        .copied()
        .filter(move |d| d.prelude == prelude)
}

/// The library's source: its shebang, the prelude's files once, the call-begin that
/// resets each file's per-call state, then one `register_function` per script, whose
/// callback is the script's text with KEYS and ARGV as its arguments.
fn build(prelude: Prelude) -> Library {
    let name = library_name(prelude);
    let mut source = format!("#!lua name={name}\n");
    let mut begins = Vec::new();
    for (file, part) in prelude.files() {
        source.push_str(part);
        source.push('\n');
        if part.contains(&format!("local function {file}_begin()")) {
            begins.push(format!("{file}_begin()"));
        }
    }
    source.push_str("local function begin_call()\n");
    for begin in &begins {
        source.push_str(begin);
        source.push('\n');
    }
    source.push_str("end\n");
    for def in scripts_of(prelude) {
        let (shebang, body) = def.shebang();
        let flags: Vec<String> = shebang_flags(shebang).map(|f| format!("'{f}'")).collect();
        let function = format!("{name}_{}", def.name);
        source.push_str(&format!(
            "redis.register_function{{function_name='{function}', flags={{{}}}, \
             callback=function(KEYS, ARGV)\nbegin_call()\n{body}\nend}}\n",
            flags.join(", "),
        ));
    }
    Library { name, source }
}

/// The flags a shebang line names (`#!lua flags=allow-oom,no-writes`).
pub(crate) fn shebang_flags(shebang: &str) -> impl Iterator<Item = &str> {
    shebang
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("flags="))
        .flat_map(|f| f.split(','))
        .filter(|f| !f.is_empty())
}

/// Whether `def` only reads (flagged `no-writes`): it is called with `FCALL_RO`.
pub(crate) fn read_only(def: &ScriptDef) -> bool {
    shebang_flags(def.shebang().0).any(|f| f == "no-writes")
}

/// The script a function name (or an EVALSHA's SHA1) runs, if it is one of this
/// build's.
pub(crate) fn script_of(name_or_sha: &str) -> Option<&'static ScriptDef> {
    SCRIPTS
        .iter()
        .copied()
        .find(|def| function(def) == name_or_sha || def.script().get_hash() == name_or_sha)
}

/// Whether a Redis error says the function called is not loaded on that node.
pub(crate) fn is_missing_function(err: &redis::ServerError) -> bool {
    err.details()
        .is_some_and(|d| d.starts_with("Function not found"))
}

/// Whether a `FUNCTION LOAD` error says the library is loaded already (by another
/// replica, between this one's miss and its load): the load's goal is met.
pub(crate) fn is_loaded_already(err: &redis::ServerError) -> bool {
    err.details().is_some_and(already_exists)
}

/// Loads every library (a library loaded already counts as loaded), then deletes
/// the libraries of other dueq versions, which a dueq of this version never calls:
/// a version's five hold about 1.4 MB of Redis's memory together. An older dueq
/// still running (a rolling upgrade) finds its functions gone at its next call and
/// loads its library again, once per deletion, so this runs only when the service
/// starts or Redis comes back. On Redis Cluster the load goes to every master; the list comes
/// from one node, so another node's old libraries wait for a later start.
pub(crate) async fn load_all(conn: &mut (impl ConnectionLike + Send)) -> RedisResult<()> {
    let mut current = Vec::with_capacity(PRELUDES.len());
    for prelude in PRELUDES {
        let library = library(prelude);
        match conn.req_packed_command(&library.load()).await {
            Ok(value) => loaded(value)?,
            Err(e) if e.detail().is_some_and(already_exists) => {}
            Err(e) => return Err(e),
        }
        current.push(library.name.as_str());
    }
    for name in listed(conn).await? {
        if !current.contains(&name.as_str()) {
            let delete = redis::cmd("FUNCTION").arg("DELETE").arg(&name).to_owned();
            match conn.req_packed_command(&delete).await {
                Ok(_) => {
                    tracing::info!(library = %name, "deleted another dueq version's function library")
                }
                Err(e) => {
                    tracing::debug!(library = %name, error = %e, "could not delete an old function library")
                }
            }
        }
    }
    Ok(())
}

/// A FUNCTION LOAD's reply: its error unless the library is there already.
fn loaded(value: Value) -> RedisResult<()> {
    match value {
        Value::ServerError(e) if is_loaded_already(&e) => Ok(()),
        other => other.extract_error().map(drop),
    }
}

fn already_exists(detail: &str) -> bool {
    detail.starts_with("Library '") && detail.ends_with("already exists")
}

/// The names of the dueq libraries Redis holds (`FUNCTION LIST LIBRARYNAME dueq_*`, a
/// glob:
/// each entry is a map, or a flat list of pairs in RESP2, holding `library_name`).
async fn listed(conn: &mut (impl ConnectionLike + Send)) -> RedisResult<Vec<String>> {
    let list = redis::cmd("FUNCTION")
        .arg("LIST")
        .arg("LIBRARYNAME")
        .arg(format!("{LIBRARY_PREFIX}*"))
        .to_owned();
    let Value::Array(entries) = conn.req_packed_command(&list).await?.extract_error()? else {
        return Ok(Vec::new());
    };
    let mut names = Vec::new();
    for entry in entries {
        let pairs: Vec<(Value, Value)> = match entry {
            Value::Map(pairs) => pairs,
            Value::Array(flat) => {
                let mut it = flat.into_iter();
                std::iter::from_fn(|| Some((it.next()?, it.next()?))).collect()
            }
            _ => continue,
        };
        for (k, v) in pairs {
            let is_name = matches!(&k, Value::BulkString(b) if b == b"library_name")
                || matches!(&k, Value::SimpleString(s) if s == "library_name");
            if let (true, Value::BulkString(b)) = (is_name, v) {
                let name = String::from_utf8_lossy(&b).into_owned();
                if name.starts_with(LIBRARY_PREFIX) {
                    names.push(name);
                }
            }
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use deadpool_redis::redis::{self, Value};

    use super::{function, library, load_all, read_only, script_of, shebang_flags, PRELUDES};
    use crate::{
        store::{ops::SCRIPTS, script::Prelude},
        testing::TestRedis,
    };

    /// Every library loads in a real Redis, and holds a function per script of its
    /// prelude with the script's flags.
    #[tokio::test]
    async fn every_library_loads_with_each_scripts_flags() {
        let redis = TestRedis::start().await;
        let mut conn = redis.conn().await;
        load_all(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("a library does not load: {e}"));
        for def in SCRIPTS {
            let flags: Value = redis::cmd("FUNCTION")
                .arg("LIST")
                .arg("LIBRARYNAME")
                .arg(&library(def.prelude).name)
                .query_async(&mut conn)
                .await
                .unwrap_or_else(|e| panic!("FUNCTION LIST: {e}"));
            let text = format!("{flags:?}");
            assert!(text.contains(function(def)), "{}: {text}", def.name);
            for flag in shebang_flags(def.shebang().0) {
                assert!(text.contains(flag), "{}: {flag} in {text}", def.name);
            }
            assert_eq!(script_of(function(def)).map(|d| d.name), Some(def.name));
        }
        // Loading again is no error (the libraries are there): a second replica.
        load_all(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("a second load: {e}"));
    }

    /// Pins issue 35's rolling upgrade: another dueq version's library (its own
    /// name, its own function names) lives beside this version's, each side calls
    /// its own code, and neither load replaces the other's; a start of this
    /// version then deletes the other dueq library (which that version would load
    /// again at its next call) and leaves libraries that are not dueq's alone.
    #[tokio::test]
    async fn another_versions_library_is_never_loaded_over() {
        let redis = TestRedis::start().await;
        let mut conn = redis.conn().await;
        let old = "dueq_job_000000000000";
        let old_fn = format!("{old}_enqueue_jobs");
        for (lib, func) in [(old, old_fn.as_str()), ("theirs", "theirs_fn")] {
            let source = format!(
                "#!lua name={lib}\nredis.register_function('{func}', function() return 'old' end)"
            );
            let _: String = redis::cmd("FUNCTION")
                .arg("LOAD")
                .arg(source)
                .query_async(&mut conn)
                .await
                .unwrap_or_else(|e| panic!("FUNCTION LOAD {lib}: {e}"));
        }
        let current = &super::super::ops::enqueue_jobs::SCRIPT;
        assert_ne!(function(current), old_fn);
        // This version loads beside it: its own enqueue_jobs runs its own code.
        for prelude in PRELUDES {
            let _: Value = redis::cmd("FUNCTION")
                .arg("LOAD")
                .arg(&library(prelude).source)
                .query_async(&mut conn)
                .await
                .unwrap_or_else(|e| panic!("FUNCTION LOAD: {e}"));
        }
        let old_says: String = redis::cmd("FCALL")
            .arg(&old_fn)
            .arg(0)
            .query_async(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("FCALL old: {e}"));
        assert_eq!(old_says, "old", "the old version's code is untouched");
        let refused = redis::cmd("FCALL")
            .arg(function(current))
            .arg(2)
            .arg("{ns}:meta")
            .arg("{ns}:jdone")
            .query_async::<Value>(&mut conn)
            .await;
        assert!(
            refused.is_err(),
            "this version's own code ran: it checks its arity"
        );
        // A start of this version deletes the other dueq library, not theirs.
        load_all(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("load_all: {e}"));
        let gone = redis::cmd("FCALL")
            .arg(&old_fn)
            .arg(0)
            .query_async::<Value>(&mut conn)
            .await;
        assert!(
            gone.is_err_and(|e| e.to_string().contains("Function not found")),
            "the old dueq library is deleted"
        );
        let theirs: String = redis::cmd("FCALL")
            .arg("theirs_fn")
            .arg(0)
            .query_async(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("FCALL theirs: {e}"));
        assert_eq!(theirs, "old");
    }

    /// Each library's name, and each function's, carries a hash of its code: two
    /// versions never share a name.
    #[test]
    fn names_carry_a_version() {
        let names: BTreeSet<&str> = PRELUDES.iter().map(|&p| library(p).name.as_str()).collect();
        assert_eq!(names.len(), PRELUDES.len());
        for def in SCRIPTS {
            let lib = &library(def.prelude).name;
            assert_eq!(function(def), format!("{lib}_{}", def.name));
            let hash = lib.rsplit('_').next().unwrap_or_default();
            assert_eq!(hash.len(), 12, "{lib}");
            assert!(hash.chars().all(|c| c.is_ascii_hexdigit()), "{lib}");
        }
        // A read flagged no-writes is called with FCALL_RO, every other with FCALL.
        for def in SCRIPTS {
            let packed =
                super::fcall(&crate::store::script::Call::default(), def).get_packed_command();
            let verb = if read_only(def) { "FCALL_RO" } else { "FCALL" };
            let head = format!("${}\r\n{verb}\r\n", verb.len());
            assert!(
                packed.windows(head.len()).any(|w| w == head.as_bytes()),
                "{}: {verb}",
                def.name
            );
            assert_eq!(read_only(def), def.shebang().0.contains("no-writes"));
        }
        assert!(read_only(&crate::store::ops::get_job::SCRIPT));
    }

    /// The names declared at the top level of the lua/lib files (`local NAME =`,
    /// and module tables' fields), which a library keeps between calls.
    fn file_level_names() -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        for (_, text) in Prelude::Dispatch.files() {
            for line in text.lines() {
                let Some(decl) = line.strip_prefix("local ") else {
                    continue;
                };
                if decl.starts_with("function") {
                    continue;
                }
                let Some((lhs, _)) = decl.split_once('=') else {
                    continue;
                };
                names.extend(lhs.split(',').map(|n| n.trim().to_owned()));
            }
        }
        names
    }

    /// What a line assigns to, when it assigns to file-level state: `NAME = ...`,
    /// `NAME.field = ...` or `NAME.field[k] = ...` / `NAME[k] = ...` (the target
    /// named up to its first index), not a `local` declaration.
    fn state_written(line: &str, names: &BTreeSet<String>) -> Option<String> {
        let code = line.split("--").next().unwrap_or_default().trim();
        if code.starts_with("local ") || code.starts_with("function ") {
            return None;
        }
        let (lhs, rhs) = code.split_once('=')?;
        if rhs.starts_with('=') || lhs.ends_with(['~', '<', '>', '=']) {
            return None;
        }
        let first = lhs.split(',').next()?.trim();
        let target = first.split('[').next()?.trim();
        let root = target.split('.').next()?;
        let ident = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_');
        if !ident(root) || !names.contains(root) || !target.split('.').all(ident) {
            return None;
        }
        Some(target.to_owned())
    }

    /// Pins issue 35's per-call state: every write to file-level state inside a
    /// function of a lua/lib file, or anywhere in a script (whose text is a
    /// function's body in a library), is to a variable or field some `<file>_begin`
    /// resets, so no call sees what the previous call left. A new per-call variable
    /// without a reset fails here.
    #[test]
    fn every_write_to_file_level_state_is_reset_per_call() {
        let names = file_level_names();
        let begins: String = Prelude::Dispatch
            .files()
            .iter()
            .filter_map(|(file, text)| {
                let start = text.find(&format!("local function {file}_begin()"))?;
                let end = text[start..].find("\nend")? + start;
                Some(text[start..end].to_owned())
            })
            .collect();
        let mut unreset = Vec::new();
        let files = Prelude::Dispatch
            .files()
            .iter()
            .map(|(f, t)| (*f, *t, true));
        let bodies = SCRIPTS.iter().map(|d| (d.name, d.body, false));
        for (file, text, is_lib) in files.chain(bodies) {
            for line in text.lines() {
                // In a lib file, a write at the top level is its initial value.
                if is_lib && !line.starts_with([' ', '\t']) {
                    continue;
                }
                if let Some(target) = state_written(line, &names) {
                    let root = target.split('.').next().unwrap_or_default();
                    let whole = format!("{root} = ");
                    if !begins.contains(&target) && !begins.contains(&whole) {
                        unreset.push(format!("{file}: {}", line.trim()));
                    }
                }
            }
        }
        assert!(
            unreset.is_empty(),
            "per-call state no begin resets: {unreset:#?}"
        );
        // The check can fail: a write it must flag.
        assert_eq!(
            state_written("  graph.spent = graph.spent + 1", &names).as_deref(),
            Some("graph.spent")
        );
        assert_eq!(state_written("  local spent = 1", &names), None);
    }
}
