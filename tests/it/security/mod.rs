//! Who gets in and what is encrypted: authentication and authorisation, gRPC over
//! TLS (and mTLS) to clients, and TLS to Redis; logs a caller cannot forge.

pub(crate) mod auth;
mod logs;
mod principal_totals;
mod redis_tls;
mod reload;
mod tenants;
mod tls;
