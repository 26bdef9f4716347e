//! Cross-cutting concerns, each a tower layer around every gRPC service (one concern
//! per layer, in the spirit of linkerd2-proxy): the classification of a request by
//! the RPC table (outermost: every other layer reads what it found), the per-RPC
//! tracing span, the RPC metrics, the caller's authentication, admission (the
//! request body's deadline, then load shedding beyond the in-flight caps: after
//! authentication, so no caller without a credential holds a tenant's slot), the
//! unary timeout, and the wording of an over-sized request and of an undecodable
//! one.

mod auth;
mod classify;
mod message_size;
mod metrics;
mod shed;
mod timeout;
mod trace;
mod undecodable;

use std::{
    future::Future,
    pin::Pin,
    task::{Context, Poll},
};

use tonic::codegen::http;
use tower_layer::Layer;
use tower_service::Service;

pub(crate) use auth::Authenticate;
pub(crate) use classify::ClassifyLayer;
pub(crate) use message_size::MessageSize;
pub(crate) use metrics::MetricsLayer;
pub(crate) use shed::{Caps, ShedLayer};
pub(crate) use timeout::Timeout;
pub(crate) use trace::TraceLayer;
pub(crate) use undecodable::Undecodable;

/// What a layer's service answers with: the inner service's response, or its own.
pub(crate) type Answer<R, E> = Pin<Box<dyn Future<Output = Result<http::Response<R>, E>> + Send>>;

/// A concern that looks at each request and either passes it on to the inner service
/// (perhaps watching its answer) or answers it itself (a status, in a trailers-only
/// response). Its layer is [`Around`]; the tower plumbing is written once, here.
pub(crate) trait Concern: Clone {
    fn call<S, B, R>(&self, inner: &mut S, request: http::Request<B>) -> Answer<R, S::Error>
    where
        S: Service<http::Request<B>, Response = http::Response<R>> + Send,
        S::Future: Send + 'static,
        R: Default + Send + 'static;
}

/// The layer of a [`Concern`].
#[derive(Debug, Clone)]
pub(crate) struct Around<C>(pub(crate) C);

impl<S, C: Clone> Layer<S> for Around<C> {
    type Service = Wrapped<S, C>;

    fn layer(&self, inner: S) -> Self::Service {
        Wrapped {
            inner,
            concern: self.0.clone(),
        }
    }
}

/// A service wrapped in a [`Concern`].
#[derive(Debug, Clone)]
pub(crate) struct Wrapped<S, C> {
    inner: S,
    concern: C,
}

impl<S, C, B, R> Service<http::Request<B>> for Wrapped<S, C>
where
    C: Concern,
    S: Service<http::Request<B>, Response = http::Response<R>> + Send,
    S::Future: Send + 'static,
    R: Default + Send + 'static,
{
    type Response = http::Response<R>;
    type Error = S::Error;
    type Future = Answer<R, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        self.concern.call(&mut self.inner, request)
    }
}
