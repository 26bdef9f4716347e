//! The `dueq::audit` log lines: one per audited call (`api::audit` records them in
//! Redis as well), and one per refused call of any RPC, at most
//! [`MAX_REFUSAL_LINES_PER_SECOND`]. Apart from `audit` so that the checks that refuse
//! (`api::authorize`, the auth layer, the console's sign-in) need nothing else of it.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// The request header that says a call came from the console.
pub(crate) const VIA_HEADER: &str = "x-dueq-via";

/// The audit line of one call, on `dueq::audit` at info: who, what, where, and the
/// outcome.
pub(super) fn line(
    principal: &str,
    method: &str,
    namespace: &str,
    target: &str,
    outcome: &str,
    via: &str,
) {
    tracing::info!(
        target: "dueq::audit",
        principal = %principal,
        method = %method,
        namespace = %namespace,
        target = %target,
        outcome = outcome,
        via = via,
        "audit"
    );
}

/// Most refusal lines ([`refused`]) logged in one second; beyond it they are counted
/// and the count is logged with the first line of a later second, so a flood of
/// refused calls (an unauthenticated one above all) cannot fill the disk.
const MAX_REFUSAL_LINES_PER_SECOND: u64 = 100;

/// The refusal lines of the current second, shared by every call of the process.
static REFUSAL_LINES: RefusalLines = RefusalLines {
    second: AtomicI64::new(i64::MIN),
    logged: AtomicU64::new(0),
    suppressed: AtomicU64::new(0),
};

struct RefusalLines {
    second: AtomicI64,
    logged: AtomicU64,
    suppressed: AtomicU64,
}

impl RefusalLines {
    /// Whether a refusal at `now` (epoch seconds) is logged, and how many were not
    /// since the last one reported. Races between calls at a second's turn can let a
    /// line or two more through: the bound is about floods.
    fn admit(&self, now: i64) -> (bool, u64) {
        let second = self.second.load(Ordering::Relaxed);
        if now > second
            && self
                .second
                .compare_exchange(second, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.logged.store(1, Ordering::Relaxed);
            return (true, self.suppressed.swap(0, Ordering::Relaxed));
        }
        if self.logged.fetch_add(1, Ordering::Relaxed) < MAX_REFUSAL_LINES_PER_SECOND {
            return (true, 0);
        }
        self.suppressed.fetch_add(1, Ordering::Relaxed);
        (false, 0)
    }
}

/// The audit line of a refused call of any RPC (audited or not): UNAUTHENTICATED
/// from the auth layer (`principal` None: no principal was found; the namespace is
/// in the message, not read), PERMISSION_DENIED from the role check. Logged only
/// (at most [`MAX_REFUSAL_LINES_PER_SECOND`]): the namespace's audit log in Redis
/// keeps the audited RPCs' records.
pub(crate) fn refused(
    principal: Option<&str>,
    method: &str,
    namespace: &str,
    outcome: &str,
    via: &str,
) {
    let (logged, suppressed) = REFUSAL_LINES.admit(crate::clock::local_ms() / 1000);
    if suppressed > 0 {
        tracing::warn!(
            target: "dueq::audit",
            suppressed,
            "refused calls not logged: more than {MAX_REFUSAL_LINES_PER_SECOND} a second"
        );
    }
    if !logged {
        return;
    }
    line(
        principal.unwrap_or("(unauthenticated)"),
        method,
        namespace,
        "",
        outcome,
        via,
    );
}

/// Where a call came from, by its headers: `console` (the console's in-process
/// client says so) or `grpc`.
pub(crate) fn via(headers: &tonic::codegen::http::HeaderMap) -> &'static str {
    match headers.get(VIA_HEADER).map(|v| v.to_str()) {
        Some(Ok("console")) => "console",
        _ => "grpc",
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicI64, AtomicU64};

    use super::{RefusalLines, MAX_REFUSAL_LINES_PER_SECOND};

    #[test]
    fn refusal_lines_are_bounded_a_second_and_the_rest_counted() {
        let lines = RefusalLines {
            second: AtomicI64::new(i64::MIN),
            logged: AtomicU64::new(0),
            suppressed: AtomicU64::new(0),
        };
        for _ in 0..MAX_REFUSAL_LINES_PER_SECOND {
            assert_eq!(lines.admit(100), (true, 0));
        }
        assert_eq!(lines.admit(100), (false, 0));
        assert_eq!(lines.admit(100), (false, 0));
        // The next second logs again, and reports the two it did not.
        assert_eq!(lines.admit(101), (true, 2));
        assert_eq!(lines.admit(101), (true, 0));
        // A late reading of an earlier second counts in the current one.
        assert_eq!(lines.admit(100), (true, 0));
    }
}
