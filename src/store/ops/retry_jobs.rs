//! `lua/retry_jobs.lua`: one bounded batch of RetryJobs (issue 33; `super::bulk`).

super::bulk::bulk_op!(RetryJobs: "retry_jobs");
