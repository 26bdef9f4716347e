//! Giving back what a claim handed out that `--redis-wait-replicas` could not
//! confirm, or whose reply was lost (issue 29 item 11), until it is given back.
//!
//! The give-back is tried at once, before the claim's call answers. When it fails
//! UNAVAILABLE too (the master just died and no replica has taken over yet, or its
//! connection dropped), it is tried again in the background, after a pause that
//! doubles from [`FIRST_PAUSE`] to [`LONGEST_PAUSE`], until it works, fails in
//! another way, or the work it gives back would no longer be held by the claim (its
//! lease ran out, or its receipt expired): so a failover of a few seconds does not
//! spend the attempts of claims no worker saw. At most [`MOST_PENDING`] give-backs
//! wait to be tried again per replica; one more is logged and left to its lease, as
//! before.

use std::{future::Future, sync::Arc, time::Duration};

use tokio::{sync::Semaphore, time::Instant};

use crate::{domain::Namespace, store::StoreError};

/// The first pause before a failed give-back is tried again.
const FIRST_PAUSE: Duration = Duration::from_millis(50);
/// The longest pause between two tries.
const LONGEST_PAUSE: Duration = Duration::from_secs(1);
/// Most give-backs waiting to be tried again at once, per replica.
pub(crate) const MOST_PENDING: usize = 1024;
/// How long a claim's receipt is kept (`RECEIPT_MS` in lua/claim_jobs.lua): after
/// that, giving the claim back finds nothing to give.
pub(crate) const RECEIPT: Duration = Duration::from_secs(60);

/// The give-backs this replica is trying again.
pub(crate) struct GiveBacks {
    pending: Arc<Semaphore>,
}

impl Default for GiveBacks {
    fn default() -> Self {
        Self {
            pending: Arc::new(Semaphore::new(MOST_PENDING)),
        }
    }
}

impl GiveBacks {
    /// Runs `give_back` now and, when it fails UNAVAILABLE, again in the background
    /// until it succeeds, fails otherwise, or `until` (when what it gives back is no
    /// longer the claim's to give) has passed. `what` and `namespace` name it in the
    /// logs. Answers whether the first try succeeded.
    pub(crate) async fn give_back<F, Fut>(
        &self,
        namespace: &Namespace,
        what: &'static str,
        until: Instant,
        mut give_back: F,
    ) -> bool
    where
        F: FnMut() -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), StoreError>> + Send,
    {
        let error = match give_back().await {
            Ok(()) => return true,
            Err(error) if error.is_unavailable() => error,
            Err(error) => {
                gave_up(namespace, what, &error);
                return false;
            }
        };
        let Ok(permit) = self.pending.clone().try_acquire_owned() else {
            tracing::warn!(%namespace, %error, "could not give back a {what} whose claim was \
                not confirmed, and {MOST_PENDING} give-backs already wait to be tried again; \
                its lease will run out");
            return false;
        };
        let namespace = namespace.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let mut pause = FIRST_PAUSE;
            let mut error = error;
            while Instant::now() + pause < until {
                pause_for(pause).await;
                match give_back().await {
                    Ok(()) => {
                        tracing::info!(%namespace, "gave back a {what} whose claim was not \
                            confirmed, after Redis answered again");
                        return;
                    }
                    Err(again) if again.is_unavailable() => error = again,
                    Err(other) => return gave_up(&namespace, what, &other),
                }
                pause = (pause * 2).min(LONGEST_PAUSE);
            }
            gave_up(&namespace, what, &error);
        });
        false
    }
}

fn gave_up(namespace: &Namespace, what: &str, error: &StoreError) {
    tracing::warn!(%namespace, %error, "could not give back a {what} whose claim was not \
        confirmed or whose reply was lost; its lease will run out");
}

// The pause of a backoff: it waits out real time for a failover to finish.
#[allow(clippy::disallowed_methods)]
async fn pause_for(pause: Duration) {
    tokio::time::sleep(pause).await;
}

#[cfg(test)]
mod tests {
    /// Pins the receipt's life this module bounds its tries by to the one
    /// lua/claim_jobs.lua keeps a receipt for.
    #[test]
    fn the_receipt_lives_as_long_as_claim_jobs_keeps_it() {
        let script = include_str!("../lua/claim_jobs.lua");
        let ms = super::RECEIPT.as_millis();
        assert!(
            script.contains(&format!("local RECEIPT_MS = {ms}\n")),
            "lua/claim_jobs.lua's RECEIPT_MS is not {ms}"
        );
    }
}
