//! How one script call reaches Redis: its EVALSHA and the WAIT that confirms it go
//! out as one pipeline on one connection, so both reach the same node (issue 29
//! item 11), and a NOSCRIPT is answered by loading the script in the same way, a
//! bounded number of times.
//!
//! Why one pipeline. The WAIT must reach the node that ran the script: WAIT counts
//! the replicas that acknowledged the writes of its own connection to that node.
//! Sent on its own, a WAIT has no key, so a cluster client routes it by the slot
//! map it holds, which after a failover may still name the old master (a replica
//! now: `WAIT cannot be used with replica instances`) while the script, redirected
//! by MOVED, ran on the new one. The redis crate's cluster client routes a pipeline
//! by the first command in it that has a key (`route_for_pipeline` in
//! redis/src/cluster_handling/async_connection/routing.rs): the EVALSHA's, the
//! namespace's slot. SCRIPT LOAD and WAIT have none, so they go with it, on that
//! node's connection, in order.
//!
//! Why a redirect never runs the script twice. When a reply of the pipeline is an
//! error that asks for action (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, LOADING, READONLY:
//! `requires_action` in redis/src/errors/server_error.rs), the client sends the
//! whole pipeline again, to the node the redirect names (`choose_response` in
//! .../async_connection/request.rs). Only the EVALSHA can answer one of those: a
//! script that answered MOVED, ASK or TRYAGAIN did not run on that node (Redis
//! redirects before it runs anything), and WAIT and SCRIPT LOAD have no key, so
//! Redis never redirects them, and they write nothing, so never READONLY. So a
//! pipeline sent again is one whose script did not run. (A connection that drops
//! after the script ran is retried by the client as it retries any command; that
//! is not particular to the pipeline.)

use deadpool_redis::redis::{self, aio::ConnectionLike, Cmd, ServerErrorKind, Value};

use super::{conn::Conn, error::StoreError, script::ScriptDef};

/// How many times a call loads its script after NOSCRIPT (each time in the
/// pipeline that runs it again) before it gives up: something keeps flushing the
/// script cache (SCRIPT FLUSH, a restart or a failover between load and call).
const NOSCRIPT_LOADS: usize = 3;

/// What one script call came back with.
pub(super) struct Ran {
    /// The script's reply (not an error: that is the call's error).
    pub(super) value: Value,
    /// `Err` when `--redis-wait-replicas` asked for a WAIT and it did not confirm
    /// the write (fewer replicas acknowledged, or WAIT itself failed): the write was
    /// made on the node that ran the script all the same.
    pub(super) confirmed: Result<(), StoreError>,
}

/// The WAIT a call is confirmed by: how many replicas, within how many ms.
#[derive(Clone, Copy)]
pub(super) struct Wait {
    pub(super) replicas: u32,
    pub(super) timeout_ms: u64,
}

impl Wait {
    fn cmd(self) -> Cmd {
        redis::cmd("WAIT")
            .arg(self.replicas)
            .arg(self.timeout_ms)
            .to_owned()
    }

    /// The WAIT's reply, as the call's confirmation. Any failure is UNAVAILABLE
    /// naming the flag: the write is on the node that ran it, but not confirmed.
    fn confirm(self, url: &str, reply: Value) -> Result<(), StoreError> {
        let unconfirmed = |what: String| StoreError::Unavailable {
            url: url.to_owned(),
            reason: format!(
                "--redis-wait-replicas {}: {what}; the write was made on the master and \
                 may be lost if it fails over now",
                self.replicas
            ),
        };
        match reply {
            Value::Int(acked) if acked >= i64::from(self.replicas) => Ok(()),
            Value::Int(acked) => Err(unconfirmed(format!(
                "{acked} replica(s) acknowledged the write within {} ms",
                self.timeout_ms
            ))),
            Value::ServerError(err) => Err(unconfirmed(format!(
                "WAIT failed on the node that ran the script ({err})"
            ))),
            other => Err(unconfirmed(format!(
                "WAIT answered {other:?} on the node that ran the script"
            ))),
        }
    }
}

/// One script call on `conn`: EVALSHA (then WAIT, when `wait`), in one pipeline;
/// after a NOSCRIPT, SCRIPT LOAD, EVALSHA (and WAIT) in one pipeline, at most
/// [`NOSCRIPT_LOADS`] times. `Err`: the pipeline or the script failed (a Redis
/// error, classified by `fail`), or the script stayed unloaded (UNAVAILABLE).
pub(super) async fn execute(
    conn: &mut Conn,
    url: &str,
    def: &ScriptDef,
    evalsha: &Cmd,
    wait: Option<Wait>,
    fail: impl Fn(redis::RedisError) -> StoreError,
) -> Result<Ran, StoreError> {
    // The common call (no WAIT asked, the script loaded): the EVALSHA alone, not
    // copied into a pipeline (its arguments can be a batch's payloads).
    if wait.is_none() {
        match conn.req_packed_command(evalsha).await {
            Ok(value) if !is_noscript(&value) => {
                let value = value.extract_error().map_err(&fail)?;
                return Ok(Ran {
                    value,
                    confirmed: Ok(()),
                });
            }
            Ok(_) => {}
            Err(e) if e.kind() == redis::ErrorKind::Server(ServerErrorKind::NoScript) => {}
            Err(e) => return Err(fail(e)),
        }
    }
    let mut load = wait.is_none().then(|| def.source());
    // Each pass after a NOSCRIPT loads: NOSCRIPT_LOADS loads in all.
    let passes = NOSCRIPT_LOADS + usize::from(load.is_none());
    for _ in 0..passes {
        let mut pipe = redis::pipe();
        if let Some(source) = &load {
            pipe.cmd("SCRIPT").arg("LOAD").arg(source);
        }
        pipe.add_command(evalsha.clone());
        if let Some(wait) = wait {
            pipe.add_command(wait.cmd());
        }
        let replies = conn
            .req_packed_commands(&pipe, 0, pipe.len())
            .await
            .map_err(&fail)?;
        let mut replies = replies.into_iter();
        if load.is_some() {
            // SCRIPT LOAD's own failure (NOPERM, ...) is the call's.
            if let Some(Err(e)) = replies.next().map(Value::extract_error) {
                return Err(fail(e));
            }
        }
        let Some(value) = replies.next() else {
            return Err(StoreError::corrupt(
                format!("the reply to {}", def.name),
                "the pipeline answered too few replies",
            ));
        };
        if is_noscript(&value) {
            load = Some(def.source());
            continue;
        }
        let value = value.extract_error().map_err(&fail)?;
        let confirmed = match (wait, replies.next()) {
            (None, _) => Ok(()),
            (Some(wait), Some(reply)) => wait.confirm(url, reply),
            (Some(wait), None) => wait.confirm(url, Value::Nil),
        };
        return Ok(Ran { value, confirmed });
    }
    Err(StoreError::Unavailable {
        url: url.to_owned(),
        reason: format!(
            "script {} answered NOSCRIPT after being loaded {NOSCRIPT_LOADS} times in a \
             row: is something flushing Redis's script cache (SCRIPT FLUSH)?",
            def.name
        ),
    })
}

fn is_noscript(value: &Value) -> bool {
    matches!(value, Value::ServerError(e) if e.kind() == Some(ServerErrorKind::NoScript))
}

#[cfg(test)]
mod tests {
    use deadpool_redis::redis::{self, Value};

    use super::{execute, Wait, NOSCRIPT_LOADS};
    use crate::{
        store::{conn::Conn, ops::get_job, script::Call, StoreError},
        testing::TestRedis,
    };

    /// Pins issue 29 item 11: a NOSCRIPT that loading does not cure (here an
    /// EVALSHA of a hash no source has, so every load "misses") is retried a
    /// bounded number of times, loading the script each time on the same
    /// connection, and then fails UNAVAILABLE naming the script, never INTERNAL.
    #[tokio::test]
    async fn a_noscript_that_loading_does_not_cure_ends_unavailable() {
        let redis = TestRedis::start().await;
        let mut conn = Conn::Single(redis.conn().await);
        let def = &get_job::SCRIPT;
        let mut call = Call::default();
        call.key("k");
        let evalsha = call.evalsha(&"0".repeat(40));
        let fail = |e| StoreError::from_redis("test", "ns", e);
        let outcome = execute(&mut conn, "test", def, &evalsha, None, fail).await;
        match outcome {
            Err(StoreError::Unavailable { reason, .. }) => {
                assert!(reason.contains("get_job"), "{reason}");
                assert!(
                    reason.contains(&format!("loaded {NOSCRIPT_LOADS} times")),
                    "{reason}"
                );
            }
            Err(other) => panic!("{other:?}"),
            Ok(_) => panic!("a script that is never there ran"),
        }
        // It did load the script on that node.
        let exists: Vec<bool> = redis::cmd("SCRIPT")
            .arg("EXISTS")
            .arg(def.script().get_hash())
            .query_async(&mut redis.conn().await)
            .await
            .unwrap_or_else(|e| panic!("SCRIPT EXISTS: {e}"));
        assert_eq!(exists, [true]);
    }

    /// Pins issue 29 item 11: the WAIT's answer is the call's confirmation whatever
    /// it is: too few replicas, or an error (a replica instance, ...), is
    /// UNAVAILABLE naming --redis-wait-replicas, never corrupt data.
    #[test]
    fn any_failed_wait_is_unavailable_naming_the_flag() {
        let wait = Wait {
            replicas: 1,
            timeout_ms: 10,
        };
        let replica: Value = redis::parse_redis_value(
            b"-ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.\r\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        for reply in [Value::Int(0), replica, Value::Nil] {
            match wait.confirm("url", reply.clone()) {
                Err(StoreError::Unavailable { reason, .. }) => {
                    assert!(
                        reason.contains("--redis-wait-replicas 1"),
                        "{reply:?}: {reason}"
                    );
                }
                other => panic!("{reply:?}: {other:?}"),
            }
        }
        assert!(wait.confirm("url", Value::Int(1)).is_ok());
        assert!(wait.confirm("url", Value::Int(2)).is_ok());
    }
}
