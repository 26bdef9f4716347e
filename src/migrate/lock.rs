//! Migrate's lock: a lease in Redis that keeps two Migrates off one namespace,
//! renewed as batches go by (lua/migrate_lock.lua).

use std::time::Duration;

use tokio::time::Instant;

use crate::{
    error::Error,
    store::{
        ops::migrate_lock::{LockOp, LockReply, MigrateLock},
        Store,
    },
};

/// The Migrate lock while it is held.
pub(crate) struct Lease<'a> {
    store: &'a Store,
    namespace: String,
    pub(crate) token: String,
    ttl: Duration,
    renewed: Instant,
    dry_run: bool,
}

fn ttl_ms(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
}

impl<'a> Lease<'a> {
    /// Takes the namespace's lock (a dry run writes nothing, so takes none).
    pub(crate) async fn acquire(
        store: &'a Store,
        namespace: &str,
        ttl: Duration,
        dry_run: bool,
    ) -> Result<Lease<'a>, Error> {
        let token = uuid::Uuid::new_v4().to_string();
        if !dry_run {
            let acquire = MigrateLock {
                op: LockOp::Acquire,
                token: &token,
                ttl_ms: ttl_ms(ttl),
            };
            match store.run(namespace, &acquire).await? {
                LockReply::Ok => {}
                LockReply::Held { ttl_ms } => {
                    return Err(Error::MigrateBusy {
                        namespace: namespace.to_owned(),
                        ttl_ms,
                    })
                }
                LockReply::Lost => return Err(Error::MigrateLockLost(namespace.to_owned())),
            }
        }
        Ok(Lease {
            store,
            namespace: namespace.to_owned(),
            token,
            ttl,
            renewed: Instant::now(),
            dry_run,
        })
    }

    /// The error for a batch that found the lock gone.
    pub(crate) fn lost(&self) -> Error {
        Error::MigrateLockLost(self.namespace.clone())
    }

    /// Renews the lock when a third of its ttl has gone by (one extra call then).
    pub(crate) async fn keep(&mut self) -> Result<(), Error> {
        if self.dry_run || self.renewed.elapsed() < self.ttl / 3 {
            return Ok(());
        }
        let renew = MigrateLock {
            op: LockOp::Renew,
            token: &self.token,
            ttl_ms: ttl_ms(self.ttl),
        };
        match self.store.run(&self.namespace, &renew).await? {
            LockReply::Ok => {
                self.renewed = Instant::now();
                Ok(())
            }
            _ => Err(self.lost()),
        }
    }

    pub(crate) async fn release(self) {
        if self.dry_run {
            return;
        }
        let release = MigrateLock {
            op: LockOp::Release,
            token: &self.token,
            ttl_ms: 0,
        };
        if let Err(error) = self.store.run(&self.namespace, &release).await {
            // The ttl frees it anyway.
            tracing::warn!(namespace = %self.namespace, %error, "could not release the Migrate lock");
        }
    }
}
