//! The edges: bad input, Redis faults (down, full, hung, restarted), transport limits,
//! the per-principal CPU gate, reply budgets and running out of file descriptors.

mod bad_input;
mod cpu_gate;
pub(crate) mod faults;
mod fd_exhaustion;
mod reply_budgets;
mod transport_limits;
