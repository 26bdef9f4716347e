//! The edges: bad input, Redis faults (down, full, hung, restarted), transport limits,
//! reply budgets and running out of file descriptors.

mod bad_input;
pub(crate) mod faults;
mod fd_exhaustion;
mod reply_budgets;
mod transport_limits;
