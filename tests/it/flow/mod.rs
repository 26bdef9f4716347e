//! Flow control (issue 32; docs/flow.md): concurrency keys, rate limits, fairness
//! and the RPCs that set and show them, enforced inside the claim.

mod api;
mod fairness;
mod faults;
mod over_admission;
mod rate;
mod semantics;
