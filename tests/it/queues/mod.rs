//! Queues and namespaces: inspection, pause/resume, bulk retries and purges, and the
//! per-namespace quotas.

mod ops;
mod quotas;
mod totals;
mod waiting;
