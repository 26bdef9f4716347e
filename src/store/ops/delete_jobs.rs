//! `lua/delete_jobs.lua`: one bounded batch of DeleteJobs (issue 33; `super::bulk`).

super::bulk::bulk_op!(DeleteJobs: "delete_jobs");
