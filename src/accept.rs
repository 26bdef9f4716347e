//! The listener's accept loop, kept from spinning when the process runs out of file
//! descriptors. tonic retries a failed accept at once (and logs it at trace level),
//! so with the descriptor limit reached and clients still connecting, the pending
//! connections fail every accept and the loop burns a core while logging nothing.
//! Here an accept that fails for lack of descriptors (or memory) is followed by a
//! pause that doubles up to `MAX_PAUSE` while the failures last, and a warning, at
//! most one per `WARN_EVERY`, says so with the count since the last one. Accepting
//! again frees nothing by itself; the pause lets closing connections and finishing
//! calls give descriptors back.

use std::{
    future::Future,
    io,
    pin::Pin,
    task::{ready, Context, Poll},
    time::Duration,
};

use tokio::time::{sleep, Instant, Sleep};
use tokio_stream::Stream;

/// First pause after a failed accept, and the longest.
const MIN_PAUSE: Duration = Duration::from_millis(5);
const MAX_PAUSE: Duration = Duration::from_secs(1);
/// At most one warning per this long while accepts keep failing.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// `inner`'s connections, with a pause after each accept that failed for lack of
/// resources; other accept errors (a peer that reset before it was accepted) are
/// passed on, as before.
pub(crate) struct BackoffIncoming<S> {
    inner: S,
    pause: Option<Pin<Box<Sleep>>>,
    next_pause: Duration,
    last_warning: Option<Instant>,
    /// Failed accepts since the last warning.
    failures: u64,
}

impl<S> BackoffIncoming<S> {
    pub(crate) fn new(inner: S) -> Self {
        BackoffIncoming {
            inner,
            pause: None,
            next_pause: MIN_PAUSE,
            last_warning: None,
            failures: 0,
        }
    }

    fn exhausted(&mut self, error: &io::Error) {
        self.failures += 1;
        let due = self
            .last_warning
            .is_none_or(|at| at.elapsed() >= WARN_EVERY);
        if due {
            tracing::warn!(
                %error,
                failed_accepts = self.failures,
                pause_ms = self.next_pause.as_millis() as u64,
                "cannot accept connections: out of file descriptors or memory; backing off \
                 (raise the open-files limit, ulimit -n, or lower the client count)"
            );
            self.last_warning = Some(Instant::now());
            self.failures = 0;
        }
        // Backoff: real time for file descriptors or memory to come free.
        #[allow(clippy::disallowed_methods)]
        let pause = Box::pin(sleep(self.next_pause));
        self.pause = Some(pause);
        self.next_pause = (self.next_pause * 2).min(MAX_PAUSE);
    }
}

/// Errors an accept gets when the process or the system has no descriptor (or
/// buffer) to give the new connection; retrying at once cannot succeed.
fn is_exhaustion(error: &io::Error) -> bool {
    // Linux numbers (the service is built for Linux; see the Dockerfile).
    const EMFILE: i32 = 24;
    const ENFILE: i32 = 23;
    const ENOBUFS: i32 = 105;
    const ENOMEM: i32 = 12;
    matches!(
        error.raw_os_error(),
        Some(EMFILE | ENFILE | ENOBUFS | ENOMEM)
    )
}

impl<S, IO> Stream for BackoffIncoming<S>
where
    S: Stream<Item = io::Result<IO>> + Unpin,
{
    type Item = io::Result<IO>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(pause) = this.pause.as_mut() {
                ready!(pause.as_mut().poll(cx));
                this.pause = None;
            }
            match ready!(Pin::new(&mut this.inner).poll_next(cx)) {
                Some(Err(error)) if is_exhaustion(&error) => this.exhausted(&error),
                Some(Ok(io)) => {
                    this.next_pause = MIN_PAUSE;
                    return Poll::Ready(Some(Ok(io)));
                }
                other => return Poll::Ready(other),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::{io, time::Duration};

    use tokio_stream::StreamExt;

    use super::{BackoffIncoming, MAX_PAUSE};

    fn emfile() -> io::Result<u8> {
        Err(io::Error::from_raw_os_error(24))
    }

    /// Each failed accept is followed by a pause that doubles, up to MAX_PAUSE; a
    /// connection resets it; other errors pass through.
    #[tokio::test(start_paused = true)]
    async fn failed_accepts_pause_longer_and_longer() {
        let accepts = vec![emfile(), emfile(), emfile(), Ok(1), emfile(), Ok(2)];
        let reset = Err(io::Error::from(io::ErrorKind::ConnectionReset));
        let accepts = accepts.into_iter().chain([reset]);
        let mut incoming = BackoffIncoming::new(tokio_stream::iter(accepts));
        let start = tokio::time::Instant::now();
        assert_eq!(incoming.next().await.map(|r| r.ok()), Some(Some(1)));
        // 5 + 10 + 20 ms of pauses before the first connection.
        assert_eq!(start.elapsed(), Duration::from_millis(35));
        let start = tokio::time::Instant::now();
        assert_eq!(incoming.next().await.map(|r| r.ok()), Some(Some(2)));
        assert_eq!(
            start.elapsed(),
            Duration::from_millis(5),
            "reset by a connection"
        );
        let passed = incoming.next().await.and_then(|r| r.err());
        assert_eq!(
            passed.map(|e| e.kind()),
            Some(io::ErrorKind::ConnectionReset)
        );
        assert!(incoming.next().await.is_none());

        let mut endless = BackoffIncoming::new(tokio_stream::iter(
            std::iter::repeat_with(emfile).take(20).chain([Ok(3)]),
        ));
        let start = tokio::time::Instant::now();
        assert_eq!(endless.next().await.map(|r| r.ok()), Some(Some(3)));
        assert!(
            start.elapsed() <= MAX_PAUSE * 20,
            "capped at MAX_PAUSE each"
        );
    }
}
