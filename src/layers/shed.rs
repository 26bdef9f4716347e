//! Admission of calls, with load shedding: a call takes a slot of one of three global
//! caps only once its request has arrived, and a call beyond its cap is answered
//! RESOURCE_EXHAUSTED at once, naming the flag, instead of queueing without end
//! (tower's ConcurrencyLimit + LoadShed, with a status a gRPC client understands:
//! tower's `Overloaded` error would reach the client as UNKNOWN).
//!
//! - Unary calls share `--max-in-flight`.
//! - Long-polls, which hold their slot up to `--max-wait`, and dueq's streams (until
//!   their response starts) share `--max-long-polls`, so waiting workers cannot
//!   starve producers and a flood of quick calls cannot refuse the workers.
//! - The open RPCs (health, reflection), which anyone may call without a
//!   credential, share `--max-open-calls` and nothing else: no unauthenticated
//!   caller holds a slot a tenant needs (issue 29: Health/Watch counted as a
//!   long-poll).
//!
//! Each principal holds at most its share of `--max-in-flight` and of
//! `--max-long-polls` (issue 29): half of the cap, rounded up, when the auth file in
//! force names more than one principal; the whole cap when it names one, or there is
//! no auth file (every caller is then one class). One tenant holding all it may
//! leaves the other half to the rest, so it cannot lock another principal out; its
//! next call is answered RESOURCE_EXHAUSTED naming the principal and its share. The
//! share is checked when a slot is taken, against the auth file in force then (a
//! reload that adds a second principal halves the share from the next call on), and
//! the table of what each principal holds has an entry only while it holds a slot.
//!
//! The slot is taken after authentication (the auth layer runs outside this one)
//! and after the request body: the whole body for a call whose request is one
//! message, the first message for a request stream (`CallKind::Duplex`). The body
//! has `--body-timeout` to arrive, or the call is answered DEADLINE_EXCEEDED; while
//! it waits it holds no slot, so HEADERS without DATA hold nothing shared (issue 29:
//! they held the caps from the headers on, and authorization, which needs the
//! message, never ran). Read bodies are bounded by `--max-message-size`: beyond it
//! the rest is left to tonic, which refuses it on the length prefix.

use std::{
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use bytes::{Bytes, BytesMut};
use http_body::Frame;
use http_body_util::BodyExt;
use tokio::sync::{Semaphore, SemaphorePermit};
use tonic::{body::Body, codegen::http, transport::server::TcpConnectInfo, Status};

use crate::{
    auth::{AuthFile, Caller},
    connections::{OverShare, Owners},
    rpc::{Access, CallKind, Rpc},
    shares::{share_of, Held, Shares},
};

/// A gRPC message's prefix: a compression flag and a 4-byte big-endian length.
const PREFIX: usize = 5;

/// Most bytes of request an open RPC (health, reflection: a service or symbol name)
/// may send; beyond it RESOURCE_EXHAUSTED. Anyone may call them, so what their
/// requests may buffer before they are admitted is kept small.
const OPEN_MAX_REQUEST: usize = 64 * 1024;

/// The caps and the body's limits.
#[derive(Debug)]
pub(super) struct Shed {
    unary: Semaphore,
    long: Semaphore,
    open: Semaphore,
    /// What each principal holds of `unary` and of `long`.
    unary_shares: Arc<Shares>,
    long_shares: Arc<Shares>,
    /// The caps' sizes, for the shares.
    caps: Caps,
    /// The principals in force (None: no auth file), whose number sets the shares.
    auth: Option<Arc<AuthFile>>,
    /// With an auth file: who each connection is charged to.
    owners: Option<Arc<Owners>>,
    /// `--body-timeout`.
    body_timeout: Duration,
    /// `--max-message-size`: most bytes of body read before the call is admitted.
    max_message: usize,
}

/// The flags of [`Shed`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caps {
    /// `--max-in-flight`.
    pub(crate) unary: usize,
    /// `--max-long-polls`.
    pub(crate) long: usize,
    /// `--max-open-calls`.
    pub(crate) open: usize,
    /// `--body-timeout`.
    pub(crate) body_timeout: Duration,
    /// `--max-message-size`.
    pub(crate) max_message: usize,
}

impl Shed {
    pub(super) fn new(
        caps: Caps,
        auth: Option<Arc<AuthFile>>,
        owners: Option<Arc<Owners>>,
    ) -> Self {
        let cap = |n: usize| Semaphore::new(n.min(Semaphore::MAX_PERMITS));
        Shed {
            unary: cap(caps.unary),
            long: cap(caps.long),
            open: cap(caps.open),
            unary_shares: Arc::default(),
            long_shares: Arc::default(),
            caps,
            auth,
            owners,
            body_timeout: caps.body_timeout,
            max_message: caps.max_message,
        }
    }

    /// The cap a request takes a slot of and its flag, and the share of it its
    /// principal may hold (none for the open RPCs: a cap of their own).
    fn cap_of(&self, rpc: Option<&Rpc>, extensions: &http::Extensions) -> Admission<'_> {
        let (cap, flag, (shares, size)) = match rpc {
            Some(rpc) if rpc.access == Access::Open => {
                return Admission {
                    cap: &self.open,
                    flag: "--max-open-calls",
                    share: None,
                }
            }
            Some(rpc) if rpc.kind.is_long() => (
                &self.long,
                "--max-long-polls",
                (&self.long_shares, self.caps.long),
            ),
            _ => (
                &self.unary,
                "--max-in-flight",
                (&self.unary_shares, self.caps.unary),
            ),
        };
        // The caller's `Arc`, not a copy of its name: nothing is allocated per call.
        let caller = extensions
            .get::<Caller>()
            .cloned()
            .unwrap_or(Caller::Unrestricted);
        Admission {
            cap,
            flag,
            share: Some(Share {
                shares,
                caller,
                share: share_of(size, self.classes()),
                cap: size,
            }),
        }
    }

    /// How many principals the auth file in force names (1 without one).
    fn classes(&self) -> usize {
        self.auth.as_ref().map_or(1, |file| file.current().count())
    }

    /// Charges the connection a principal's call came on to it, the first time
    /// (`Owners::charge`); RESOURCE_EXHAUSTED beyond its share of
    /// `--max-connections`. The open RPCs (anyone's) charge no one.
    fn charge_connection(
        &self,
        rpc: Option<&Rpc>,
        extensions: &http::Extensions,
    ) -> Result<(), Status> {
        let (Some(owners), Some(Caller::Principal(principal))) =
            (&self.owners, extensions.get::<Caller>())
        else {
            return Ok(());
        };
        if rpc.is_some_and(|rpc| rpc.access == Access::Open) {
            return Ok(());
        }
        let peer = extensions
            .get::<TcpConnectInfo>()
            .and_then(TcpConnectInfo::remote_addr)
            .or_else(|| crate::tls::remote_addr(extensions));
        let Some(peer) = peer else {
            return Ok(());
        };
        owners
            .charge(peer, &principal.name, self.classes())
            .map_err(|OverShare { share, max }| {
                Status::resource_exhausted(format!(
                    "principal {:?} holds its {share} of the {max} --max-connections \
                     connections (each principal's share when the auth file names more \
                     than one): this connection is closed; call on one of its open \
                     connections",
                    principal.name
                ))
            })
    }

    /// How much of a request's body is read before it is admitted.
    fn reading(&self, rpc: Option<&Rpc>) -> Reading {
        let open = rpc.is_some_and(|rpc| rpc.access == Access::Open);
        Reading {
            wanted: match rpc.map(|rpc| rpc.kind) {
                Some(CallKind::Duplex) => Wanted::FirstMessage,
                _ => Wanted::All,
            },
            // Beyond --max-message-size tonic refuses the message on its length
            // prefix, naming the flag (`super::message_size`); an open RPC's
            // request is refused here, beyond its much smaller bound.
            limit: if open {
                Limit::Refuse(OPEN_MAX_REQUEST.min(self.max_message))
            } else {
                Limit::PassOn(self.max_message)
            },
        }
    }
}

/// What an admitted call holds until the services have answered it.
pub(super) struct Slot<'a> {
    _permit: SemaphorePermit<'a>,
    _held: Option<Held>,
}

impl Shed {
    /// The request's body, once it is in and the call has a slot; or the answer
    /// that refuses the call (boxed: a refusal is rare, and a large error would
    /// make every call's future larger).
    pub(super) async fn admit(
        &self,
        rpc: Option<&'static Rpc>,
        extensions: &http::Extensions,
        body: Body,
    ) -> Result<(Body, Slot<'_>), Box<http::Response<Body>>> {
        let refused = |status: Status| Box::new(status.into_http());
        if let Err(status) = self.charge_connection(rpc, extensions) {
            return Err(refused(status));
        }
        let Admission { cap, flag, share } = self.cap_of(rpc, extensions);
        let reading = self.reading(rpc);
        let read = tokio::time::timeout(self.body_timeout, arrived(body, reading));
        let body = match read.await {
            Ok(Ok(body)) => body,
            Ok(Err(status)) => return Err(refused(status)),
            Err(_) => return Err(refused(body_late(self.body_timeout))),
        };
        let held = share
            .map(|share| share.take(flag))
            .transpose()
            .map_err(refused)?;
        let Ok(permit) = cap.try_acquire() else {
            return Err(refused(overloaded(flag)));
        };
        let slot = Slot {
            _permit: permit,
            _held: held,
        };
        Ok((body, slot))
    }
}

/// What a call takes a slot of.
struct Admission<'a> {
    cap: &'a Semaphore,
    flag: &'static str,
    share: Option<Share<'a>>,
}

/// A principal's claim on its share of a cap.
struct Share<'a> {
    shares: &'a Arc<Shares>,
    caller: Caller,
    share: usize,
    cap: usize,
}

impl Share<'_> {
    /// One slot of the share, or RESOURCE_EXHAUSTED naming the principal, its share
    /// and the cap's `flag`.
    fn take(self, flag: &str) -> Result<Held, Status> {
        let Share {
            shares,
            caller,
            share,
            cap,
        } = self;
        let principal = caller.name();
        Shares::take(shares, principal, share).ok_or_else(|| {
            Status::resource_exhausted(format!(
                "principal {principal:?} holds its {share} of the {cap} {flag} calls (each \
                 principal's share when the auth file names more than one); retry with \
                 backoff"
            ))
        })
    }
}

fn overloaded(flag: &str) -> Status {
    Status::resource_exhausted(format!(
        "server overloaded: {flag} calls are already in flight; retry with backoff"
    ))
}

fn body_late(timeout: Duration) -> Status {
    Status::deadline_exceeded(format!(
        "the request did not arrive within the server's --body-timeout of {}: send the \
         request message with its headers (nothing was done)",
        humantime::format_duration(timeout)
    ))
}

/// What is read of a request's body before it is admitted.
#[derive(Debug, Clone, Copy)]
struct Reading {
    wanted: Wanted,
    limit: Limit,
}

/// Most bytes of message read before admission, and what happens beyond.
#[derive(Debug, Clone, Copy)]
enum Limit {
    /// Read no more; pass what was read and the rest on (tonic refuses the
    /// message on its length prefix).
    PassOn(usize),
    /// Answer RESOURCE_EXHAUSTED.
    Refuse(usize),
}

/// How much of the body must arrive before the call is admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wanted {
    /// All of it (a request of one message).
    All,
    /// Its first message (a request stream).
    FirstMessage,
}

/// The body again, once what is `reading.wanted` of it has arrived (or its limit,
/// and a prefix: see [`Limit`]): what was read, then the rest. A body that fails
/// (the client reset the stream) answers its status.
async fn arrived(mut body: Body, reading: Reading) -> Result<Body, Status> {
    let mut read = Read::default();
    let (Limit::PassOn(max) | Limit::Refuse(max)) = reading.limit;
    let limit = max.saturating_add(PREFIX);
    loop {
        let enough = reading.wanted == Wanted::FirstMessage && holds_a_message(read.bytes());
        if !enough && read.len() > limit {
            if let Limit::Refuse(max) = reading.limit {
                return Err(Status::resource_exhausted(format!(
                    "request: more than {max} bytes, the most a health or reflection \
                     request may be"
                )));
            }
        }
        if enough || read.len() > limit {
            return Ok(Body::new(Replay::new(read.freeze(), None, Some(body))));
        }
        match body.frame().await {
            None => return Ok(Body::new(Replay::new(read.freeze(), None, None))),
            Some(Err(status)) => return Err(status),
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => read.push(data),
                Err(frame) => {
                    // Trailers end the body.
                    let trailers = frame.into_trailers().ok();
                    return Ok(Body::new(Replay::new(read.freeze(), trailers, None)));
                }
            },
        }
    }
}

/// The bytes of a body read so far. A request of one DATA frame, the usual one, is
/// kept as it came, with no copy; later frames are gathered into one buffer.
#[derive(Debug, Default)]
enum Read {
    #[default]
    Nothing,
    One(Bytes),
    Gathered(BytesMut),
}

impl Read {
    fn push(&mut self, data: Bytes) {
        *self = match std::mem::take(self) {
            Read::Nothing => Read::One(data),
            Read::One(first) => {
                let mut gathered = BytesMut::with_capacity(first.len() + data.len());
                gathered.extend_from_slice(&first);
                gathered.extend_from_slice(&data);
                Read::Gathered(gathered)
            }
            Read::Gathered(mut gathered) => {
                gathered.extend_from_slice(&data);
                Read::Gathered(gathered)
            }
        };
    }

    fn bytes(&self) -> &[u8] {
        match self {
            Read::Nothing => &[],
            Read::One(bytes) => bytes,
            Read::Gathered(bytes) => bytes,
        }
    }

    fn len(&self) -> usize {
        self.bytes().len()
    }

    fn freeze(self) -> Bytes {
        match self {
            Read::Nothing => Bytes::new(),
            Read::One(bytes) => bytes,
            Read::Gathered(bytes) => bytes.freeze(),
        }
    }
}

/// Whether `read` begins with a whole gRPC message (prefix and all).
fn holds_a_message(read: &[u8]) -> bool {
    let Some(length) = read.get(1..PREFIX) else {
        return false;
    };
    let length = u32::from_be_bytes([length[0], length[1], length[2], length[3]]);
    usize::try_from(length).is_ok_and(|n| read.len() >= PREFIX.saturating_add(n))
}

/// A body that was partly read: the bytes read, then the trailers read or the rest.
struct Replay {
    head: Option<Bytes>,
    trailers: Option<http::HeaderMap>,
    rest: Option<Body>,
}

impl Replay {
    fn new(head: Bytes, trailers: Option<http::HeaderMap>, rest: Option<Body>) -> Replay {
        Replay {
            head: (!head.is_empty()).then_some(head),
            trailers,
            rest,
        }
    }
}

impl http_body::Body for Replay {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        if let Some(head) = self.head.take() {
            return Poll::Ready(Some(Ok(Frame::data(head))));
        }
        if let Some(trailers) = self.trailers.take() {
            return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
        }
        match self.rest.as_mut() {
            Some(rest) => Pin::new(rest).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.head.is_none()
            && self.trailers.is_none()
            && self
                .rest
                .as_ref()
                .is_none_or(http_body::Body::is_end_stream)
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::{holds_a_message, Read};

    #[test]
    fn keeps_one_frame_as_it_came_and_gathers_more() {
        let first = Bytes::from_static(b"\0\0\0\0\x02");
        let mut read = Read::default();
        read.push(first.clone());
        assert!(matches!(&read, Read::One(bytes) if bytes.as_ptr() == first.as_ptr()));
        read.push(Bytes::from_static(b"ab"));
        read.push(Bytes::from_static(b"c"));
        assert_eq!(read.len(), 8);
        assert!(holds_a_message(read.bytes()));
        assert_eq!(read.freeze(), Bytes::from_static(b"\0\0\0\0\x02abc"));
    }

    #[test]
    fn a_message_is_its_prefix_and_its_length() {
        assert!(!holds_a_message(&[]));
        assert!(!holds_a_message(&[0, 0, 0, 0]));
        assert!(holds_a_message(&[0, 0, 0, 0, 0]));
        assert!(!holds_a_message(&[0, 0, 0, 0, 2, 9]));
        assert!(holds_a_message(&[0, 0, 0, 0, 2, 9, 9]));
        assert!(holds_a_message(&[0, 0, 0, 0, 1, 9, 0, 0]));
    }
}
