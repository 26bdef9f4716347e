//! The Redis key layout. Nothing outside this module builds a key.
//!
//! Every key of a namespace carries the hash tag `{<namespace>}` so that Redis Cluster
//! puts all of them in one slot and every script touches a single slot (invariant 6 in docs/DESIGN.md).
//! The prefix and the namespace are validated to hold no `{`, `}` or other characters
//! that could move the tag; ids come last, after a fixed per-kind infix, so no id can
//! produce another record's key or an internal key:
//!
//! | key                          | type | holds                                      |
//! |------------------------------|------|--------------------------------------------|
//! | `<prefix>:{<ns>}:meta`       | hash | namespace metadata (`schema` version)      |
//! | `<prefix>:{<ns>}:due`        | zset | schedule id -> next run (epoch ms)         |
//! | `<prefix>:{<ns>}:lt`         | zset | listing: leaf boundary ids -> 0 (lex)      |
//! | `<prefix>:{<ns>}:lk:<id>`    | zset | listing leaf: <= 120 ids from its boundary |
//! | `<prefix>:{<ns>}:s:<id>`     | str  | the schedule record, packed (canonical)    |
//! | `<prefix>:{<ns>}:migrate_lock` | string | Migrate's lease (token, with a TTL)      |
//!
//! Schema 2 kept each schedule as a hash and listed them in `<prefix>:{<ns>}:ids`, a
//! zset of every id; the pre-index layout (schema 1) had the same hashes, `:ids` as a
//! SET, no `:due` and no `:meta`. Migrate upgrades both. Schedule scripts are still
//! handed `:ids`, so the guard can recognise those layouts.
//! | `<prefix>:{<ns>}:j:<id>`     | str  | the job record, packed (canonical)         |
//! | `<prefix>:{<ns>}:jp:<id>`    | str  | a payload over 1 KiB, out of its record    |
//! | `<prefix>:{<ns>}:rl:<prio>:<queue>` | list | ready job numbers of one priority, FIFO |
//! | `<prefix>:{<ns>}:rp:<queue>` | zset | priorities with a ready list -> -priority  |
//! | `<prefix>:{<ns>}:qd:<queue>` | zset | delayed jobs: id -> run at (epoch ms)      |
//! | `<prefix>:{<ns>}:ql:<queue>` | zset | leased jobs: id -> lease deadline (ms)     |
//! | `<prefix>:{<ns>}:lb:<n/64>:<queue>` | hash | listing: job number mod 64 -> id    |
//! | `<prefix>:{<ns>}:dd:<key>`   | str  | dedup key -> job id, with the dedup TTL    |
//! | `<prefix>:{<ns>}:jdone`      | zset | finished job id -> finish time, retention  |
//! | `<prefix>:{<ns>}:o:<occ id>` | hash | a leased schedule occurrence               |
//! | `<prefix>:{<ns>}:oleases`    | zset | leased occurrence id -> lease deadline     |
//! | `<prefix>:{<ns>}:bf:<id>`    | zset | a schedule's backfilled slots (ms -> ms)   |
//! | `<prefix>:{<ns>}:rr:<id>`    | list | a schedule's last 10 runs, newest first    |
//! | `<prefix>:{<ns>}:meta:q:<queue>` | hash | queue state: `pending` count, `paused` |
//! | `<prefix>:{<ns>}:meta:dead:<queue>` | zset | dead job id -> finish ms, per queue |
//! | `<prefix>:{<ns>}:meta:queues` | zset | queue registry: queue name -> 0 (by name) |
//! | `<prefix>:{<ns>}:meta:expire` | zset | keep_for job id -> when it expires (ms) |
//! | `<prefix>:{<ns>}:meta:kept:<state>:<queue>` | zset | keep_last job id -> finish order |
//! | `<prefix>:{<ns>}:meta:f<kind>:<len>:<queue><rest>` | (by kind) | flow control (issue 32): a queue's lanes, rotation, slots, rates, throttles, key limits and weights (lib/flow.lua's header names each kind) |
//! | `<prefix>:{<ns>}:meta:dag:<flow id>` | hash | a flow of jobs (issue 34): counts, refs and ids, each node's entry, count and mark (lib/graph.lua's header names each field) |
//! | `<prefix>:{<ns>}:meta:dags` | zset | running flow id -> created ms |
//! | `<prefix>:{<ns>}:meta:dagsdone` | zset | finished flow id -> finished ms (pruned together) |
//! | `<prefix>:{<ns>}:meta:dagstage` | zset | flow id being stored -> when its store is given up |
//! | `<prefix>:{<ns>}:meta:dagq` | list | graph work queued for later calls (lib/graph.lua) |
//! | `<prefix>:{<ns>}:meta:audit` | stream | the audit log (issue 33): one entry per audited call, capped |
//! | `<prefix>:{<ns>}:meta:workers` | hash | open Work streams and long-polls (issue 33): session id -> last seen and record |
//! | `<prefix>:{<ns>}:meta:claim:<token base>` | list | a claim's leased job ids under `--redis-wait-replicas`, kept a minute (issue 29 item 11); `[""]` once given back |
//! | `<prefix>:{<ns>}:due:t`      | zset | target schedule id -> next run (dispatch)  |
//! | `<prefix>:prune-due`         | zset | namespace -> when it next needs pruning    |
//! | `<prefix>:dispatch-due`      | zset | namespace -> its earliest target slot      |
//! | `<prefix>:namespaces`        | zset | namespace registry: name -> first seen ms  |
//! | `<prefix>:principal:<hex name>:namespaces` | set | the namespaces a principal with `max_namespaces` wrote into (issue 29) |
//! | `<prefix>:{<ns>}:jc`         | channel | pub/sub, not a key: job changes (issue 30) |
//!
//! The `meta:` keys are composed from meta in Lua (lib/job.lua `queue_state`,
//! `queue_dead`, `queue_registry`, `retention.expiry`, `retention.kept`, `dg.groups`,
//! `dg.set`, `dg.order`, lib/flow.lua
//! `flow.key`, lib/graph.lua `graph.key` and its sets, pinned to the functions here by
//! library tests); their infixes (`q:`, `dead:`, `queues`, `jobs`, `expire`, `kept:`,
//! `dg`, `dg:`, `dgo`, `dgo:`,
//! `f<kind>:`, `dag:`, `dags`, `dagsdone`, `dagstage`, `dagq`, `audit`, `workers`, `claim:`) follow meta's own name,
//! which no other kind of key starts with. A flow key carries the queue's length
//! before the queue, so no two queues' flow keys meet whatever follows the queue.
//!
//! `prune-due`, `dispatch-due`, `namespaces` and the `principal:` sets are the keys outside every namespace's slot. No script touches them
//! (invariant 6): it is written by plain commands after the job scripts that tell
//! the caller to (see docs/DESIGN.md, "Pruning"). It holds no `{`, so no namespace
//! key can equal it.
//!
//! Every variable part (id, queue, dedup key) is the last part of its key and follows
//! an infix no other kind of key uses, so `qd:a` can only be queue `a`'s delayed set.
//! Where a number sits between the infix and the queue (`rl:`, `lb:`), it holds no
//! `:`, so the first `:` after it ends it. `lua/lib/job.lua` describes the job layout
//! (layout 2); layout 1 kept a hash per job and the sorted sets `qr:<queue>` (ready)
//! and `qj:<queue>` (listing), which Migrate converts.
//!
//! Scripts get every key and key prefix from here: a script only appends an id (or,
//! in `ready_list` and `listing_bucket` of lua/lib/job.lua, a number and a queue, the
//! two compositions a library test pins to [`NamespaceKeys::ready_list`] and
//! [`NamespaceKeys::listing_bucket`]).

/// The prune due-set: namespaces with finished jobs, scored by when they next need
/// a prune (epoch ms).
pub(crate) fn prune_due(prefix: &str) -> String {
    format!("{prefix}:prune-due")
}

/// The dispatch due-set: namespaces with target schedules (issue 30), scored by
/// their earliest due slot (epoch ms). Outside every namespace's slot, written by
/// plain commands only (`Store::dispatch_soon`), never from a script.
pub(crate) fn dispatch_due(prefix: &str) -> String {
    format!("{prefix}:dispatch-due")
}

/// The namespaces principal `name` has written into (`Store::admit_principal_namespace`):
/// outside every namespace's slot, written by plain commands only. The name is
/// written in hex, so no principal's name can make its key another's, or hold a `{`.
pub(crate) fn principal_namespaces(prefix: &str, name: &str) -> String {
    let hex: String = name.bytes().map(|b| format!("{b:02x}")).collect();
    format!("{prefix}:principal:{hex}:namespaces")
}

/// The namespace registry: namespace -> when this registry first saw it (epoch ms).
/// Like `prune-due`, outside every namespace's slot, so written by plain commands
/// only (`Store::register_namespace`), never from a script.
pub(crate) fn namespaces(prefix: &str) -> String {
    format!("{prefix}:namespaces")
}

/// The pattern every namespace's job-changes channel ([`NamespaceKeys::job_changes`])
/// matches: one PSUBSCRIBE per replica hears them all. A prefix holds no glob
/// character (`check_prefix`), so the pattern matches this prefix's channels only.
pub(crate) fn job_changes_pattern(prefix: &str) -> String {
    format!("{prefix}:{{*}}:jc")
}

/// The channel on which replicas announce work they made claimable
/// (`Store::publish_ready`), so long-polls waiting on other replicas wake without
/// polling. Outside [`job_changes_pattern`]: it holds no `{`.
pub(crate) fn ready_channel(prefix: &str) -> String {
    format!("{prefix}:ready")
}

/// The namespace of a job-changes channel of `prefix`, or None for another channel.
pub(crate) fn job_changes_namespace<'a>(prefix: &str, channel: &'a str) -> Option<&'a str> {
    channel
        .strip_prefix(prefix)?
        .strip_prefix(":{")?
        .strip_suffix("}:jc")
        .filter(|ns| !ns.is_empty() && !ns.contains('}'))
}

/// Checks a key prefix: the namespace rules plus `:` for nesting (`app:dueq`), so it
/// can hold no hash tag and no glob character.
pub(crate) fn check_prefix(prefix: &str) -> Result<(), String> {
    let ok = !prefix.is_empty()
        && prefix.len() <= 64
        && prefix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "key prefix {prefix:?} must be 1-64 characters of A-Z a-z 0-9 _ - . :"
        ))
    }
}

/// Keys of one namespace.
#[derive(Debug, Clone)]
pub(crate) struct NamespaceKeys {
    base: String,
}

impl NamespaceKeys {
    /// `prefix` and `namespace` must already be validated (the namespace rules in
    /// `domain::limits`; the prefix in `config`).
    pub(crate) fn new(prefix: &str, namespace: &str) -> Self {
        Self {
            base: format!("{prefix}:{{{namespace}}}:"),
        }
    }

    pub(crate) fn meta(&self) -> String {
        format!("{}meta", self.base)
    }

    pub(crate) fn due(&self) -> String {
        format!("{}due", self.base)
    }

    /// The target schedules' index (issue 30): the due index's name and `:t`, which
    /// lua/lib/schedule.lua `sched_target_index` composes from it (a library test pins
    /// the two). Only dispatch_due reads it, so ClaimDueSchedule never meets them.
    pub(crate) fn target_due(&self) -> String {
        format!("{}due:t", self.base)
    }

    pub(crate) fn ids(&self) -> String {
        format!("{}ids", self.base)
    }

    /// The audit log: a capped stream, one entry per audited call (issue 33).
    pub(crate) fn audit(&self) -> String {
        format!("{}:audit", self.meta())
    }

    /// The worker sessions every replica publishes: session id -> last seen and
    /// record (issue 33).
    pub(crate) fn workers(&self) -> String {
        format!("{}:workers", self.meta())
    }

    pub(crate) fn migrate_lock(&self) -> String {
        format!("{}migrate_lock", self.base)
    }

    /// The listing's boundaries (lua/lib/schedule.lua keeps it).
    pub(crate) fn listing_top(&self) -> String {
        format!("{}lt", self.base)
    }

    /// The prefix a listing leaf's boundary id is appended to.
    pub(crate) fn listing_leaf_prefix(&self) -> String {
        format!("{}lk:", self.base)
    }

    /// The listing leaf whose lowest possible id is `boundary`.
    #[cfg(test)]
    pub(crate) fn listing_leaf(&self, boundary: &str) -> Vec<u8> {
        let mut key = self.listing_leaf_prefix().into_bytes();
        key.extend_from_slice(boundary.as_bytes());
        key
    }

    /// The prefix a schedule id is appended to; scripts that visit many schedules
    /// build their keys from it.
    pub(crate) fn schedule_prefix(&self) -> String {
        format!("{}s:", self.base)
    }

    /// A schedule's backfilled slots waiting for claims (slot ms -> slot ms).
    pub(crate) fn backfill(&self, id: &str) -> Vec<u8> {
        let mut key = self.backfill_prefix().into_bytes();
        key.extend_from_slice(id.as_bytes());
        key
    }

    /// The prefix a schedule id is appended to for its backfill set.
    pub(crate) fn backfill_prefix(&self) -> String {
        format!("{}bf:", self.base)
    }

    /// A schedule's recent runs (GetSchedule), newest first, at most 10.
    pub(crate) fn runs(&self, id: &str) -> Vec<u8> {
        let mut key = self.runs_prefix().into_bytes();
        key.extend_from_slice(id.as_bytes());
        key
    }

    /// The prefix a schedule id is appended to for its recent runs.
    pub(crate) fn runs_prefix(&self) -> String {
        format!("{}rr:", self.base)
    }

    /// Leased schedule occurrences scored by lease deadline.
    pub(crate) fn occurrence_leases(&self) -> String {
        format!("{}oleases", self.base)
    }

    /// The prefix an occurrence id is appended to for its lease record.
    pub(crate) fn occurrence_prefix(&self) -> String {
        format!("{}o:", self.base)
    }

    /// The namespace's job-changes channel (issue 30): a Redis pub/sub channel, not a
    /// key, on which every write of a watched job record, and of an active one whose
    /// cancel was asked, is announced (lib/job.lua `changes_of` composes it from the
    /// record's key; a library test pins the two).
    #[cfg(test)]
    pub(crate) fn job_changes(&self) -> String {
        format!("{}jc", self.base)
    }

    /// The jobs marker: a copy of the job layout beside meta, written with a
    /// namespace's first jobs, so a meta lost while jobs are stored is noticed (Lua
    /// composes it from meta: lib/job.lua `jobs_marker`).
    pub(crate) fn jobs_marker(&self) -> String {
        format!("{}:jobs", self.meta())
    }

    /// A queue's state hash: `pending` count, `paused` flag (lib/job.lua
    /// `queue_state`).
    pub(crate) fn queue_state(&self, queue: &str) -> String {
        format!("{}:q:{queue}", self.meta())
    }

    /// A flow-control key of `queue` (issue 32; lib/flow.lua `flow.key`): `kind` is
    /// one letter (lib/flow.lua's header lists them), `rest` the lane or flow key some
    /// kinds append ("" for the others).
    #[cfg(test)]
    pub(crate) fn flow_key(&self, kind: char, queue: &str, rest: &str) -> String {
        format!("{}:f{kind}:{}:{queue}{rest}", self.meta(), queue.len())
    }

    /// A queue's dead jobs scored by when they died (lib/job.lua `queue_dead`).
    #[cfg(test)]
    pub(crate) fn queue_dead(&self, queue: &str) -> String {
        format!("{}:dead:{queue}", self.meta())
    }

    /// Dead jobs grouped by error (issue 33; lib/job.lua `dg.groups`, `dg.set`,
    /// `dg.order`): the groups' hash (`<fingerprint>:<queue>` -> sample), one group's
    /// set of job ids by dead ms, and the groups by count (every queue when `queue`
    /// is "", else that queue's).
    #[cfg(test)]
    pub(crate) fn dead_groups(&self) -> String {
        format!("{}:dg", self.meta())
    }

    #[cfg(test)]
    pub(crate) fn dead_group(&self, fingerprint: &str, queue: &str) -> String {
        format!("{}:dg:{fingerprint}:{queue}", self.meta())
    }

    #[cfg(test)]
    pub(crate) fn dead_order(&self, queue: &str) -> String {
        if queue.is_empty() {
            format!("{}:dgo", self.meta())
        } else {
            format!("{}:dgo:{queue}", self.meta())
        }
    }

    /// A flow's hash (issue 34; lib/graph.lua `graph.key`).
    #[cfg(test)]
    pub(crate) fn flow(&self, flow_id: &str) -> String {
        format!("{}:dag:{flow_id}", self.meta())
    }

    /// The flow sets and the graph work queue (lib/graph.lua `graph.open_set`,
    /// `done_set`, `stage_set`, `queue`), in that order.
    #[cfg(test)]
    pub(crate) fn flow_sets(&self) -> [String; 4] {
        let meta = self.meta();
        [
            format!("{meta}:dags"),
            format!("{meta}:dagsdone"),
            format!("{meta}:dagstage"),
            format!("{meta}:dagq"),
        ]
    }

    /// The keep_for jobs scored by when they expire (lib/job.lua `retention.expiry`).
    #[cfg(test)]
    pub(crate) fn retain_expiry(&self) -> String {
        format!("{}:expire", self.meta())
    }

    /// A queue's keep_last jobs of one finished state, by finishing order (lib/job.lua
    /// `retention.kept`).
    #[cfg(test)]
    pub(crate) fn queue_kept(&self, state: &str, queue: &str) -> String {
        format!("{}:kept:{state}:{queue}", self.meta())
    }

    /// The namespace's queues, by name (lib/job.lua `queue_registry`).
    pub(crate) fn queue_registry(&self) -> String {
        format!("{}:queues", self.meta())
    }

    /// The SCAN pattern of the namespace's flow lanes and concurrency parks (issue 32,
    /// lib/flow.lua `flow.key` kinds `l` and `w`: meta, `:f`, the kind, `:`, the
    /// queue's length, `:`, the queue, the lane or key). The namespace and prefix hold
    /// no glob characters (both are validated).
    pub(crate) fn flow_index_pattern(&self) -> String {
        format!("{}:f[lw]:*", self.meta())
    }

    /// A key found by [`NamespaceKeys::flow_index_pattern`]: its kind (`l` a lane,
    /// `w` a park), queue and rest (the lane, or the concurrency key), or `None` for a
    /// key that is not one.
    pub(crate) fn flow_index_of(&self, key: &[u8]) -> Option<(char, String, String)> {
        let meta = self.meta();
        let rest = key.strip_prefix(meta.as_bytes())?.strip_prefix(b":f")?;
        let (&kind, rest) = rest.split_first()?;
        let rest = rest.strip_prefix(b":")?;
        let colon = rest.iter().position(|&b| b == b':')?;
        let len: usize = std::str::from_utf8(&rest[..colon]).ok()?.parse().ok()?;
        let rest = &rest[colon + 1..];
        if !matches!(kind, b'l' | b'w') || rest.len() < len {
            return None;
        }
        let queue = std::str::from_utf8(&rest[..len]).ok()?;
        let name = std::str::from_utf8(&rest[len..]).ok()?;
        Some((kind as char, queue.to_owned(), name.to_owned()))
    }

    /// The receipt of one claim under `--redis-wait-replicas` (issue 29 item 11):
    /// the ids it leased, in order, under lease tokens `<token_base>.<i>`, so a claim
    /// whose reply was lost or not confirmed can be given back by its token base
    /// alone (lua/release_claim.lua). The token base is the caller's random hex.
    pub(crate) fn claim_receipt(&self, token_base: &str) -> String {
        format!("{}meta:claim:{token_base}", self.base)
    }

    /// Finished (completed, dead, cancelled) job ids scored by finish time.
    pub(crate) fn jobs_done(&self) -> String {
        format!("{}jdone", self.base)
    }

    /// The key prefixes job scripts append ids, queue names and dedup keys to, in
    /// the order every job script takes them first (lua/lib/job.lua `job_keys`).
    pub(crate) fn job_prefixes(&self) -> JobPrefixes {
        JobPrefixes([
            self.job_prefix(),
            format!("{}jp:", self.base),
            format!("{}rl:", self.base),
            format!("{}rp:", self.base),
            format!("{}qd:", self.base),
            format!("{}ql:", self.base),
            format!("{}lb:", self.base),
            format!("{}dd:", self.base),
        ])
    }

    /// The ready list of one priority of a queue (`rl:<priority>:<queue>`).
    pub(crate) fn ready_list(&self, queue: &str, priority: i32) -> String {
        format!("{}rl:{priority}:{queue}", self.base)
    }

    /// The listing bucket of job number `n` of a queue (`lb:<n div 64>:<queue>`).
    pub(crate) fn listing_bucket(&self, queue: &str, n: u64) -> String {
        format!("{}lb:{}:{queue}", self.base, n / 64)
    }

    /// The prefix a job id is appended to for its record.
    pub(crate) fn job_prefix(&self) -> String {
        format!("{}j:", self.base)
    }

    /// The key of one job, as raw bytes.
    pub(crate) fn job(&self, id: &str) -> Vec<u8> {
        let mut key = self.job_prefix().into_bytes();
        key.extend_from_slice(id.as_bytes());
        key
    }

    /// The SCAN pattern of a namespace's layout-1 keys of one kind: ready sets
    /// (`qr:<queue>`), job records (`j:<id>`, still hashes) or listings (`qj:<queue>`).
    /// Prefixes and namespaces hold no glob characters (both are validated).
    pub(crate) fn legacy_job_pattern(&self, kind: LegacyJobKeys) -> String {
        match kind {
            LegacyJobKeys::ReadySets => format!("{}qr:*", self.base),
            LegacyJobKeys::JobHashes | LegacyJobKeys::JobRecords => {
                format!("{}j:*", self.base)
            }
            LegacyJobKeys::Listings => format!("{}qj:*", self.base),
        }
    }

    /// The job id of a job key (`j:<id>`), if it is one of this namespace's.
    pub(crate) fn job_id_of<'k>(&self, key: &'k [u8]) -> Option<&'k str> {
        let id = key.strip_prefix(self.job_prefix().as_bytes())?;
        std::str::from_utf8(id).ok()
    }

    /// The key of one schedule, as raw bytes (ids are arbitrary UTF-8).
    pub(crate) fn schedule(&self, id: &str) -> Vec<u8> {
        let mut key = self.schedule_prefix().into_bytes();
        key.extend_from_slice(id.as_bytes());
        key
    }
}

/// Job key prefixes: job record, payload, ready list, ready priorities, delayed,
/// leased, listing bucket, dedup.
#[derive(Debug, Clone)]
pub(crate) struct JobPrefixes(pub(crate) [String; 8]);

/// Which layout-1 job keys a SCAN looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LegacyJobKeys {
    /// Ready sets `qr:<queue>` (zsets).
    ReadySets,
    /// Job records `j:<id>` still stored as hashes.
    JobHashes,
    /// Listing sets `qj:<queue>` (zsets).
    Listings,
    /// Job records `j:<id>` of the current layout (strings), for recounting a lost
    /// meta's job counters (not layout 1's, but found the same way).
    JobRecords,
}

/// Keys of the whole keyspace under the prefix, not of one namespace.
#[derive(Debug, Clone)]
pub(crate) struct PrefixKeys {
    prefix: String,
}

impl PrefixKeys {
    pub(crate) fn new(prefix: &str) -> Self {
        PrefixKeys {
            prefix: prefix.to_owned(),
        }
    }

    /// The store's instance id: written once by the first replica to connect, so a
    /// store flushed or replaced under the service is noticed (src/health.rs). No
    /// namespace key has it as a name (theirs all carry a `{namespace}` tag).
    pub(crate) fn instance(&self) -> String {
        format!("{}:instance", self.prefix)
    }

    /// The SCAN pattern of every namespace's key named `marker` (a namespace holds
    /// `meta` once it has data, `ids` in the pre-index layout). The prefix holds no
    /// glob characters (validated at startup).
    pub(crate) fn namespaces_pattern(&self, marker: NamespaceMarker) -> String {
        format!("{}:{{*}}:{}", self.prefix, marker.as_str())
    }

    /// The namespace a key found with [`PrefixKeys::namespaces_pattern`] belongs to,
    /// if the key is exactly that namespace's `marker` key. The pattern also matches
    /// keys inside a namespace whose id or queue name ends in `}:meta` (a job id
    /// `x}:meta` is stored at `<prefix>:{ns}:j:x}:meta`); what such a key yields
    /// between the braces contains a `}`, which no namespace name may, so it is
    /// refused here.
    pub(crate) fn namespace_of<'k>(
        &self,
        key: &'k str,
        marker: NamespaceMarker,
    ) -> Option<&'k str> {
        key.strip_prefix(self.prefix.as_str())?
            .strip_prefix(":{")?
            .strip_suffix(marker.as_str())?
            .strip_suffix("}:")
            .filter(|ns| crate::domain::limits::is_namespace(ns))
    }
}

/// A key every namespace with data has one of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NamespaceMarker {
    Meta,
    LegacyListing,
}

impl NamespaceMarker {
    fn as_str(self) -> &'static str {
        match self {
            NamespaceMarker::Meta => "meta",
            NamespaceMarker::LegacyListing => "ids",
        }
    }
}

/// The keys of an `@boringnode/queue` store (up to 0.7) that Migrate imports from: a
/// SET `<source prefix>schedules::index` of ids and a HASH per schedule at
/// `<source prefix>schedules::<id>`.
#[derive(Debug, Clone)]
pub(crate) struct BoringnodeKeys {
    pub(crate) index: String,
    pub(crate) record_prefix: String,
}

impl BoringnodeKeys {
    pub(crate) fn new(source_prefix: &str) -> Self {
        BoringnodeKeys {
            index: format!("{source_prefix}schedules::index"),
            record_prefix: format!("{source_prefix}schedules::"),
        }
    }

    pub(crate) fn record(&self, id: &str) -> String {
        format!("{}{id}", self.record_prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_never_alias_internal_keys() {
        let keys = NamespaceKeys::new("dueq", "ns");
        for id in [
            "due", "ids", "meta", "", ":due", "}{due", "x}{y", "{ns}:due",
        ] {
            let key = keys.schedule(id);
            assert!(key.starts_with(b"dueq:{ns}:s:"));
            for internal in [
                keys.due(),
                keys.ids(),
                keys.meta(),
                keys.migrate_lock(),
                keys.listing_top(),
            ] {
                assert_ne!(key, internal.as_bytes());
            }
            assert_ne!(key, keys.listing_leaf(id));
            assert!(keys.listing_leaf(id).starts_with(b"dueq:{ns}:lk:"));
        }
    }

    #[test]
    fn job_keys_never_alias_each_other_or_internal_keys() {
        let keys = NamespaceKeys::new("dueq", "ns");
        let prefixes = keys.job_prefixes().0;
        let internal = [
            keys.due(),
            keys.ids(),
            keys.meta(),
            keys.jobs_done(),
            keys.occurrence_leases(),
            keys.listing_top(),
        ];
        for id in ["jdone", "qr:a", "", "}{x", "s:x", "j:x"] {
            for (i, p) in prefixes.iter().enumerate() {
                let key = format!("{p}{id}");
                assert!(!internal.contains(&key));
                // No other prefix is a prefix of this one: kinds never overlap.
                for (j, q) in prefixes.iter().enumerate() {
                    if i != j {
                        assert!(!key.starts_with(q.as_str()), "{key} under {q}");
                    }
                }
                assert!(!key.starts_with(&keys.schedule_prefix()));
                assert!(!key.as_bytes().starts_with(&keys.listing_leaf("")));
                assert!(!key.starts_with(&keys.occurrence_prefix()));
                assert!(!key.starts_with(&keys.backfill_prefix()));
                assert!(!key.starts_with(&keys.runs_prefix()));
            }
        }
        assert_eq!(keys.job("x"), b"dueq:{ns}:j:x");
    }

    #[test]
    fn prefixes_cannot_hold_hash_tags() {
        assert!(check_prefix("dueq").is_ok());
        assert!(check_prefix("app:dueq").is_ok());
        assert!(check_prefix("a{b}").is_err());
        assert!(check_prefix("a*").is_err());
        assert!(check_prefix("").is_err());
    }

    #[test]
    fn namespaces_and_job_ids_are_read_back_from_their_keys() {
        let keys = PrefixKeys::new("app:dueq");
        let pattern = keys.namespaces_pattern(NamespaceMarker::Meta);
        assert_eq!(pattern, "app:dueq:{*}:meta");
        assert_eq!(
            keys.namespace_of("app:dueq:{billing.eu}:meta", NamespaceMarker::Meta),
            Some("billing.eu")
        );
        assert_eq!(
            keys.namespace_of("other:{x}:meta", NamespaceMarker::Meta),
            None
        );
        assert_eq!(
            keys.namespace_of("app:dueq:{x}:ids", NamespaceMarker::Meta),
            None
        );
        // A job id or queue name ending in "}:meta" is not a namespace.
        assert_eq!(
            keys.namespace_of("app:dueq:{ns}:j:x}:meta", NamespaceMarker::Meta),
            None
        );
        let ns = NamespaceKeys::new("dueq", "ns");
        assert_eq!(ns.job_id_of(b"dueq:{ns}:j:a:b"), Some("a:b"));
        assert_eq!(ns.job_id_of(b"dueq:{ns}:jp:a"), None);
    }

    #[test]
    fn every_key_shares_the_namespace_hash_tag() {
        let keys = NamespaceKeys::new("dueq", "tenant-1");
        let mut all = vec![keys.due(), keys.ids(), keys.meta(), keys.schedule_prefix()];
        all.extend([
            keys.jobs_done(),
            keys.occurrence_leases(),
            keys.occurrence_prefix(),
        ]);
        all.extend(keys.job_prefixes().0);
        for key in all {
            let open = key.find('{').unwrap_or(usize::MAX);
            let close = key.find('}').unwrap_or(usize::MAX);
            assert_eq!(&key[open + 1..close], "tenant-1");
        }
    }
}
