//! The Rust half of the Rust↔Lua contract. Each script in `lua/` has exactly one
//! [`Operation`] in `src/store/ops/` (a file of the same name) that owns its whole
//! contract: the keys it passes (from `keys.rs` only), its arguments (borrowed, so a
//! payload is copied once, into the command), and a typed decode of its reply through
//! the [`Reply`] cursor. The script list (`ops::SCRIPTS`) is derived from the
//! operations, and a library test walks every operation: its script loads in a real
//! Redis, the KEYS and ARGV it sends match the counts the script's header declares,
//! and the name each ARGV value is pushed with ([`Call::arg`]) is the header's name
//! for its position (`ARGV[i] name: ...`), in the header's order.

use std::sync::OnceLock;

use deadpool_redis::redis::{self, Cmd, Script, ToRedisArgs};

use super::{keys::NamespaceKeys, reply::Reply, StoreError};

/// The script libraries a script is built on, prepended to its own file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Prelude {
    /// `lua/lib/core.lua` alone.
    Core,
    /// core, rules, the schema guard, the packed schedule record and its listing.
    Schedule,
    /// core, the job layout and flow control (`lua/lib/flow.lua`).
    Job,
    /// Schedule's, and how a due slot is taken (`lua/lib/claim.lua`): claim_due.
    Claim,
    /// Claim's with the job layout before the claim library: dispatch_due, which
    /// takes target schedules' slots and enqueues them as jobs.
    Dispatch,
}

const CORE: &str = include_str!("../../lua/lib/core.lua");
const RULES: &str = include_str!("../../lua/lib/rules.lua");
const GUARD: &str = include_str!("../../lua/lib/guard.lua");
const SCHEDULE: &str = include_str!("../../lua/lib/schedule.lua");
const JOB: &str = include_str!("../../lua/lib/job.lua");
const CLAIM: &str = include_str!("../../lua/lib/claim.lua");
const FLOW: &str = include_str!("../../lua/lib/flow.lua");
const GRAPH: &str = include_str!("../../lua/lib/graph.lua");

impl Prelude {
    pub(crate) fn parts(self) -> Vec<&'static str> {
        self.files().iter().map(|(_, text)| *text).collect()
    }

    /// The library files, each with its name (`lua/lib/<name>.lua`), in order.
    pub(crate) fn files(self) -> &'static [(&'static str, &'static str)] {
        const C: (&str, &str) = ("core", CORE);
        const R: (&str, &str) = ("rules", RULES);
        const G: (&str, &str) = ("guard", GUARD);
        const S: (&str, &str) = ("schedule", SCHEDULE);
        const J: (&str, &str) = ("job", JOB);
        const F: (&str, &str) = ("flow", FLOW);
        const D: (&str, &str) = ("graph", GRAPH);
        const L: (&str, &str) = ("claim", CLAIM);
        match self {
            Prelude::Core => &[C],
            Prelude::Schedule => &[C, R, G, S],
            Prelude::Job => &[C, J, F, D],
            Prelude::Claim => &[C, R, G, S, L],
            Prelude::Dispatch => &[C, R, G, S, J, F, D, L],
        }
    }

    /// Its name in a library's name (src/store/library.rs).
    pub(crate) fn word(self) -> &'static str {
        match self {
            Prelude::Core => "core",
            Prelude::Schedule => "schedule",
            Prelude::Job => "job",
            Prelude::Claim => "claim",
            Prelude::Dispatch => "dispatch",
        }
    }
}

/// How many KEYS or ARGV a script takes, as its header declares them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arity {
    Exactly(usize),
    /// `fixed`, then any number more (a list of ids or queue names).
    AtLeast(usize),
    /// `fixed`, then whole groups of `group` values (one group per record).
    Groups {
        fixed: usize,
        group: usize,
    },
}

impl Arity {
    /// Whether `n` values fit.
    pub(crate) fn admits(self, n: usize) -> bool {
        match self {
            Arity::Exactly(k) => n == k,
            Arity::AtLeast(k) => n >= k,
            Arity::Groups { fixed, group } => n >= fixed && (n - fixed).is_multiple_of(group),
        }
    }
}

/// One Lua script: its name (the file's stem), its source, and its declared arity.
pub(crate) struct ScriptDef {
    pub(crate) name: &'static str,
    pub(crate) prelude: Prelude,
    pub(crate) body: &'static str,
    pub(crate) keys: Arity,
    pub(crate) argv: Arity,
    script: OnceLock<Script>,
    /// Its Redis function's name and the verb that calls it (FCALL or FCALL_RO),
    /// kept once src/store/library.rs has named them.
    function: OnceLock<(String, &'static str)>,
}

impl ScriptDef {
    pub(crate) const fn new(
        name: &'static str,
        prelude: Prelude,
        body: &'static str,
        keys: Arity,
        argv: Arity,
    ) -> Self {
        ScriptDef {
            name,
            prelude,
            body,
            keys,
            argv,
            script: OnceLock::new(),
            function: OnceLock::new(),
        }
    }

    /// Its Redis function's name and verb as `named` gives them, made on the first
    /// call and kept.
    pub(crate) fn function_named(
        &self,
        named: impl FnOnce() -> (String, &'static str),
    ) -> (&str, &'static str) {
        let (name, verb) = self.function.get_or_init(named);
        (name, verb)
    }

    /// The script as Redis runs it: the file's shebang, the prelude, then the rest
    /// of the file.
    pub(crate) fn script(&self) -> &Script {
        self.script.get_or_init(|| Script::new(&self.source()))
    }

    pub(crate) fn source(&self) -> String {
        let (shebang, rest) = self.shebang();
        let mut source = String::with_capacity(self.body.len() + 16 * 1024);
        source.push_str(shebang);
        source.push('\n');
        source.extend(self.prelude.parts().iter().copied());
        source.push_str(rest);
        source
    }

    /// The file's first line, its Redis 7 shebang (`#!lua` or `#!lua flags=...`), and
    /// the rest of the file. Redis reads flags only from the first line of the script
    /// text, so the shebang goes before the prelude. Every script has one: without it
    /// Redis runs a script in its compatibility mode, where at `maxmemory` only the
    /// first write is refused, so whether a script ran depended on the order of its
    /// commands (a claim whose first write was a pop went through, an ack whose first
    /// write was a SET did not). With it, a script without `allow-oom` is refused
    /// before it runs, and one with it always runs: work is handed out only while
    /// Redis has room, and what finishes or releases work (or only reads) still
    /// runs when it has none, so a full Redis drains instead of killing leases.
    pub(crate) fn shebang(&self) -> (&'static str, &'static str) {
        match self.body.split_once('\n') {
            Some((first, rest)) if first.starts_with("#!lua") => (first, rest),
            _ => ("#!lua", self.body),
        }
    }
}

/// Declares an operation's script and ties it to the operation:
/// `script!(ClaimDue<'_>: "claim_due", Schedule, keys, argv)`.
macro_rules! script {
    ($op:ty: $name:literal, $prelude:ident, $keys:expr, $argv:expr) => {
        pub(crate) static SCRIPT: $crate::store::script::ScriptDef =
            $crate::store::script::ScriptDef::new(
                $name,
                $crate::store::script::Prelude::$prelude,
                include_str!(concat!("../../../lua/", $name, ".lua")),
                $keys,
                $argv,
            );

        impl $crate::store::script::Scripted for $op {
            fn script(&self) -> &'static $crate::store::script::ScriptDef {
                &SCRIPT
            }
        }
    };
}
pub(crate) use script;

/// The KEYS and ARGV of one script call. Every ARGV value is pushed with its name,
/// the one the script's header gives it (`ARGV[i] name: ...`): a library test holds
/// the names an operation pushes, in order, to the names its script declares.
///
/// The ARGV values are written one after another into one buffer (a `Cmd` used as
/// an argument list), not each into a `Vec` of its own: a grouped Enqueue of 8 jobs
/// pushes some 160 values, and an allocation per value was a measurable part of the
/// service's CPU per Enqueue (issue 35). The few KEYS keep a `Vec` each.
#[derive(Default)]
pub(crate) struct Call {
    keys: Vec<Vec<u8>>,
    args: Argv,
    /// The name of each ARGV value (kept for that test only).
    #[cfg(test)]
    names: Vec<&'static str>,
}

/// ARGV values in one buffer, and how many there are.
#[derive(Default)]
struct Argv {
    values: Cmd,
    len: usize,
}

impl redis::RedisWrite for Argv {
    fn write_arg(&mut self, arg: &[u8]) {
        self.len += 1;
        self.values.write_arg(arg);
    }

    fn writer_for_next_arg(&mut self) -> impl std::io::Write + '_ {
        self.len += 1;
        self.values.writer_for_next_arg()
    }
}

impl Call {
    pub(crate) fn key(&mut self, key: impl ToRedisArgs) -> &mut Self {
        key.write_redis_args(&mut self.keys);
        self
    }

    /// ARGV value(s) `name` (a value such as a list may push several).
    pub(crate) fn arg(&mut self, name: &'static str, arg: impl ToRedisArgs) -> &mut Self {
        arg.write_redis_args(&mut self.args);
        #[cfg(test)]
        self.names.resize(self.args.len, name);
        #[cfg(not(test))]
        let _ = name;
        self
    }

    /// An optional number: "" when unset (how the scripts read "none").
    pub(crate) fn opt(&mut self, name: &'static str, value: Option<i64>) -> &mut Self {
        match value {
            Some(v) => self.arg(name, v),
            None => self.arg(name, ""),
        }
    }

    pub(crate) fn flag(&mut self, name: &'static str, value: bool) -> &mut Self {
        self.arg(name, if value { "1" } else { "0" })
    }

    /// How many KEYS and ARGV the call has.
    pub(crate) fn counts(&self) -> (usize, usize) {
        (self.keys.len(), self.args.len)
    }

    /// The name of each ARGV value, in order.
    #[cfg(test)]
    pub(crate) fn names(&self) -> &[&'static str] {
        &self.names
    }

    /// `<verb> <name> numkeys keys... args...`, in a command sized for them up front.
    pub(crate) fn command(&self, verb: &str, name: &str) -> Cmd {
        let args = self.args.values.args_iter().filter_map(|arg| match arg {
            redis::Arg::Simple(bytes) => Some(bytes),
            // Only a SCAN-style command has a cursor; no value written here is one.
            _ => None,
        });
        let bytes = self.keys.iter().map(Vec::len).sum::<usize>()
            + args.clone().map(<[u8]>::len).sum::<usize>()
            + verb.len()
            + name.len()
            + 16;
        let mut cmd = Cmd::with_capacity(3 + self.keys.len() + self.args.len, bytes);
        cmd.arg(verb).arg(name).arg(self.keys.len());
        for key in &self.keys {
            cmd.arg(key.as_slice());
        }
        for arg in args {
            cmd.arg(arg);
        }
        cmd
    }
}

/// One state transition (or read): a script call with typed arguments and reply.
/// The script an operation runs: its module's `SCRIPT`, declared with `script!`,
/// which implements this.
pub(crate) trait Scripted {
    fn script(&self) -> &'static ScriptDef;
}

pub(crate) trait Operation: Scripted {
    type Output;

    /// Pushes KEYS, then ARGV, for the namespace whose keys are given.
    fn encode(&self, keys: &NamespaceKeys, call: &mut Call);

    /// Decodes the script's reply.
    fn decode(&self, reply: Reply) -> Result<Self::Output, StoreError>;
}

#[cfg(test)]
mod tests {
    use deadpool_redis::redis;

    use super::Call;

    /// Pins issue 35's encoding: ARGV values written into one buffer come out as
    /// the same FCALL, byte for byte, as each pushed on its own (keys pushed
    /// after values included, as ClaimJobs's receipt key is), and are counted one
    /// per value even when one push writes several.
    #[test]
    fn fcall_is_the_command_of_each_value_pushed_on_its_own() {
        let mut call = Call::default();
        call.key("k1")
            .arg("a", "text")
            .arg("b", 42_i64)
            .arg("c", b"\x00bin".as_slice())
            .key("k2")
            .arg("d", &["x", "y"])
            .opt("e", None)
            .flag("f", true);
        assert_eq!(call.counts(), (2, 7));
        assert_eq!(call.names(), ["a", "b", "c", "d", "d", "e", "f"]);
        let expected = redis::cmd("FCALL")
            .arg("f")
            .arg(2)
            .arg("k1")
            .arg("k2")
            .arg("text")
            .arg(42)
            .arg(b"\x00bin".as_slice())
            .arg("x")
            .arg("y")
            .arg("")
            .arg("1")
            .get_packed_command();
        assert_eq!(call.command("FCALL", "f").get_packed_command(), expected);
    }
}
