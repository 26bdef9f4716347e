//! `lua/cancel_jobs.lua`: one bounded batch of CancelJobs (issue 33; `super::bulk`).

super::bulk::bulk_op!(CancelJobs: "cancel_jobs");
