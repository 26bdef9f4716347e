//! Flow control (issue 32; docs/flow.md): concurrency keys, rate limits, fairness
//! and the RPCs that set and show them.

mod api;
