//! What the server knows about one RPC, as a value: its path, who may call it, how
//! long it may last, whether an allowed call is audited. The values themselves are
//! the one RPC table (`api::rpcs`), written once, one line per RPC; the outermost
//! concern of the layers (`layers::classify`) looks a request's path up there once
//! and passes the `&'static Rpc` to every later one, which read it instead of
//! parsing the path again. (The handlers find theirs by method name,
//! `api::queue_rpc`.)

use std::fmt;

use crate::auth::Role;

/// One RPC the server answers.
#[derive(Debug)]
pub(crate) struct Rpc {
    /// The gRPC service, with its package: `dueq.v1.QueueService`.
    pub(crate) service: &'static str,
    /// The proto method name: `Enqueue`. The name roles, audit lines, metrics and
    /// spans use.
    pub(crate) method: &'static str,
    /// The HTTP/2 path: `/dueq.v1.QueueService/Enqueue`.
    pub(crate) path: &'static str,
    pub(crate) access: Access,
    pub(crate) kind: CallKind,
    /// Calls, allowed or refused, are recorded with their principal and outcome in
    /// the namespace's audit log and on `dueq::audit` (operator actions that change or
    /// remove data; `api::audit`).
    pub(crate) audited: bool,
}

/// Who may call an RPC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Anyone, auth file or not: health and reflection, which reveal nothing of any
    /// tenant and which load balancers and grpcurl use.
    Open,
    /// A principal holding this role or one that includes it (`Role::includes`) on
    /// the namespace the request names.
    Role(Role),
}

/// How long a call may legitimately last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallKind {
    /// Answers as soon as Redis does: shares `--max-in-flight`, cut at
    /// `--request-timeout`, timed in the latency histogram.
    Unary,
    /// A long-poll: waits up to `--max-wait` for work. Shares `--max-long-polls`.
    LongPoll,
    /// A response stream that may run for long (Migrate's progress, WatchJob,
    /// health Watch) after a request of one message. Shares `--max-long-polls` (an
    /// open one `--max-open-calls`) until its response starts.
    Stream,
    /// A stream both ways (Work, reflection): like [`CallKind::Stream`], but the
    /// request streams too, so the call is admitted once its first message is in
    /// (`layers::shed`).
    Duplex,
}

impl CallKind {
    /// Whether the call may hold its slot for long (a long-poll or a stream): kept
    /// out of the unary calls' concurrency limit, timeout and histogram.
    pub(crate) fn is_long(self) -> bool {
        !matches!(self, CallKind::Unary)
    }
}

impl fmt::Display for Rpc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.method)
    }
}

/// The table as the layers look it up: every RPC by path, and its place in the
/// table (where the metrics layer keeps its series).
#[derive(Debug)]
pub(crate) struct Catalogue {
    by_path: std::collections::HashMap<&'static str, Line>,
    lines: Vec<&'static Rpc>,
}

/// An RPC of the table and its place there.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Line {
    pub(crate) rpc: &'static Rpc,
    /// Its index in [`Catalogue::lines`].
    pub(crate) index: usize,
}

impl Catalogue {
    /// # Panics
    /// When two lines of the table share a path: a table that cannot be looked up
    /// unambiguously is a build defect, caught by the table's own test.
    pub(crate) fn new(rpcs: impl IntoIterator<Item = &'static Rpc>) -> Self {
        let mut by_path = std::collections::HashMap::new();
        let lines: Vec<&'static Rpc> = rpcs.into_iter().collect();
        for (index, &rpc) in lines.iter().enumerate() {
            let before = by_path.insert(rpc.path, Line { rpc, index });
            assert!(before.is_none(), "{} is in the RPC table twice", rpc.path);
        }
        Catalogue { by_path, lines }
    }

    /// The RPC served at `path`; None for a path the server does not serve.
    pub(crate) fn find(&self, path: &str) -> Option<Line> {
        self.by_path.get(path).copied()
    }

    /// Every RPC, in the order of their [`Line::index`].
    pub(crate) fn lines(&self) -> &[&'static Rpc] {
        &self.lines
    }
}
