//! The web console (issue 33): pages a person on call opens in a browser to see every
//! queue, job and schedule of the namespaces they may read, and to act on them.
//!
//! Served by the dueq binary on `--console-listen`, over HTTP/1.1 (TLS with the gRPC
//! listener's certificates), as HTML rendered here (maud) with a small script and a
//! stylesheet compiled in (`assets`). Every read and every action is a call of
//! dueq's own RPCs, in process, through the same tower layers as a gRPC call
//! (`grpc`): the same authorization, validation, limits, metrics and audit lines,
//! made as the signed-in principal. What the console adds is sessions (`session`),
//! CSRF checks (`csrf`), and one sampler per namespace whose snapshots every open page
//! shares (`sampler`), so a viewer costs Redis nothing by being there.

mod assets;
mod bulk;
mod csrf;
mod grpc;
mod html;
mod http;
mod pages;
mod sampler;
mod session;
mod viewer;

use std::sync::Arc;

pub(crate) use grpc::Grpc;
pub(crate) use http::{bind, serve};

use tokio_util::sync::CancellationToken;

use crate::auth::AuthFile;

/// What every console request reaches: the in-process gRPC client, the sessions, the
/// principals (None: no auth file, the console is open) and the samplers.
pub(crate) struct Console {
    grpc: Grpc,
    sessions: session::Sessions,
    principals: Option<Arc<AuthFile>>,
    samplers: sampler::Samplers,
    bulks: bulk::Bulks,
    /// Served over TLS: cookies are marked Secure.
    secure: bool,
    /// The service is stopping: live streams end.
    shutdown: CancellationToken,
}

impl Console {
    pub(crate) fn new(
        grpc: Grpc,
        principals: Option<Arc<AuthFile>>,
        secure: bool,
        shutdown: CancellationToken,
    ) -> Arc<Console> {
        Arc::new(Console {
            samplers: sampler::Samplers::new(grpc.clone(), shutdown.clone()),
            shutdown,
            grpc,
            sessions: session::Sessions::default(),
            bulks: bulk::Bulks::default(),
            principals,
            secure,
        })
    }
}
