//! The table of bad UpsertSchedule requests: every field, every way it can be wrong.

use super::*;

pub(super) struct UpsertCase {
    pub(super) name: String,
    pub(super) namespace: String,
    pub(super) schedule: Option<proto::Schedule>,
    pub(super) code: Code,
    pub(super) field: &'static str,
    pub(super) reason: String,
}

fn invalid(
    name: impl Into<String>,
    schedule: proto::Schedule,
    field: &'static str,
    reason: impl Into<String>,
) -> UpsertCase {
    UpsertCase {
        name: name.into(),
        namespace: "ns".into(),
        schedule: Some(schedule),
        code: Code::InvalidArgument,
        field,
        reason: reason.into(),
    }
}

/// Every bad UpsertSchedule. Cases that are not about the id use `id`, so they can be
/// aimed at an existing schedule.
pub(super) fn bad_upserts(id: &str) -> Vec<UpsertCase> {
    let mut cases = vec![
        // timing: cron xor every (the timing module names `cron` for a missing timing)
        invalid(
            "neither cron nor every",
            no_timing(id),
            "schedule.cron",
            "exactly one of cron or every",
        ),
        invalid(
            "empty cron",
            cron(id, "", ""),
            "schedule.cron",
            "exactly one of cron or every",
        ),
        invalid("blank cron", cron(id, "  \t ", ""), "schedule.cron", ""),
        // cron
        invalid(
            "cron minute 61",
            cron(id, "61 * * * *", ""),
            "schedule.cron",
            "cron field 1 (minute) value 61 is out of range 0-59",
        ),
        invalid(
            "cron hour 24",
            cron(id, "0 24 * * *", ""),
            "schedule.cron",
            "cron field 2 (hour) value 24 is out of range 0-23",
        ),
        invalid(
            "cron month 13",
            cron(id, "0 0 1 13 *", ""),
            "schedule.cron",
            "cron field 4 (month) value 13 is out of range 1-12",
        ),
        invalid(
            "cron day of month 32",
            cron(id, "0 0 32 * *", ""),
            "schedule.cron",
            "cron field 3 (day of month) value 32 is out of range 1-31",
        ),
        invalid(
            "cron day of week 8",
            cron(id, "0 0 * * 1-8", ""),
            "schedule.cron",
            "cron field 5 (day of week) value 8 is out of range 0-7",
        ),
        invalid(
            "cron step 0",
            cron(id, "*/0 * * * *", ""),
            "schedule.cron",
            "cron field 1 (minute) step 0 must be at least 1",
        ),
        invalid(
            "cron second 60 (6 fields)",
            cron(id, "60 * * * * *", ""),
            "schedule.cron",
            "cron field 1 (second) value 60 is out of range 0-59",
        ),
        invalid(
            "@every is not cron",
            cron(id, "@every 5m", ""),
            "schedule.cron",
            "is not a cron expression",
        ),
        invalid(
            "cron never matching (31st of Feb and the 30-day months)",
            cron(id, "0 0 31 2,4,6,9,11 *", ""),
            "schedule.cron",
            "never matches",
        ),
        invalid(
            "cron garbage field",
            cron(id, "a b c d e", ""),
            "schedule.cron",
            "cannot parse",
        ),
        invalid(
            "cron with 3 fields",
            cron(id, "* * *", ""),
            "schedule.cron",
            "got 3",
        ),
        invalid(
            "cron with 7 fields (years)",
            cron(id, "0 0 0 1 1 * 2030", ""),
            "schedule.cron",
            "got 7",
        ),
        invalid(
            "cron never matching (Feb 30)",
            cron(id, "0 0 30 2 *", ""),
            "schedule.cron",
            "never matches",
        ),
        invalid(
            "cron never matching (31st of 30-day months)",
            cron(id, "0 0 31 4,6,9,11 *", ""),
            "schedule.cron",
            "never matches",
        ),
        invalid(
            "cron of 200 KB (echoed input)",
            cron(id, &format!("x{} * * * *", "y".repeat(200_000)), ""),
            "schedule.cron",
            "must be at most 1024 bytes",
        ),
        // timezone
        invalid(
            "unknown time zone",
            cron(id, "0 * * * *", "Mars/Olympus"),
            "schedule.timezone",
            "Mars/Olympus",
        ),
        invalid(
            "unknown time zone with every",
            proto::Schedule {
                timezone: "Mars/Olympus".into(),
                ..every(id, 60)
            },
            "schedule.timezone",
            "Mars/Olympus",
        ),
        invalid(
            "time zone in the wrong case",
            cron(id, "0 * * * *", "Europe/berlin"),
            "schedule.timezone",
            "did you mean Europe/Berlin?",
        ),
        invalid(
            "legacy zone EST",
            cron(id, "0 9 * * *", "EST"),
            "schedule.timezone",
            "America/New_York",
        ),
        invalid(
            "legacy zone EST: the fixed-offset form",
            cron(id, "0 9 * * *", "EST"),
            "schedule.timezone",
            "Etc/GMT+5",
        ),
        invalid(
            "legacy zone PST8PDT",
            cron(id, "0 9 * * *", "PST8PDT"),
            "schedule.timezone",
            "America/Los_Angeles",
        ),
        invalid(
            "legacy zone HST",
            cron(id, "0 9 * * *", "HST"),
            "schedule.timezone",
            "Pacific/Honolulu",
        ),
        invalid(
            "legacy zone CET",
            cron(id, "0 9 * * *", "CET"),
            "schedule.timezone",
            "legacy zone",
        ),
        invalid(
            "time zone with every",
            proto::Schedule {
                timezone: "Europe/Berlin".into(),
                ..every(id, 60)
            },
            "schedule.timezone",
            "no effect with every",
        ),
        invalid(
            "time zone of 100 KB (echoed input)",
            cron(id, "0 * * * *", &"Z".repeat(100_000)),
            "schedule.timezone",
            "unknown IANA time zone",
        ),
        // every
        invalid(
            "every 0",
            every(id, 0),
            "schedule.every",
            "must be positive",
        ),
        invalid(
            "every -1s",
            every(id, -1),
            "schedule.every",
            "must not be negative",
        ),
        invalid(
            "every -1ns",
            every_exact(id, 0, -1),
            "schedule.every",
            "must not be negative",
        ),
        invalid(
            "every i64::MIN s",
            every(id, i64::MIN),
            "schedule.every",
            "must not be negative",
        ),
        invalid(
            "every 1ns",
            every_exact(id, 0, 1),
            "schedule.every",
            "at least 1s",
        ),
        invalid(
            "every 500ms",
            every_exact(id, 0, 500_000_000),
            "schedule.every",
            "at least 1s",
        ),
        invalid(
            "every 999ms",
            every_exact(id, 0, 999_000_000),
            "schedule.every",
            "at least 1s",
        ),
        invalid(
            "every nanos 1e9",
            every_exact(id, 1, 1_000_000_000),
            "schedule.every",
            "out of range",
        ),
        invalid(
            "every 367 days",
            every(id, 367 * 86_400),
            "schedule.every",
            "at most 366 days",
        ),
        invalid(
            "every i64::MAX s",
            every(id, i64::MAX),
            "schedule.every",
            "out of range",
        ),
        // start / end
        invalid(
            "end_time before start_time",
            proto::Schedule {
                start_time: Some(ts(2_000_000_000_000)),
                end_time: Some(ts(1_999_999_999_999)),
                ..every(id, 60)
            },
            "schedule.end_time",
            "must be after start_time",
        ),
        invalid(
            "end_time equal to start_time",
            proto::Schedule {
                start_time: Some(ts(2_000_000_000_000)),
                end_time: Some(ts(2_000_000_000_000)),
                ..cron(id, "0 * * * *", "")
            },
            "schedule.end_time",
            "must be after start_time",
        ),
        // timestamps out of range
        invalid(
            "start_time seconds -1e12",
            proto::Schedule {
                start_time: stamp(-1_000_000_000_000, 0),
                ..every(id, 60)
            },
            "schedule.start_time",
            "between 1970-01-01 and 9999-12-31",
        ),
        invalid(
            "start_time before 1970",
            proto::Schedule {
                start_time: stamp(-1, 999_999_999),
                ..every(id, 60)
            },
            "schedule.start_time",
            "between 1970-01-01 and 9999-12-31",
        ),
        invalid(
            "start_time nanos -1",
            proto::Schedule {
                start_time: stamp(1_800_000_000, -1),
                ..every(id, 60)
            },
            "schedule.start_time",
            "nanos",
        ),
        invalid(
            "end_time nanos 1e9",
            proto::Schedule {
                end_time: stamp(1_800_000_000, 1_000_000_000),
                ..every(id, 60)
            },
            "schedule.end_time",
            "nanos",
        ),
        invalid(
            "end_time in year 10000",
            proto::Schedule {
                end_time: stamp(253_402_300_800, 0),
                ..every(id, 60)
            },
            "schedule.end_time",
            "between 1970-01-01 and 9999-12-31",
        ),
        invalid(
            "end_time seconds i64::MAX",
            proto::Schedule {
                end_time: stamp(i64::MAX, 0),
                ..cron(id, "0 * * * *", "")
            },
            "schedule.end_time",
            "between 1970-01-01 and 9999-12-31",
        ),
        // ids
        invalid(
            "id of 257 bytes",
            every(&"i".repeat(257), 60),
            "schedule.id",
            "at most 256 bytes, got 257",
        ),
        invalid(
            "id of 129 two-byte characters (258 bytes)",
            every(&"é".repeat(129), 60),
            "schedule.id",
            "at most 256 bytes, got 258",
        ),
        // other definition fields
        invalid(
            "run_limit above 2^53",
            proto::Schedule {
                run_limit: (1 << 53) + 1,
                ..every(id, 60)
            },
            "schedule.run_limit",
            "at most",
        ),
        invalid(
            "job_name of 257 bytes",
            proto::Schedule {
                job_name: "j".repeat(257),
                ..every(id, 60)
            },
            "schedule.job_name",
            "at most 256 bytes",
        ),
        invalid(
            "65 headers",
            headers((0..65).map(|i| (format!("h{i}"), "v".into())), id),
            "schedule.headers",
            "at most 64",
        ),
        invalid(
            "header with an empty key",
            headers([(String::new(), "v".into())], id),
            "schedule.headers",
            "must not be empty",
        ),
        invalid(
            "header key of 257 bytes",
            headers([("k".repeat(257), "v".into())], id),
            "schedule.headers",
            "at most 256 bytes",
        ),
        invalid(
            "header value of 8193 bytes",
            headers([("k".into(), "v".repeat(8193))], id),
            "schedule.headers",
            "at most 8192 bytes",
        ),
        // missing message
        UpsertCase {
            name: "missing schedule".into(),
            namespace: "ns".into(),
            schedule: None,
            code: Code::InvalidArgument,
            field: "schedule",
            reason: "is required".into(),
        },
        // payload: a size limit, not a malformed value
        UpsertCase {
            name: "payload one byte over max_payload_size".into(),
            namespace: "ns".into(),
            schedule: Some(proto::Schedule {
                payload: vec![7; PAYLOAD_LIMIT + 1],
                ..every(id, 60)
            }),
            code: Code::ResourceExhausted,
            field: "schedule.payload",
            reason: format!(
                "{} bytes exceeds the limit of {PAYLOAD_LIMIT} bytes (--max-payload-size)",
                PAYLOAD_LIMIT + 1
            ),
        },
    ];
    cases.extend(bad_policies(id));
    for (name, namespace, reason) in bad_namespaces() {
        cases.push(UpsertCase {
            namespace,
            ..invalid(name, every(id, 60), "namespace", reason)
        });
    }
    cases
}

fn headers(pairs: impl IntoIterator<Item = (String, String)>, id: &str) -> proto::Schedule {
    proto::Schedule {
        headers: pairs.into_iter().collect(),
        ..every(id, 60)
    }
}

/// Catch-up policies (issue 17): unknown enum values, a window that is not positive,
/// a limit missing with ALL, out of range, or given to another policy.
fn bad_policies(id: &str) -> Vec<UpsertCase> {
    let with = |change: &dyn Fn(&mut proto::Schedule)| {
        let mut s = every(id, 60);
        change(&mut s);
        s
    };
    let all = proto::CatchupPolicy::All as i32;
    vec![
        invalid(
            "unknown catchup_policy",
            with(&|s| s.catchup_policy = 99),
            "schedule.catchup_policy",
            "unknown value 99",
        ),
        invalid(
            "catchup_limit 0 with ALL",
            with(&|s| s.catchup_policy = all),
            "schedule.catchup_limit",
            "must be 1-10000 with CATCHUP_POLICY_ALL",
        ),
        invalid(
            "catchup_limit over 10000",
            with(&|s| {
                s.catchup_policy = all;
                s.catchup_limit = 10_001;
            }),
            "schedule.catchup_limit",
            "must be 1-10000",
        ),
        invalid(
            "catchup_limit with SKIP",
            with(&|s| {
                s.catchup_policy = proto::CatchupPolicy::Skip as i32;
                s.catchup_limit = 5;
            }),
            "schedule.catchup_limit",
            "only read with CATCHUP_POLICY_ALL",
        ),
        invalid(
            "catchup_window zero",
            with(&|s| s.catchup_window = Some(dur(0))),
            "schedule.catchup_window",
            "must be positive",
        ),
        invalid(
            "catchup_window negative",
            with(&|s| {
                s.catchup_window = Some(prost_types::Duration {
                    seconds: -60,
                    nanos: 0,
                })
            }),
            "schedule.catchup_window",
            "must be positive",
        ),
        invalid(
            "offset equal to every",
            with(&|s| s.offset = Some(dur(60_000))),
            "schedule.offset",
            "must be at least 0 and shorter than every",
        ),
        invalid(
            "negative offset",
            with(&|s| {
                s.offset = Some(prost_types::Duration {
                    seconds: -1,
                    nanos: 0,
                })
            }),
            "schedule.offset",
            "must be at least 0 and shorter than every",
        ),
        invalid(
            "offset with cron",
            proto::Schedule {
                offset: Some(dur(1_000)),
                ..cron(id, "0 * * * *", "")
            },
            "schedule.offset",
            "only an every timing takes an offset",
        ),
        invalid(
            "catchup_window under a millisecond",
            with(&|s| {
                s.catchup_window = Some(prost_types::Duration {
                    seconds: 0,
                    nanos: 1,
                })
            }),
            "schedule.catchup_window",
            "must be at least 1ms",
        ),
        invalid(
            "unknown overlap_policy",
            with(&|s| s.overlap_policy = 99),
            "schedule.overlap_policy",
            "unknown value 99",
        ),
        invalid(
            "negative overlap_policy",
            with(&|s| s.overlap_policy = -1),
            "schedule.overlap_policy",
            "unknown value -1",
        ),
        invalid(
            "jitter equal to every",
            with(&|s| s.jitter = Some(dur(60_000))),
            "schedule.jitter",
            "must be shorter than the interval between runs",
        ),
        invalid(
            "negative jitter",
            with(&|s| {
                s.jitter = Some(prost_types::Duration {
                    seconds: -1,
                    nanos: 0,
                })
            }),
            "schedule.jitter",
            "must not be negative",
        ),
        invalid(
            "jitter not shorter than a cron's gap",
            proto::Schedule {
                jitter: Some(dur(3_600_000)),
                ..cron(id, "0 * * * *", "")
            },
            "schedule.jitter",
            "must be shorter than the interval between runs",
        ),
        invalid(
            "max_attempts over 1000",
            with(&|s| s.max_attempts = 1001),
            "schedule.max_attempts",
            "must be at most 1000",
        ),
    ]
}
