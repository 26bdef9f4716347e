//! Who gets in and what is encrypted: authentication and authorisation, gRPC over
//! TLS (and mTLS) to clients, and TLS to Redis.

mod auth;
mod redis_tls;
mod tls;
