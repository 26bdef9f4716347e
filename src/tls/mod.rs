//! gRPC over TLS (`--tls-cert`, `--tls-key`), optionally requiring client
//! certificates (`--tls-client-ca`), with the files re-read on SIGHUP (`crate::hangup`).
//!
//! tonic's own TLS config is fixed when the server starts, so dueq accepts TLS
//! itself: each new connection is handed to a rustls acceptor built from the config
//! in force at that moment, and a reload swaps that config. Connections already open
//! keep the session they negotiated; only new ones see the new certificate.
//!
//! For authorization, every request on a TLS connection carries a `conn::TlsConnectInfo`
//! in its extensions (tonic puts a connection's `Connected::ConnectInfo` there): in a
//! tower layer `http_request.extensions().get::<TlsConnectInfo>()`, in a handler
//! `request.extensions().get::<TlsConnectInfo>()`; [`client_cert_names`] reads the
//! verified client certificate's names from the former.

mod conn;
mod files;

use std::{io, sync::Arc, sync::Mutex, time::Duration};

use tokio::{
    io::{AsyncRead, AsyncWrite},
    sync::mpsc,
    task::JoinSet,
};
use tokio_rustls::{rustls::ServerConfig, TlsAcceptor};
use tokio_stream::{wrappers::ReceiverStream, Stream, StreamExt};
use tonic::transport::server::{Connected, TcpConnectInfo};

pub(crate) use conn::{client_cert_names, remote_addr, TlsConn};
pub(crate) use files::TlsFiles;

use crate::{connections::AwaitsPreface, sync::lock};

/// Longest a client may take to complete its TLS handshake; one that never does
/// (a plaintext client waiting for an answer, a slowloris) is dropped after it. The
/// connection's preface deadline (`--http2-header-timeout`, from the accept) also
/// runs during the handshake, and cuts it first when shorter.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Accepted connections waiting for tonic to take them.
const READY_BACKLOG: usize = 64;

/// The TLS side of the listener: the files and the config loaded from them.
pub(crate) struct Tls {
    files: TlsFiles,
    config: Mutex<Arc<ServerConfig>>,
}

impl Tls {
    /// Loads the files; an error says which file and why, for a startup failure.
    pub(crate) fn load(files: TlsFiles) -> Result<Arc<Tls>, String> {
        let config = files.server_config()?;
        Ok(Arc::new(Tls {
            files,
            config: Mutex::new(Arc::new(config)),
        }))
    }

    /// Re-reads the files. A file that is missing or bad leaves the config in force
    /// (clients keep being served with the old certificate) and is logged as an error.
    pub(crate) fn reload(&self) {
        match self.files.server_config() {
            Ok(config) => {
                *lock(&self.config) = Arc::new(config);
                tracing::info!(cert = %self.files.cert.display(), "TLS certificates reloaded");
            }
            Err(error) => tracing::error!(
                %error,
                "TLS reload failed; still serving the certificates loaded before"
            ),
        }
    }

    /// An acceptor with the certificates in force now (the console's listener).
    pub(crate) fn acceptor(&self) -> TlsAcceptor {
        TlsAcceptor::from(lock(&self.config).clone())
    }

    /// `tcp`'s connections after their TLS handshake. Handshakes run side by side (a
    /// slow one holds up no other); failed ones are logged at debug and dropped.
    /// Accept errors pass through to tonic as before. The accepting task ends when
    /// tonic drops the stream (shutdown), closing the listener.
    pub(crate) fn incoming<S, IO>(
        self: Arc<Self>,
        mut tcp: S,
    ) -> ReceiverStream<io::Result<TlsConn<IO>>>
    where
        S: Stream<Item = io::Result<IO>> + Unpin + Send + 'static,
        IO: Connected<ConnectInfo = TcpConnectInfo>
            + AwaitsPreface
            + AsyncRead
            + AsyncWrite
            + Unpin
            + Send
            + 'static,
    {
        let (tx, rx) = mpsc::channel(READY_BACKLOG);
        tokio::spawn(async move {
            let mut handshakes = JoinSet::new();
            loop {
                let ready = tokio::select! {
                    _ = tx.closed() => return,
                    accepted = tcp.next() => match accepted {
                        None => return,
                        Some(Err(error)) => Err(error),
                        Some(Ok(stream)) => {
                            let acceptor = TlsAcceptor::from(lock(&self.config).clone());
                            handshakes.spawn(handshake(acceptor, stream));
                            continue;
                        }
                    },
                    Some(done) = handshakes.join_next() => match done {
                        Ok(Some(conn)) => Ok(conn),
                        _ => continue,
                    },
                };
                if tx.send(ready).await.is_err() {
                    return;
                }
            }
        });
        ReceiverStream::new(rx)
    }
}

async fn handshake<IO>(acceptor: TlsAcceptor, stream: IO) -> Option<TlsConn<IO>>
where
    IO: Connected<ConnectInfo = TcpConnectInfo> + AsyncRead + AsyncWrite + Unpin,
{
    let peer = stream.connect_info().remote_addr();
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => Some(TlsConn::new(tls)),
        Ok(Err(error)) => {
            tracing::debug!(?peer, %error, "TLS handshake failed");
            None
        }
        Err(_) => {
            tracing::debug!(?peer, "TLS handshake timed out");
            None
        }
    }
}
