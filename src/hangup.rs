//! SIGHUP re-reads `--auth-file` and the TLS files (`--tls-cert`, `--tls-key`,
//! `--tls-client-ca`), whichever the service was started with, in every mode: a
//! plaintext service without an auth file logs that it has nothing to reload and goes
//! on serving (SIGHUP's default action, ending the process, is never left in force).
//! Each reload is whole or nothing: a file that is missing or has a mistake is
//! logged at ERROR with the reason and the one in force stays.

use std::sync::Arc;

use tokio::signal::unix::{signal, SignalKind};
use tokio_util::sync::CancellationToken;

use crate::{auth::AuthFile, tls::Tls};

/// What a SIGHUP reloads.
pub(crate) struct Reloadable {
    pub(crate) auth: Option<Arc<AuthFile>>,
    pub(crate) tls: Option<Arc<Tls>>,
}

impl Reloadable {
    /// Reloads on every SIGHUP until `cancel`. Call it before serving: from then on
    /// SIGHUP no longer ends the process.
    pub(crate) fn on_sighup(self, cancel: CancellationToken) {
        let mut hangups = match signal(SignalKind::hangup()) {
            Ok(hangups) => hangups,
            Err(error) => {
                tracing::error!(%error, "cannot listen for SIGHUP; nothing will reload");
                return;
            }
        };
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    received = hangups.recv() => match received {
                        Some(()) => self.reload(),
                        None => return,
                    },
                }
            }
        });
    }

    fn reload(&self) {
        if let Some(auth) = &self.auth {
            let file = auth.path().display();
            match auth.reload() {
                Ok(principals) => tracing::info!(%file, principals, "auth file reloaded"),
                Err(error) => tracing::error!(
                    %error,
                    "auth file reload failed; still serving the principals loaded before"
                ),
            }
        }
        if let Some(tls) = &self.tls {
            tls.reload();
        }
        if self.auth.is_none() && self.tls.is_none() {
            tracing::info!("SIGHUP: nothing to reload (no --auth-file, no --tls-cert)");
        }
    }
}
