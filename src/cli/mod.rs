//! The subcommands of the `dueq` binary beside `serve`. They belong to the binary,
//! not to the library: they start processes, print to the terminal and choose exit
//! codes, and use the library only through its public door (`config`, `server`).

pub(crate) mod certs;
pub(crate) mod ctl;
pub(crate) mod dev;
pub(crate) mod health;
