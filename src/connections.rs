//! Admission of connections, on the listener's incoming stream (after
//! `accept::BackoffIncoming`): at most `--max-connections` open at once, and a
//! connection that has not sent the HTTP/2 connection preface within
//! `--http2-header-timeout` of being accepted is closed.
//!
//! Beyond the cap a new connection is accepted and closed at once rather than left in
//! the kernel's backlog: the client learns at once (its connect fails), and the
//! backlog never fills with connections nobody will serve. Each connection holds a
//! permit, given back when hyper drops the connection.
//!
//! The preface deadline catches the client that opens TCP and sends nothing (or a
//! few bytes at a time): hyper waits for the preface without a timer of its own.
//! Once the preface is in, HTTP/2 keepalive pings, the per-connection stream cap and
//! `--request-timeout` bound what the connection can hold.
//!
//! Over TLS the bytes on the wire are the handshake's, not HTTP/2's: the deadline
//! runs from the accept until the TLS layer has decrypted the preface and says so
//! ([`AwaitsPreface::preface_in`]), so it covers the handshake and the silence after
//! it alike ([`PrefaceOn::Decrypted`]; issue 29: counting the ClientHello's bytes let
//! a client that finished its handshake and then sent nothing hold a connection for
//! ever).
//!
//! With an auth file, each principal holds at most its share of `--max-connections`
//! (issue 29; `crate::shares`: half when the file names more than one principal).
//! Plain tokens name a principal only per request, so a connection is charged to
//! the first principal that makes an authenticated call on it ([`Owners::charge`],
//! from the admission layer `crate::layers::shed`), and stays charged to it
//! until it closes. A principal's call on a new connection beyond its share is
//! refused RESOURCE_EXHAUSTED, and that connection is closed a moment later
//! ([`CLOSE_GRACE`], for the refusal to go out), so the slot it took comes back.
//! A connection on which no principal has called yet (the anonymous class: health
//! checks, a client that has not called yet) is bounded by the preface deadline,
//! and the anonymous class holds at most half of `--max-connections`, rounded up
//! ([`Owners::open`]): a new connection beyond that closes the oldest connection
//! still anonymous. Every connection is anonymous until its first call, so a
//! refusal would lock principals out of new connections as surely as the cap
//! did; closing the oldest instead means a client that connects and never calls
//! holds its slot only until newer connections need it, while a client that calls
//! at once is charged to its principal, and safe from this, well before.

use std::{
    collections::{BTreeMap, HashMap},
    future::Future,
    io,
    net::SocketAddr,
    pin::Pin,
    sync::{Arc, Mutex},
    task::{ready, Context, Poll},
    time::Duration,
};

use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    sync::{OwnedSemaphorePermit, Semaphore},
    time::{sleep, Instant, Sleep},
};
use tokio_stream::Stream;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use tonic::transport::server::Connected;

use crate::{
    shares::{share_of, Held, Shares},
    sync::lock,
};

/// `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`, what every HTTP/2 client sends first.
const PREFACE_LEN: usize = 24;
/// At most one warning per this long while connections are refused.
const WARN_EVERY: Duration = Duration::from_secs(10);
/// How long a connection refused to its principal lives on after the refusal, for
/// the refusal's answer to be sent.
const CLOSE_GRACE: Duration = Duration::from_millis(200);

/// The open connections by peer address, and the principal each is charged to.
#[derive(Debug)]
pub(crate) struct Owners {
    shares: Arc<Shares>,
    by_peer: Mutex<HashMap<SocketAddr, Arc<Charge>>>,
    /// The connections charged to no one yet, oldest first.
    anonymous: Mutex<Anonymous>,
    /// `--max-connections`.
    max: usize,
}

/// The connections on which no principal has called yet, by the order they opened.
#[derive(Debug, Default)]
struct Anonymous {
    next: u64,
    by_age: BTreeMap<u64, Arc<Charge>>,
}

/// Who one connection is charged to, and the signal that closes it.
#[derive(Debug, Default)]
struct Charge {
    held: Mutex<Option<Held>>,
    close: CancellationToken,
    /// Its place in [`Anonymous::by_age`] until a principal is charged.
    age: u64,
}

/// A refusal of a principal's call on a connection beyond its share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OverShare {
    pub(crate) share: usize,
    pub(crate) max: usize,
}

impl Owners {
    pub(crate) fn new(max: usize) -> Arc<Owners> {
        Arc::new(Owners {
            shares: Arc::default(),
            by_peer: Mutex::new(HashMap::new()),
            anonymous: Mutex::default(),
            max,
        })
    }

    /// Charges the connection from `peer` to `principal`, one of `classes`, unless
    /// it is charged already (to anyone: the first principal pays). Beyond the
    /// principal's share the connection is closed (after [`CLOSE_GRACE`]) and the
    /// call refused. A peer that is no open connection (an in-process call) is let
    /// through.
    pub(crate) fn charge(
        &self,
        peer: SocketAddr,
        principal: &str,
        classes: usize,
    ) -> Result<(), OverShare> {
        let Some(charge) = lock(&self.by_peer).get(&peer).cloned() else {
            return Ok(());
        };
        let mut held = lock(&charge.held);
        if held.is_some() {
            return Ok(());
        }
        let share = share_of(self.max, classes);
        // Charged or closing, it is no longer the anonymous class's.
        lock(&self.anonymous).by_age.remove(&charge.age);
        match Shares::take(&self.shares, principal, share) {
            Some(slot) => {
                *held = Some(slot);
                Ok(())
            }
            None => {
                charge.close.cancel();
                Err(OverShare {
                    share,
                    max: self.max,
                })
            }
        }
    }

    /// A new connection from `peer`, anonymous until a principal calls on it. The
    /// anonymous class holds at most half of `--max-connections` (rounded up):
    /// beyond it, the oldest anonymous connection is closed.
    fn open(&self, peer: SocketAddr) -> Arc<Charge> {
        let (charge, oldest) = {
            let mut anonymous = lock(&self.anonymous);
            let charge = Arc::new(Charge {
                age: anonymous.next,
                ..Charge::default()
            });
            anonymous.next += 1;
            let oldest = if anonymous.by_age.len() >= share_of(self.max, 2) {
                anonymous.by_age.pop_first()
            } else {
                None
            };
            anonymous.by_age.insert(charge.age, charge.clone());
            (charge, oldest)
        };
        lock(&self.by_peer).insert(peer, charge.clone());
        if let Some((_, oldest)) = oldest {
            oldest.close.cancel();
        }
        charge
    }

    fn closed(&self, peer: SocketAddr, charge: &Arc<Charge>) {
        lock(&self.anonymous).by_age.remove(&charge.age);
        let mut by_peer = lock(&self.by_peer);
        if by_peer.get(&peer).is_some_and(|c| Arc::ptr_eq(c, charge)) {
            by_peer.remove(&peer);
        }
    }
}

/// The peer's address of an accepted connection, which requests name in their
/// connect info.
pub(crate) trait Peer {
    fn peer(&self) -> Option<SocketAddr>;
}

impl Peer for tokio::net::TcpStream {
    fn peer(&self) -> Option<SocketAddr> {
        self.peer_addr().ok()
    }
}

impl Peer for tokio::io::DuplexStream {
    fn peer(&self) -> Option<SocketAddr> {
        None
    }
}

/// A connection's place in [`Owners`].
struct Owned {
    owners: Arc<Owners>,
    peer: SocketAddr,
    charge: Arc<Charge>,
    /// Resolves once the connection is refused to its principal.
    refused: Pin<Box<WaitForCancellationFutureOwned>>,
    /// Then: when it closes.
    closing: Option<Pin<Box<Sleep>>>,
}

impl Owned {
    /// Whether the connection is to close now (registering the wake-up if not).
    fn closes(&mut self, cx: &mut Context<'_>) -> bool {
        if self.closing.is_none() && self.refused.as_mut().poll(cx).is_ready() {
            // A short grace, real time, for the refusal's answer to go out.
            #[allow(clippy::disallowed_methods)]
            let grace = Box::pin(sleep(CLOSE_GRACE));
            self.closing = Some(grace);
        }
        self.closing
            .as_mut()
            .is_some_and(|closing| closing.as_mut().poll(cx).is_ready())
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        self.owners.closed(self.peer, &self.charge);
    }
}

/// Where the HTTP/2 preface is looked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PrefaceOn {
    /// In the bytes as read: plaintext HTTP/2.
    Wire,
    /// After TLS decryption: the TLS layer calls [`AwaitsPreface::preface_in`] once it
    /// has read the preface; the wire's bytes (the handshake's) do not count.
    Decrypted,
}

/// A connection that closes itself unless told in time that the preface is in.
pub(crate) trait AwaitsPreface {
    /// The preface has been read (after decryption): the deadline no longer applies.
    fn preface_in(&mut self);
}

/// `inner`'s connections, at most `max` open at once, each closed unless it sends the
/// preface within `preface_timeout`.
pub(crate) struct LimitedIncoming<S> {
    inner: S,
    permits: Arc<Semaphore>,
    max: usize,
    preface_timeout: Duration,
    preface_on: PrefaceOn,
    last_warning: Option<Instant>,
    /// Connections refused since the last warning.
    refused: u64,
    /// With an auth file: who each connection is charged to.
    owners: Option<Arc<Owners>>,
}

impl<S> LimitedIncoming<S> {
    pub(crate) fn new(
        inner: S,
        max: usize,
        preface_timeout: Duration,
        preface_on: PrefaceOn,
    ) -> Self {
        let max = max.min(Semaphore::MAX_PERMITS);
        LimitedIncoming {
            inner,
            permits: Arc::new(Semaphore::new(max)),
            max,
            preface_timeout,
            preface_on,
            last_warning: None,
            refused: 0,
            owners: None,
        }
    }

    /// Charges each connection to a principal (`Owners::charge`).
    pub(crate) fn with_owners(self, owners: Option<Arc<Owners>>) -> Self {
        LimitedIncoming { owners, ..self }
    }

    fn refuse(&mut self) {
        self.refused += 1;
        let due = self
            .last_warning
            .is_none_or(|at| at.elapsed() >= WARN_EVERY);
        if due {
            tracing::warn!(
                max_connections = self.max,
                refused = self.refused,
                "closing new connections: --max-connections are open"
            );
            self.last_warning = Some(Instant::now());
            self.refused = 0;
        }
    }
}

impl<S, IO, E> Stream for LimitedIncoming<S>
where
    S: Stream<Item = Result<IO, E>> + Unpin,
    IO: Peer,
{
    type Item = Result<Limited<IO>, E>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            match ready!(Pin::new(&mut this.inner).poll_next(cx)) {
                Some(Ok(io)) => match this.permits.clone().try_acquire_owned() {
                    Ok(permit) => {
                        // The preface deadline: real time a client has to send it.
                        #[allow(clippy::disallowed_methods)]
                        let preface = Box::pin(sleep(this.preface_timeout));
                        let owned = this.owners.as_ref().zip(io.peer()).map(|(owners, peer)| {
                            let charge = owners.open(peer);
                            Owned {
                                owners: owners.clone(),
                                peer,
                                refused: Box::pin(charge.close.clone().cancelled_owned()),
                                charge,
                                closing: None,
                            }
                        });
                        return Poll::Ready(Some(Ok(Limited {
                            io,
                            owned,
                            _permit: permit,
                            preface: Some(preface),
                            read: 0,
                            count_wire: this.preface_on == PrefaceOn::Wire,
                        })));
                    }
                    // Dropping the stream closes it.
                    Err(_) => this.refuse(),
                },
                Some(Err(error)) => return Poll::Ready(Some(Err(error))),
                None => return Poll::Ready(None),
            }
        }
    }
}

/// One admitted connection: holds its permit until dropped.
pub(crate) struct Limited<IO> {
    io: IO,
    /// With an auth file: its place among the principals' connections.
    owned: Option<Owned>,
    _permit: OwnedSemaphorePermit,
    /// Until the preface is in: when to give up on it.
    preface: Option<Pin<Box<Sleep>>>,
    /// Bytes read so far, until the preface is in.
    read: usize,
    /// Whether the bytes read are HTTP/2's (plaintext), so count toward the preface.
    count_wire: bool,
}

impl<IO> AwaitsPreface for Limited<IO> {
    fn preface_in(&mut self) {
        self.preface = None;
    }
}

impl<IO: Connected> Connected for Limited<IO> {
    type ConnectInfo = IO::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.io.connect_info()
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Limited<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.owned.as_mut().is_some_and(|owned| owned.closes(cx)) {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "closed: its principal holds its share of --max-connections, or it was \
                 the oldest of the connections no principal had called on",
            )));
        }
        if let Some(deadline) = this.preface.as_mut() {
            if deadline.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no HTTP/2 preface within --http2-header-timeout",
                )));
            }
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.io).poll_read(cx, buf))?;
        if this.preface.is_some() && this.count_wire {
            this.read += buf.filled().len() - before;
            if this.read >= PREFACE_LEN {
                this.preface = None;
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Limited<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_stream::StreamExt;

    use super::{AwaitsPreface, LimitedIncoming, PrefaceOn};

    /// A connection beyond the cap is closed; closing one makes room.
    #[tokio::test]
    async fn refuses_beyond_the_cap_until_one_closes() {
        let (a, _a) = tokio::io::duplex(64);
        let (b, mut b_peer) = tokio::io::duplex(64);
        let (c, _c) = tokio::io::duplex(64);
        let accepts = [a, b, c].into_iter().map(Ok::<_, std::io::Error>);
        let mut incoming = LimitedIncoming::new(
            tokio_stream::iter(accepts),
            1,
            Duration::from_secs(60),
            PrefaceOn::Wire,
        );
        let first = incoming.next().await.and_then(|r| r.ok());
        assert!(first.is_some());
        // b is dropped (closed): its peer reads end-of-stream.
        let third = incoming.next().await;
        assert!(
            third.is_none(),
            "b refused, and c refused too while a is open"
        );
        let mut byte = [0u8; 1];
        assert_eq!(b_peer.read(&mut byte).await.ok(), Some(0));
        drop(first);
        let (d, _d) = tokio::io::duplex(64);
        let mut incoming = LimitedIncoming::new(
            tokio_stream::iter([Ok::<_, std::io::Error>(d)]),
            1,
            Duration::from_secs(60),
            PrefaceOn::Wire,
        );
        assert!(incoming.next().await.is_some());
    }

    /// A connection that does not send the preface in time fails its reads; one that
    /// does is left alone after.
    #[tokio::test(start_paused = true)]
    async fn closes_a_connection_without_preface() {
        let (silent, _silent_peer) = tokio::io::duplex(64);
        let (talker, mut talker_peer) = tokio::io::duplex(64);
        let accepts = [silent, talker].into_iter().map(Ok::<_, std::io::Error>);
        let mut incoming = LimitedIncoming::new(
            tokio_stream::iter(accepts),
            10,
            Duration::from_secs(5),
            PrefaceOn::Wire,
        );
        let mut silent = incoming.next().await.and_then(|r| r.ok()).expect("silent");
        let mut talker = incoming.next().await.and_then(|r| r.ok()).expect("talker");
        let mut buf = [0u8; 64];
        talker_peer
            .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            .await
            .expect("write");
        assert_eq!(talker.read(&mut buf).await.ok(), Some(24));

        let error = silent.read(&mut buf).await.expect_err("timed out");
        assert_eq!(error.kind(), std::io::ErrorKind::TimedOut);
        // Past the preface timeout (on the paused clock: at once).
        #[allow(clippy::disallowed_methods)]
        tokio::time::sleep(Duration::from_secs(10)).await;
        talker_peer.write_all(b"x").await.expect("write");
        assert_eq!(
            talker.read(&mut buf).await.ok(),
            Some(1),
            "no deadline after"
        );
    }

    /// Pins (issue 29): when the preface is looked for after decryption, the bytes on
    /// the wire (a TLS handshake's) do not disarm the deadline; only `preface_in`
    /// does.
    #[tokio::test(start_paused = true)]
    async fn decrypted_preface_is_not_the_wire_bytes() {
        let (handshaker, mut handshaker_peer) = tokio::io::duplex(256);
        let (told, mut told_peer) = tokio::io::duplex(256);
        let accepts = [handshaker, told].into_iter().map(Ok::<_, std::io::Error>);
        let mut incoming = LimitedIncoming::new(
            tokio_stream::iter(accepts),
            10,
            Duration::from_secs(5),
            PrefaceOn::Decrypted,
        );
        let mut handshaker = incoming.next().await.and_then(|r| r.ok()).expect("one");
        let mut told = incoming.next().await.and_then(|r| r.ok()).expect("two");
        let mut buf = [0u8; 256];
        let hello = [0x16u8; 100];
        handshaker_peer.write_all(&hello).await.expect("write");
        assert_eq!(handshaker.read(&mut buf).await.ok(), Some(100));
        told_peer.write_all(&hello).await.expect("write");
        assert_eq!(told.read(&mut buf).await.ok(), Some(100));
        told.preface_in();

        let error = handshaker.read(&mut buf).await.expect_err("timed out");
        assert_eq!(error.kind(), std::io::ErrorKind::TimedOut);
        #[allow(clippy::disallowed_methods)]
        tokio::time::sleep(Duration::from_secs(10)).await;
        told_peer.write_all(b"x").await.expect("write");
        assert_eq!(told.read(&mut buf).await.ok(), Some(1), "no deadline after");
    }
}
