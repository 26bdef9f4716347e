//! Flow control (issue 32): concurrency keys, rate limits and fairness between
//! tenants, enforced inside the claim.

mod fairness;
mod faults;
mod over_admission;
mod rate;
mod semantics;
