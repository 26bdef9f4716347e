//! Which calls hold a slot for long: the long-polls (a claim waits up to `--max-wait`)
//! and the streaming calls (Migrate's progress, health Watch, reflection). They are
//! kept out of the unary calls' concurrency limit and timeout, which a long wait
//! would otherwise fill and trip.

/// How long a call may legitimately last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallKind {
    /// Answers as soon as Redis does.
    Unary,
    /// A long-poll or a stream: may wait up to `--max-wait`, or run for long.
    Long,
}

/// The kind of the call to `path` (`/dueq.v1.QueueService/ClaimJob`).
pub(crate) fn call_kind(path: &str) -> CallKind {
    let method = path.rsplit('/').next().unwrap_or(path);
    match method {
        "ClaimJob" | "ClaimDueSchedule" | "Work" | "Migrate" | "Watch" | "ServerReflectionInfo" => {
            CallKind::Long
        }
        _ => CallKind::Unary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_and_streams_are_long() {
        assert_eq!(call_kind("/dueq.v1.QueueService/ClaimJob"), CallKind::Long);
        assert_eq!(
            call_kind("/dueq.v1.QueueService/ClaimDueSchedule"),
            CallKind::Long
        );
        assert_eq!(call_kind("/dueq.v1.AdminService/Migrate"), CallKind::Long);
        assert_eq!(call_kind("/grpc.health.v1.Health/Watch"), CallKind::Long);
        assert_eq!(call_kind("/dueq.v1.QueueService/Work"), CallKind::Long);
        assert_eq!(call_kind("/dueq.v1.QueueService/Enqueue"), CallKind::Unary);
        assert_eq!(
            call_kind("/dueq.v1.QueueService/TriggerSchedule"),
            CallKind::Unary
        );
        assert_eq!(call_kind("/grpc.health.v1.Health/Check"), CallKind::Unary);
    }
}
