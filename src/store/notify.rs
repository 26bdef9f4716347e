//! Job changes across replicas (issue 30): one Redis pub/sub connection per replica,
//! subscribed with one PSUBSCRIBE to every namespace's job-changes channel
//! (`keys::job_changes_pattern`), on which the job scripts announce each write of a
//! watched record and of an active one whose cancel was asked (lua/lib/job.lua, "Job
//! changes").
//!
//! Why one pattern rather than a SUBSCRIBE per namespace with local interest: it is
//! in place before any watcher reads its job (a per-namespace SUBSCRIBE would have to
//! be confirmed before each namespace's first read, or a change in between would be
//! missed), it never changes (no subscribe/unsubscribe churn as streams come and
//! go), and Redis matches one pattern per replica per PUBLISH. What it costs is that
//! a replica hears the announcements of namespaces it has no watcher in; those exist
//! only while someone watches (or a cancel is asked), a few bytes each.
//!
//! Where the connection goes: standalone, the one Redis; sentinel, the master the
//! sentinels name at each (re)connect; cluster, one node (the seeds in turn on each
//! reconnect): a PUBLISH, from a script too, reaches every node of a cluster over its
//! bus, so one subscription on one node hears every slot's announcements. The
//! connection has the store's URL credentials and TLS files.
//!
//! Every (re)connect is reported as [`Notice::Subscribed`] once the pattern is in
//! place: whatever changed while the connection was down was not heard, so the
//! listener re-reads what it watches. A connection that stops answering its PING is
//! dropped and made again.

use std::time::Duration;

use deadpool_redis::redis::{
    aio::PubSub, sentinel::SentinelClient, Client, ConnectionInfo, RedisResult,
};
use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use super::{
    conn::{self, Topology},
    keys,
    tls::{self, RedisTls},
    Store, StoreError,
};

/// How often the connection is PINGed to notice a Redis that went away silently.
const PING_EVERY: Duration = Duration::from_secs(15);
/// The first and the longest wait between reconnect attempts.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(2));

/// What the subscription hears.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Notice<'a> {
    /// The subscription is in place (again): anything may have changed meanwhile.
    Subscribed,
    /// A job record was written: its new version (0: the record was deleted), and
    /// when it is active with a cancel asked, its lease token.
    Changed {
        namespace: &'a str,
        id: &'a str,
        version: u64,
        cancel_token: Option<&'a str>,
    },
    /// A replica (`from`: its [`Store::replica`]) wrote work of a namespace that is
    /// claimable at `earliest_ms` (Redis time; now or sooner: claimable now).
    Ready {
        from: &'a str,
        namespace: &'a str,
        work: Claimable,
        earliest_ms: i64,
    },
    /// A replica dropped announcements (more at once than one flush carries):
    /// anything may have become claimable.
    Everything { from: &'a str },
}

/// The kind of work a [`Notice::Ready`] announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claimable {
    Jobs,
    Schedules,
}

impl Claimable {
    fn letter(self) -> char {
        match self {
            Claimable::Jobs => 'j',
            Claimable::Schedules => 's',
        }
    }
}

/// Announcements of claimable work, gathered into one PUBLISH on the replica's ready
/// channel ([`keys::ready_channel`]): `<from>` on the first line, then per namespace
/// and kind `<j|s> <earliest ms> <namespace>`, or the single line `*` for
/// [`Notice::Everything`].
#[derive(Debug)]
pub(crate) struct ReadyMessage(String);

impl ReadyMessage {
    pub(crate) fn new(from: &str) -> Self {
        ReadyMessage(from.to_owned())
    }

    pub(crate) fn push(&mut self, work: Claimable, earliest_ms: i64, namespace: &str) {
        use std::fmt::Write;
        let _ = write!(self.0, "\n{} {earliest_ms} {namespace}", work.letter());
    }

    pub(crate) fn everything(from: &str) -> Self {
        ReadyMessage(format!("{from}\n*"))
    }
}

/// Where the pub/sub connection comes from.
pub(super) enum Source {
    Standalone(ConnectionInfo),
    Cluster(Vec<ConnectionInfo>),
    Sentinel(tokio::sync::Mutex<SentinelClient>),
}

impl Source {
    pub(super) fn new(url: &str, tls: &RedisTls, topology: &Topology) -> Result<Self, String> {
        Ok(match topology {
            Topology::Standalone => Source::Standalone(tls::connection_info(url, tls)?),
            Topology::Cluster => Source::Cluster(
                conn::urls(url)
                    .map(|u| tls::connection_info(u, tls))
                    .collect::<Result<_, _>>()?,
            ),
            Topology::Sentinel { master } => Source::Sentinel(tokio::sync::Mutex::new(
                conn::sentinel_client(url, tls, master)?,
            )),
        })
    }

    /// A pub/sub connection; `attempt` picks the cluster seed.
    async fn connect(&self, attempt: usize) -> RedisResult<PubSub> {
        let client = match self {
            Source::Standalone(info) => Client::open(info.clone())?,
            Source::Cluster(seeds) => {
                let Some(seed) = seeds.get(attempt % seeds.len().max(1)) else {
                    return Err((
                        deadpool_redis::redis::ErrorKind::InvalidClientConfig,
                        "no cluster seed",
                    )
                        .into());
                };
                Client::open(seed.clone())?
            }
            Source::Sentinel(client) => client.lock().await.async_get_client().await?,
        };
        client.get_async_pubsub().await
    }
}

/// One announcement's payload, `<version> <token> <id>` (token empty unless a cancel
/// was asked of an active job).
fn parse(payload: &[u8]) -> Option<(u64, Option<&str>, &str)> {
    let text = std::str::from_utf8(payload).ok()?;
    let (version, rest) = text.split_once(' ')?;
    let (token, id) = rest.split_once(' ')?;
    let version = version.parse().ok()?;
    Some((version, (!token.is_empty()).then_some(token), id))
}

/// Tells `on` what one ready message announces; a malformed line is skipped.
fn hear_ready(payload: &[u8], on: &impl Fn(Notice<'_>)) {
    let Ok(text) = std::str::from_utf8(payload) else {
        return;
    };
    let mut lines = text.split('\n');
    let Some(from) = lines.next() else { return };
    for line in lines {
        if line == "*" {
            on(Notice::Everything { from });
        } else if let Some((work, earliest_ms, namespace)) = parse_ready(line) {
            on(Notice::Ready {
                from,
                namespace,
                work,
                earliest_ms,
            });
        }
    }
}

/// One `<j|s> <earliest ms> <namespace>` line.
fn parse_ready(line: &str) -> Option<(Claimable, i64, &str)> {
    let (work, rest) = line.split_once(' ')?;
    let (earliest, namespace) = rest.split_once(' ')?;
    let work = match work {
        "j" => Claimable::Jobs,
        "s" => Claimable::Schedules,
        _ => return None,
    };
    Some((work, earliest.parse().ok()?, namespace))
}

impl Store {
    /// Publishes `message` on the ready channel, for every replica's subscription
    /// (this one's too: it skips its own).
    pub(crate) async fn publish_ready(&self, message: ReadyMessage) -> Result<(), StoreError> {
        self.query::<i64>(
            deadpool_redis::redis::cmd("PUBLISH")
                .arg(keys::ready_channel(&self.prefix))
                .arg(message.0)
                .to_owned(),
        )
        .await
        .map(drop)
    }

    /// Holds the replica's subscription until `stop`, reconnecting with backoff,
    /// and tells `on` what it hears (see [`Notice`]).
    pub(crate) async fn listen(&self, on: impl Fn(Notice<'_>), stop: CancellationToken) {
        let pattern = keys::job_changes_pattern(&self.prefix);
        let mut backoff = BACKOFF.0;
        let mut attempt = 0usize;
        loop {
            let connected = tokio::select! {
                connected = self.subscribe(attempt, &pattern) => connected,
                () = stop.cancelled() => return,
            };
            match connected {
                Ok(pubsub) => {
                    backoff = BACKOFF.0;
                    on(Notice::Subscribed);
                    if self.hear(pubsub, &on, &stop).await {
                        return;
                    }
                    tracing::info!("the job-changes subscription was lost; reconnecting");
                }
                Err(error) => {
                    tracing::debug!(%error, "could not subscribe to job changes; retrying");
                }
            }
            attempt = attempt.wrapping_add(1);
            tokio::select! {
                () = tokio::time::sleep(backoff) => {}
                () = stop.cancelled() => return,
            }
            backoff = (backoff * 2).min(BACKOFF.1);
        }
    }

    /// A connection with the pattern and the ready channel subscribed, within
    /// `--redis-timeout`.
    async fn subscribe(&self, attempt: usize, pattern: &str) -> Result<PubSub, String> {
        let connect = async {
            let mut pubsub = self.notices.connect(attempt).await?;
            pubsub.psubscribe(pattern).await?;
            pubsub.subscribe(keys::ready_channel(&self.prefix)).await?;
            Ok::<_, deadpool_redis::redis::RedisError>(pubsub)
        };
        match tokio::time::timeout(self.timeout, connect).await {
            Ok(connected) => connected.map_err(|e| e.to_string()),
            Err(_) => Err(format!("no subscription within {:?}", self.timeout)),
        }
    }

    /// Reads announcements until the connection ends or stops answering (false), or
    /// `stop` (true).
    async fn hear(
        &self,
        pubsub: PubSub,
        on: &impl Fn(Notice<'_>),
        stop: &CancellationToken,
    ) -> bool {
        let (mut sink, mut messages) = pubsub.split();
        let mut ping = tokio::time::interval(PING_EVERY);
        ping.tick().await;
        let ready = keys::ready_channel(&self.prefix);
        loop {
            tokio::select! {
                message = messages.next() => {
                    let Some(message) = message else { return false };
                    let channel = message.get_channel_name();
                    if channel == ready {
                        hear_ready(message.get_payload_bytes(), on);
                        continue;
                    }
                    let Some(namespace) = keys::job_changes_namespace(&self.prefix, channel) else {
                        continue;
                    };
                    if let Some((version, cancel_token, id)) = parse(message.get_payload_bytes()) {
                        on(Notice::Changed { namespace, id, version, cancel_token });
                    }
                }
                _ = ping.tick() => {
                    let answered = tokio::time::timeout(self.timeout, sink.ping::<deadpool_redis::redis::Value>()).await;
                    if !matches!(answered, Ok(Ok(_))) {
                        return false;
                    }
                }
                () = stop.cancelled() => return true,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::{Claimable, Notice, ReadyMessage};

    #[test]
    fn a_ready_message_reads_back_as_its_notices() {
        let mut message = ReadyMessage::new("r1");
        message.push(Claimable::Jobs, 5, "billing");
        message.push(Claimable::Schedules, -1, "a.b-c");
        let heard = Mutex::new(Vec::new());
        super::hear_ready(message.0.as_bytes(), &|notice| {
            heard.lock().unwrap().push(format!("{notice:?}"));
        });
        let everything = ReadyMessage::everything("r2");
        super::hear_ready(everything.0.as_bytes(), &|notice| {
            heard.lock().unwrap().push(format!("{notice:?}"));
        });
        super::hear_ready(b"r3\nx 1 ns\nj one ns\nj 1", &|notice| {
            heard.lock().unwrap().push(format!("{notice:?}"));
        });
        let expected = [
            Notice::Ready {
                from: "r1",
                namespace: "billing",
                work: Claimable::Jobs,
                earliest_ms: 5,
            },
            Notice::Ready {
                from: "r1",
                namespace: "a.b-c",
                work: Claimable::Schedules,
                earliest_ms: -1,
            },
            Notice::Everything { from: "r2" },
        ]
        .map(|n| format!("{n:?}"));
        assert_eq!(
            *heard.lock().unwrap(),
            expected,
            "malformed lines are skipped"
        );
    }

    #[test]
    fn an_announcement_is_version_token_id() {
        assert_eq!(super::parse(b"7  a b"), Some((7, None, "a b")));
        assert_eq!(super::parse(b"3 t.1 j"), Some((3, Some("t.1"), "j")));
        assert_eq!(super::parse(b"0  j"), Some((0, None, "j")));
        assert_eq!(super::parse(b"x  j"), None);
        assert_eq!(super::parse(b"1"), None);
    }
}
