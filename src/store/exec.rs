//! How one script call reaches Redis: its FCALL (src/store/library.rs) and the WAIT
//! that confirms it go out as one pipeline on one connection, so both reach the
//! same node (issue 29 item 11), and "Function not found" is answered by loading the
//! function's library in the same way, a bounded number of times. A call with a
//! WAIT has that connection to itself (src/store/conn.rs, `Connections::lend`): a
//! WAIT blocks its connection until the replicas answer, and no other call waits
//! behind it.
//!
//! Why one pipeline. The WAIT must reach the node that ran the script: WAIT counts
//! the replicas that acknowledged the writes of its own connection to that node.
//! Sent on its own, a WAIT has no key, so a cluster client routes it by the slot
//! map it holds, which after a failover may still name the old master (a replica
//! now: `WAIT cannot be used with replica instances`) while the script, redirected
//! by MOVED, ran on the new one. The redis crate's cluster client routes a pipeline
//! by the first command in it that has a key (`route_for_pipeline` in
//! redis/src/cluster_handling/async_connection/routing.rs): the FCALL's, the
//! namespace's slot. FUNCTION LOAD and WAIT have none, so they go with it, on that
//! node's connection, in order.
//!
//! Why a redirect never runs the script twice. When a reply of the pipeline is an
//! error that asks for action (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, LOADING, READONLY:
//! `requires_action` in redis/src/errors/server_error.rs), the client sends the
//! whole pipeline again, to the node the redirect names (`choose_response` in
//! .../async_connection/request.rs). Only the FCALL can answer one of those: a
//! script that answered MOVED, ASK or TRYAGAIN did not run on that node (Redis
//! redirects before it runs anything), and WAIT and FUNCTION LOAD have no key, so
//! Redis never redirects them, and they write nothing, so never READONLY. So a
//! pipeline sent again is one whose script did not run. (A connection that drops
//! after the script ran is retried by the client as it retries any command; that
//! is not particular to the pipeline.)

use deadpool_redis::redis::{self, aio::ConnectionLike, Cmd, Value};

use super::{conn::Conn, error::StoreError, library, script::ScriptDef};

/// How many times a call loads its library after "Function not found" (each time in
/// the pipeline that runs it again) before it gives up: something keeps deleting
/// Redis's functions (FUNCTION FLUSH or DELETE, a restart without persistence or a
/// failover between load and call).
const LIBRARY_LOADS: usize = 3;

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

/// One script call on `conn`: its FCALL (then WAIT, when `wait`), in one pipeline;
/// after "Function not found", FUNCTION LOAD of its library, the FCALL (and WAIT)
/// in one pipeline, at most [`LIBRARY_LOADS`] times. `Err`: the pipeline or the
/// script failed (a Redis error, classified by `fail`), or the library stayed
/// unloaded (UNAVAILABLE).
pub(super) async fn execute(
    conn: &mut Conn,
    url: &str,
    def: &ScriptDef,
    fcall: &Cmd,
    wait: Option<Wait>,
    fail: impl Fn(redis::RedisError) -> StoreError,
) -> Result<Ran, StoreError> {
    // The common call (no WAIT asked, the library loaded): the FCALL alone, not
    // copied into a pipeline (its arguments can be a batch's payloads).
    if wait.is_none() {
        match conn.req_packed_command(fcall).await {
            Ok(value) if !is_missing(&value) => {
                let value = value.extract_error().map_err(&fail)?;
                return Ok(Ran {
                    value,
                    confirmed: Ok(()),
                });
            }
            Ok(_) => {}
            Err(e) if e.detail().is_some_and(|d| d.starts_with(MISSING)) => {}
            Err(e) => return Err(fail(e)),
        }
    }
    let library = library::library(def.prelude);
    let mut load = wait.is_none();
    // Each pass after a miss loads: LIBRARY_LOADS loads in all.
    let passes = LIBRARY_LOADS + usize::from(!load);
    for _ in 0..passes {
        let mut pipe = redis::pipe();
        if load {
            pipe.add_command(library.load());
        }
        pipe.add_command(fcall.clone());
        if let Some(wait) = wait {
            pipe.add_command(wait.cmd());
        }
        let replies = conn
            .req_packed_commands(&pipe, 0, pipe.len())
            .await
            .map_err(&fail)?;
        let mut replies = replies.into_iter();
        if load {
            // The load's own failure (NOPERM, a compile error, ...) is the call's;
            // a library another replica loaded meanwhile is loaded.
            match replies.next() {
                Some(Value::ServerError(e)) if library::is_loaded_already(&e) => {}
                Some(other) => {
                    other.extract_error().map_err(&fail)?;
                }
                None => {}
            }
        }
        let Some(value) = replies.next() else {
            return Err(StoreError::corrupt(
                format!("the reply to {}", def.name),
                "the pipeline answered too few replies",
            ));
        };
        if is_missing(&value) {
            load = true;
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
            "function {} (library {}) was not found after loading its library \
             {LIBRARY_LOADS} times in a row: is something flushing Redis's functions \
             (FUNCTION FLUSH, FUNCTION DELETE)?",
            library::function(def),
            library.name
        ),
    })
}

/// How Redis answers an FCALL of a function it does not hold.
const MISSING: &str = "Function not found";

fn is_missing(value: &Value) -> bool {
    matches!(value, Value::ServerError(e) if library::is_missing_function(e))
}

#[cfg(test)]
mod tests {
    use deadpool_redis::redis::{self, Value};

    use super::{execute, Wait, LIBRARY_LOADS};
    use crate::{
        store::{conn::Conn, library, ops::get_job, StoreError},
        testing::TestRedis,
    };

    /// Pins issue 29 item 11 (and issue 35's move to functions): a function that
    /// loading its library does not bring (here a name no library defines, so
    /// every load "misses") is retried a bounded number of times, loading the
    /// library each time on the same connection, and then fails UNAVAILABLE naming
    /// the function, never INTERNAL.
    #[tokio::test]
    async fn a_missing_function_that_loading_does_not_cure_ends_unavailable() {
        let redis = TestRedis::start().await;
        let mut conn = Conn::Single(redis.conn().await);
        let def = &get_job::SCRIPT;
        let fcall = redis::cmd("FCALL")
            .arg(format!("{}_not_there", library::function(def)))
            .arg(1)
            .arg("k")
            .to_owned();
        let fail = |e| StoreError::from_redis("test", "ns", e);
        let outcome = execute(&mut conn, "test", def, &fcall, None, fail).await;
        match outcome {
            Err(StoreError::Unavailable { reason, .. }) => {
                assert!(reason.contains("get_job"), "{reason}");
                assert!(
                    reason.contains(&format!("loading its library {LIBRARY_LOADS} times")),
                    "{reason}"
                );
            }
            Err(other) => panic!("{other:?}"),
            Ok(_) => panic!("a function that is never there ran"),
        }
        // It did load the library on that node.
        let listed: Value = redis::cmd("FUNCTION")
            .arg("LIST")
            .arg("LIBRARYNAME")
            .arg(&library::library(def.prelude).name)
            .query_async(&mut redis.conn().await)
            .await
            .unwrap_or_else(|e| panic!("FUNCTION LIST: {e}"));
        assert!(
            matches!(&listed, Value::Array(libs) if libs.len() == 1),
            "{listed:?}"
        );
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
