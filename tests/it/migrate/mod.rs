//! Migrate (upgrade of older layouts, repair of a current one, import
//! from @boringnode/queue) and GetNamespaceStatus, against a real redis-server and the
//! real service over gRPC.

mod checks;
mod concurrency;
mod fixtures;
mod import;
mod repair;
mod services;
mod upgrade;
