//! Cross-cutting concerns around every gRPC service, one module per concern (in the
//! spirit of linkerd2-proxy), outermost first: the classification of a request by
//! the RPC table (every other concern reads what it found), the per-RPC tracing
//! span, the RPC metrics, the caller's authentication, admission (the request
//! body's deadline, then load shedding beyond the in-flight caps: after
//! authentication, so no caller without a credential holds a tenant's slot), the
//! unary timeout, and the wording of an over-sized request and of an undecodable
//! one.
//!
//! The concerns run as one tower service, [`Layered`], whose call is one future
//! (one allocation) that steps through them in that order. Each concern used to be
//! a tower layer of its own that boxed a future and cloned the services inside it
//! per call: issue 35's profile of an empty RPC found that stack's boxes, clones
//! and per-call metric lookups a large part of the service's CPU.

mod auth;
mod classify;
mod message_size;
mod metrics;
mod shed;
mod timeout;
mod trace;
mod undecodable;

use std::{
    convert::Infallible,
    future::Future,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::{Duration, Instant},
};

use tonic::{body::Body, codegen::http};
use tower_layer::Layer;
use tower_service::Service;
use tracing::Instrument;

pub(crate) use auth::Authenticate;
pub(crate) use shed::Caps;

use crate::{
    auth::AuthFile,
    connections::Owners,
    metrics::Metrics,
    rpc::{Catalogue, Rpc},
};

/// What the concerns pass on.
type Request = http::Request<Body>;
/// What the concerns answer with: the services' response, or their own.
type Response = http::Response<Body>;

/// The concerns' settings, as the server's flags give them.
pub(crate) struct Settings {
    pub(crate) metrics: Arc<Metrics>,
    /// None: no `--auth-file`.
    pub(crate) principals: Option<Arc<AuthFile>>,
    /// With an auth file: who each connection is charged to.
    pub(crate) owners: Option<Arc<Owners>>,
    pub(crate) caps: Caps,
    /// `--request-timeout`.
    pub(crate) request_timeout: Duration,
}

/// Every concern, configured once and shared by every connection's service.
#[derive(Debug)]
struct Concerns {
    classify: classify::Classify,
    meters: metrics::Meters,
    auth: Authenticate,
    shed: shed::Shed,
    timeout: timeout::Timeout,
    size: message_size::MessageSize,
}

/// The layer of all the concerns: one value serves the gRPC listener and the
/// console's in-process calls, which so share the caps, the metrics and the checks
/// of every call.
#[derive(Debug, Clone)]
pub(crate) struct Layers {
    concerns: Arc<Concerns>,
}

impl Layers {
    pub(crate) fn new(settings: Settings) -> Self {
        let catalogue = Catalogue::new(crate::api::rpcs());
        let meters = metrics::Meters::new(&settings.metrics, &catalogue);
        Layers {
            concerns: Arc::new(Concerns {
                classify: classify::Classify::new(catalogue),
                meters,
                auth: Authenticate {
                    principals: settings.principals.clone(),
                },
                shed: shed::Shed::new(settings.caps, settings.principals, settings.owners),
                timeout: timeout::Timeout {
                    timeout: settings.request_timeout,
                },
                size: message_size::MessageSize {
                    limit: settings.caps.max_message,
                },
            }),
        }
    }
}

impl<S> Layer<S> for Layers {
    type Service = Layered<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Layered {
            inner,
            concerns: self.concerns.clone(),
        }
    }
}

/// Every gRPC service behind the tower layers, as one value: what the gRPC listener
/// serves (src/server.rs) and what the console calls in process. One concrete type,
/// so the services and the layers are compiled once for both (two paths to them made
/// two copies of every handler in the binary); its calls are not boxed again (issue
/// 35). Named here, beside the layers, so the console need not import the server.
pub(crate) type App = Layered<tonic::service::Routes>;

/// The services behind the concerns.
#[derive(Debug, Clone)]
pub(crate) struct Layered<S> {
    inner: S,
    concerns: Arc<Concerns>,
}

/// The future of one call through every concern: the only allocation the stack
/// makes for it (beyond what a concern needs for itself, such as the metered body).
pub(crate) type LayeredFuture = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

impl<S> Service<Request> for Layered<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = LayeredFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        // The service polled ready serves this call; the clone waits for the next.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        let concerns = self.concerns.clone();
        Box::pin(async move { Ok(concerns.serve(inner, request).await) })
    }
}

// The steps below are plain functions that return their future: an `async fn`
// keeps its arguments (the request among them) in its future beside what it
// awaits, and the request would be held as many times as the steps nest.
impl Concerns {
    /// Classifies the request, then runs the rest in its span.
    fn serve<S>(&self, inner: S, request: Request) -> impl Future<Output = Response> + Send + '_
    where
        S: Service<Request, Response = Response, Error = Infallible> + Send + 'static,
        S::Future: Send + 'static,
    {
        let line = self.classify.classify(&request);
        let rpc = line.map(|line| line.rpc);
        let span = trace::span(rpc, &request);
        let started = Instant::now();
        let (record, admitted) = span.in_scope(|| {
            let record = line.and_then(|line| self.meters.start(line.index, started));
            (record, self.admitted(inner, request, rpc))
        });
        async move {
            let response = metrics::watch(record, admitted.await);
            trace::finished(started, &response);
            response
        }
        .instrument(span)
    }

    /// Authentication, then admission; the call holds its slot until the services
    /// have answered.
    fn admitted<S>(
        &self,
        inner: S,
        mut request: Request,
        rpc: Option<&'static Rpc>,
    ) -> impl Future<Output = Response> + Send + '_
    where
        S: Service<Request, Response = Response, Error = Infallible> + Send + 'static,
        S::Future: Send + 'static,
    {
        let refused = self.auth.refusal(rpc, &mut request);
        let (parts, body) = request.into_parts();
        async move {
            if let Some(refused) = refused {
                return refused;
            }
            let (body, slot) = match self.shed.admit(rpc, &parts.extensions, body).await {
                Ok(admitted) => admitted,
                Err(refused) => return *refused,
            };
            let response = self
                .answered(inner, http::Request::from_parts(parts, body), rpc)
                .await;
            // Held until the handler has answered (a stream's body may outlive it;
            // the stream's own limits bound that).
            drop(slot);
            response
        }
    }

    /// The services' answer within the unary timeout, in dueq's wording.
    fn answered<S>(
        &self,
        mut inner: S,
        request: Request,
        rpc: Option<&'static Rpc>,
    ) -> impl Future<Output = Response> + Send + '_
    where
        S: Service<Request, Response = Response, Error = Infallible> + Send + 'static,
        S::Future: Send + 'static,
    {
        let long = rpc.is_some_and(|rpc| rpc.kind.is_long());
        let call = inner.call(request);
        let size = self.size;
        let worded = async move {
            let mut response = match call.await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            undecodable::reword(rpc, &mut response);
            size.reword(&mut response);
            response
        };
        self.timeout.within(long, worded)
    }
}

#[cfg(test)]
mod tests;
