//! Migrate (upgrade of older layouts, repair of a current one, the job phase's
//! layout 1 to 2, import from @boringnode/queue) and GetNamespaceStatus, against a
//! real redis-server and the real service over gRPC.

mod checks;
mod concurrency;
mod fixtures;
mod flow;
mod graph;
mod import;
mod jobs;
mod lost_meta;
mod repair;
mod services;
mod unlisted;
mod upgrade;
