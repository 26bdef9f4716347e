//! Limits on what a record may hold. They are the store's as much as the API's: an
//! id becomes part of a Redis key, and Lua numbers are doubles.

/// Longest record id (schedule, job, occurrence), queue name or dedup key, in bytes.
pub(crate) const MAX_ID_LEN: usize = 256;
/// Longest job or schedule job name, in bytes.
pub(crate) const MAX_NAME_LEN: usize = 256;
pub(crate) const MAX_HEADERS: usize = 64;
pub(crate) const MAX_HEADER_KEY_LEN: usize = 256;
pub(crate) const MAX_HEADER_VALUE_LEN: usize = 8192;
/// Lua numbers are doubles: counts above 2^53 would silently lose precision.
pub(crate) const MAX_RUN_LIMIT: u64 = 1 << 53;
/// 9999-12-31T23:59:59Z: the last instant RFC 3339 (and every client library) can show.
pub(crate) const MAX_TIMESTAMP_SECS: i64 = 253_402_300_799;
/// Most bytes one job or schedule message carries besides its payload: every header
/// at its limits with its protobuf framing, and a generous 64 KiB for the rest (ids,
/// names, the namespace, a cron expression, an error message, times, counters), and
/// a claimed job's checkpoint (issue 30).
pub(crate) const MAX_RECORD_OVERHEAD: usize =
    MAX_HEADERS * (MAX_HEADER_KEY_LEN + MAX_HEADER_VALUE_LEN + 16) + 64 * 1024 + MAX_CHECKPOINT_LEN;
/// Longest progress message a worker may report (ExtendLease.progress.message).
pub(crate) const MAX_PROGRESS_MESSAGE_LEN: usize = 256;
/// Largest checkpoint a worker may report (ExtendLease.progress.checkpoint); a claim
/// hands it to the next attempt, so it counts in a claimed job's message.
pub(crate) const MAX_CHECKPOINT_LEN: usize = 64 * 1024;
/// Largest result an ack may carry (AckJob.result, JobLease.result).
pub(crate) const MAX_RESULT_LEN: usize = 64 * 1024;
/// Longest namespace name.
pub(crate) const MAX_NAMESPACE_LEN: usize = 64;

/// Why an id is not acceptable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IdProblem {
    Empty,
    TooLong { len: usize },
}

impl std::fmt::Display for IdProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IdProblem::Empty => f.write_str("must not be empty"),
            IdProblem::TooLong { len } => {
                write!(f, "must be at most {MAX_ID_LEN} bytes, got {len}")
            }
        }
    }
}

/// A record id: any UTF-8, 1 to MAX_ID_LEN bytes. Ids come last in their key, after
/// an infix no other kind of key uses, so none can alias another key.
pub(crate) fn check_id(value: &str) -> Result<(), IdProblem> {
    match value.len() {
        0 => Err(IdProblem::Empty),
        len if len > MAX_ID_LEN => Err(IdProblem::TooLong { len }),
        _ => Ok(()),
    }
}

/// Namespaces become part of Redis keys and the Cluster hash tag, so they are limited
/// to characters that cannot move the tag or collide with the key separators.
pub(crate) fn is_namespace(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= MAX_NAMESPACE_LEN
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// How many records a listing page may hold, and how much of each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PageShape {
    /// Most records on the page.
    pub(crate) size: usize,
    /// Payloads and headers included (a FULL view), or left out (BASIC).
    pub(crate) full: bool,
    /// Most reply bytes the page's records may take; a page holds at least one record
    /// (the payload limit fits in one message).
    pub(crate) max_bytes: usize,
}

/// `text` cut to at most `max` bytes, at a character boundary.
pub(crate) fn truncated(text: &str, max: usize) -> &str {
    let cut = (0..=text.len().min(max))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    &text[..cut]
}
