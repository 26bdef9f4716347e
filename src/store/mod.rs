//! The store layer: owns the Redis key layout, the scripts and the connections.
//! Everything above it speaks in domain types and typed operations (`ops`): a use
//! case builds an operation and [`Store::run`]s it; nothing above this module sees a
//! Redis value, a key or a SCAN cursor.

// Raw Redis commands (`redis::cmd`, pipelines, scripts) belong here and nowhere else
// (clippy.toml). Clippy cannot lift one entry of its list, so in here the host-clock
// and sleep rules are not checked either.
#![allow(clippy::disallowed_methods)]

mod conn;
mod dispatch_due;
mod error;
mod exec;
pub(crate) mod keys;
pub(crate) mod library;
mod notify;
pub(crate) mod ops;
mod packed_job;
mod principals;
mod prune_due;
mod records;
mod registry;
mod reply;
mod script;
mod tls;
mod walk;

#[cfg(test)]
mod pins;

use std::time::{Duration, Instant};

use deadpool_redis::redis;

pub(crate) use conn::Topology;
pub(crate) use error::StoreError;
pub(crate) use notify::{Claimable, Notice, ReadyMessage};
pub(crate) use principals::PrincipalTotals;
pub(crate) use script::{Call, Operation, Prelude};
pub(crate) use tls::RedisTls;
pub(crate) use walk::{FlowIndexWalk, LegacyJobWalk, NamespaceWalk};

use conn::Connections;
use keys::NamespaceKeys;
use reply::Reply;

/// The store's instance id, as [`Store::instance_id`] found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum InstanceId {
    /// Stored before this call.
    Found(String),
    /// There was none: this call stored it.
    Written(String),
}

impl InstanceId {
    pub(crate) fn id(&self) -> &str {
        match self {
            InstanceId::Found(id) | InstanceId::Written(id) => id,
        }
    }
}

/// A decoded reply, and whether `--redis-wait-replicas` confirmed the call
/// ([`Store::run_confirmed`]).
pub(crate) struct Confirmed<T> {
    pub(crate) output: T,
    /// Why the replicas did not confirm the write (UNAVAILABLE naming the flag), if
    /// they did not: it was made on the master all the same.
    pub(crate) unconfirmed: Option<StoreError>,
}

/// Why a call that hands out work failed ([`Store::run_confirmed`]), and whether
/// its script may have run all the same.
#[derive(Debug)]
pub(crate) struct Unanswered {
    pub(crate) error: StoreError,
    /// `false`: no connection could be had, so nothing was sent and the script did
    /// not run. `true`: it was sent; when `error` is UNAVAILABLE (a timeout, a
    /// dropped connection) its reply was lost and it may have run, or may still run.
    pub(crate) sent: bool,
}

/// Handle to the Redis store. Cheap to share behind an `Arc`.
pub(crate) struct Store {
    conns: Connections,
    prefix: String,
    /// `--redis-wait-replicas`: replicas that must acknowledge each write that hands
    /// out or accepts work (0: none, no WAIT).
    wait_replicas: u32,
    /// How long such a WAIT waits for them.
    wait_timeout: Duration,
    /// Round trips of script calls (`dueq_redis_command_duration_seconds`).
    timings: Option<prometheus_client::metrics::histogram::Histogram>,
    /// Where the job-changes subscription connects (`Store::listen`).
    notices: notify::Source,
    /// `--redis-timeout`, for the subscription's connect and PING.
    timeout: Duration,
}

impl Store {
    /// Builds the store; does not connect yet (the service must start without Redis).
    #[cfg(test)]
    pub(crate) fn new(
        url: &str,
        tls: &RedisTls,
        prefix: &str,
        pool_size: usize,
        timeout: Duration,
    ) -> Result<Self, StoreError> {
        Self::with_topology(url, tls, &Topology::Standalone, prefix, pool_size, timeout)
    }

    /// [`Store::new`] for a Redis of `topology` (cluster seeds or sentinels in `url`).
    pub(crate) fn with_topology(
        url: &str,
        tls: &RedisTls,
        topology: &Topology,
        prefix: &str,
        pool_size: usize,
        timeout: Duration,
    ) -> Result<Self, StoreError> {
        let conns = Connections::new(url, tls, topology, pool_size, timeout)?;
        let notices =
            notify::Source::new(url, tls, topology).map_err(|reason| StoreError::Unavailable {
                url: conns.display_url().to_owned(),
                reason,
            })?;
        Ok(Self {
            conns,
            notices,
            timeout,
            prefix: prefix.to_owned(),
            wait_replicas: 0,
            // Within the response timeout of the connection the WAIT is sent on.
            wait_timeout: timeout / 2,
            timings: None,
        })
    }

    /// Waits for `n` replicas to acknowledge each write that hands out or accepts
    /// work (`--redis-wait-replicas`); 0 waits for none.
    pub(crate) fn wait_for_replicas(mut self, n: u32) -> Self {
        self.wait_replicas = n;
        self
    }

    /// Whether writes that hand out work wait for replicas
    /// (`--redis-wait-replicas` above 0): claims then keep a receipt, so one whose
    /// reply is lost or not confirmed can be given back (issue 29 item 11).
    pub(crate) fn confirms_writes(&self) -> bool {
        self.wait_replicas > 0
    }

    /// Observes every script call's round trip in `histogram`.
    pub(crate) fn with_timings(
        self,
        histogram: prometheus_client::metrics::histogram::Histogram,
    ) -> Self {
        Self {
            timings: Some(histogram),
            ..self
        }
    }

    fn keys(&self, namespace: &str) -> NamespaceKeys {
        NamespaceKeys::new(&self.prefix, namespace)
    }

    pub(crate) fn display_url(&self) -> &str {
        self.conns.display_url()
    }

    /// Runs one operation's script for `namespace` with FCALL (loading its library
    /// when the node answers "Function not found", on that node), waits for replicas when it hands out
    /// or accepts work and `--redis-wait-replicas` asks for it, and decodes its reply.
    /// A write the replicas did not confirm fails UNAVAILABLE (it was made on the
    /// master all the same).
    pub(crate) async fn run<O: Operation>(
        &self,
        namespace: &str,
        op: &O,
    ) -> Result<O::Output, StoreError> {
        let ran = self
            .execute(namespace, op, true)
            .await
            .map_err(|u| u.error)?;
        ran.confirmed?;
        op.decode(Reply::new(ran.value, op.script().name))
    }

    /// [`Store::run`] for a call that hands out work: the decoded reply even when
    /// `--redis-wait-replicas` did not confirm it, so the caller can give back what
    /// it handed out (issue 29 item 11), then fail with [`Confirmed::unconfirmed`];
    /// a failure says whether the call was sent ([`Unanswered::sent`]).
    pub(crate) async fn run_confirmed<O: Operation>(
        &self,
        namespace: &str,
        op: &O,
    ) -> Result<Confirmed<O::Output>, Unanswered> {
        let ran = self.execute(namespace, op, true).await?;
        let output = op
            .decode(Reply::new(ran.value, op.script().name))
            .map_err(|error| Unanswered { error, sent: true })?;
        Ok(Confirmed {
            output,
            unconfirmed: ran.confirmed.err(),
        })
    }

    /// [`Store::run`] without waiting for replicas: for giving back what an
    /// unconfirmed call handed out, which must not wait as long again for the
    /// replicas that just did not answer.
    pub(crate) async fn run_unwaited<O: Operation>(
        &self,
        namespace: &str,
        op: &O,
    ) -> Result<O::Output, StoreError> {
        let ran = self
            .execute(namespace, op, false)
            .await
            .map_err(|u| u.error)?;
        op.decode(Reply::new(ran.value, op.script().name))
    }

    /// Sends `op`'s script, and its WAIT when `wait` and the flag ask for one, in
    /// one pipeline (src/store/exec.rs says why), on a connection lent to this call
    /// alone (src/store/conn.rs says why); a script without a WAIT goes on a shared
    /// connection.
    async fn execute<O: Operation>(
        &self,
        namespace: &str,
        op: &O,
        wait: bool,
    ) -> Result<exec::Ran, Unanswered> {
        let def = op.script();
        let call = Self::call_for(&self.prefix, namespace, op);
        let fcall = library::fcall(&call, def);
        let wait = (wait && self.wait_replicas > 0 && ops::waited(def)).then(|| exec::Wait {
            replicas: self.wait_replicas,
            timeout_ms: u64::try_from(self.wait_timeout.as_millis().max(1)).unwrap_or(u64::MAX),
        });
        let unsent = |error| Unanswered { error, sent: false };
        let url = self.conns.display_url();
        let started;
        let ran = if let Some(wait) = wait {
            let mut lent = self.conns.lend().await.map_err(unsent)?;
            started = Instant::now();
            let fail = |e| StoreError::from_redis(url, namespace, e);
            let ran = exec::execute(lent.conn(), url, def, &fcall, Some(wait), fail).await;
            // A connection whose call was not answered is closed, not lent again
            // with a WAIT still to come on it (nor is one whose caller went away).
            if !ran.as_ref().is_err_and(StoreError::is_unavailable) {
                lent.keep();
            }
            ran
        } else {
            let (slot, mut conn) = self.conns.get().await.map_err(unsent)?;
            started = Instant::now();
            exec::execute(&mut conn, url, def, &fcall, None, |e| {
                self.fail(slot, namespace, e)
            })
            .await
        };
        let ran = ran.map_err(|error| Unanswered { error, sent: true })?;
        // The round trip of the pipeline: the script's, and its WAIT's when waited.
        if let Some(timings) = &self.timings {
            timings.observe(started.elapsed().as_secs_f64());
        }
        Ok(ran)
    }

    /// The FCALL command that runs `op` for `namespace` under `prefix`.
    pub(crate) fn command_for<O: Operation>(prefix: &str, namespace: &str, op: &O) -> redis::Cmd {
        library::fcall(&Self::call_for(prefix, namespace, op), op.script())
    }

    /// The KEYS and ARGV of `op` for `namespace` under `prefix`.
    fn call_for<O: Operation>(prefix: &str, namespace: &str, op: &O) -> Call {
        let def = op.script();
        let mut call = Call::default();
        op.encode(&NamespaceKeys::new(prefix, namespace), &mut call);
        // Every call a test makes is checked against the script's declared arity
        // (which a library test checks against the script's header).
        let (keys, args) = call.counts();
        debug_assert!(
            def.keys.admits(keys) && def.argv.admits(args),
            "{}: {keys} keys and {args} args do not fit its declaration",
            def.name
        );
        call
    }

    /// Loads every function library (src/store/library.rs), so the first call of
    /// each function finds it, then deletes the libraries of other dueq versions
    /// (see [`library::load_all`]).
    pub(crate) async fn load_scripts(&self) -> Result<(), StoreError> {
        let (slot, mut conn) = self.conns.get().await?;
        library::load_all(&mut conn)
            .await
            .map_err(|e| self.fail(slot, "", e))
    }

    /// Redis's clock in epoch ms, and the round trip it took.
    pub(crate) async fn time(&self) -> Result<(i64, Duration), StoreError> {
        let started = Instant::now();
        let (secs, micros): (i64, i64) = self.query(redis::cmd("TIME")).await?;
        Ok((secs * 1000 + micros / 1000, started.elapsed()))
    }

    /// The store's instance id: the one stored, or `candidate` when none was (it is
    /// stored then). One `SET ... NX GET`.
    pub(crate) async fn instance_id(&self, candidate: &str) -> Result<InstanceId, StoreError> {
        let key = keys::PrefixKeys::new(&self.prefix).instance();
        let previous: Option<String> = self
            .query(
                redis::cmd("SET")
                    .arg(&key)
                    .arg(candidate)
                    .arg("NX")
                    .arg("GET")
                    .to_owned(),
            )
            .await?;
        Ok(match previous {
            Some(id) => InstanceId::Found(id),
            None => InstanceId::Written(candidate.to_owned()),
        })
    }

    /// A Redis setting (CONFIG GET); `None` when Redis does not report it.
    pub(crate) async fn config_value(&self, name: &str) -> Result<Option<String>, StoreError> {
        let pairs: Vec<String> = self
            .query(redis::cmd("CONFIG").arg("GET").arg(name).to_owned())
            .await?;
        Ok(pairs.into_iter().nth(1))
    }

    async fn query<T: redis::FromRedisValue>(&self, cmd: redis::Cmd) -> Result<T, StoreError> {
        let (slot, mut conn) = self.conns.get().await?;
        cmd.query_async(&mut conn)
            .await
            .map_err(|e| self.fail(slot, "", e))
    }

    fn fail(&self, slot: usize, namespace: &str, err: redis::RedisError) -> StoreError {
        let err = StoreError::from_redis(self.conns.display_url(), namespace, err);
        if err.is_unavailable() {
            self.conns.discard(slot);
        }
        err
    }
}

#[cfg(test)]
mod tests {
    /// The scripts not waited for are reads (listings, stats, gauges, peeks),
    /// Migrate's steps, the pruner, the audit log and the worker sessions: a work write placed in the wrong list of
    /// `ops::operations!` is caught here.
    #[test]
    fn only_reads_migrate_and_the_pruner_are_not_waited_for() {
        let unwaited = super::ops::SCRIPTS
            .iter()
            .filter(|script| !super::ops::waited(script));
        for script in unwaited {
            let name = script.name;
            let known = name.starts_with("get_")
                || name.starts_with("list_")
                || name.starts_with("peek_")
                || name.starts_with("migrate_")
                || name == "namespace_status"
                || name == "queue_stats"
                || name == "schedule_gauges"
                || name == "prune_jobs"
                // A read that only marks the record watched (issue 30): no work moves.
                || name == "watch_job"
                // The audit log and the worker sessions (issue 33): no work moves,
                // and neither must wait for replicas.
                || name == "append_audit"
                || name == "publish_workers";
            assert!(
                known,
                "{name}: is it a work write? move it to the waited list of ops::operations!"
            );
        }
    }
}
