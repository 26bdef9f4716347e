//! The outermost layer: looks the request's path up in the RPC table once and puts
//! the `&'static Rpc` in its extensions, where every other layer and the handlers
//! read it (`crate::rpc::of`). A path the server does not serve gets none: the
//! layers treat it as an unknown unary call and tonic answers UNIMPLEMENTED.

use std::{
    sync::Arc,
    task::{Context, Poll},
};

use tonic::codegen::http;
use tower_layer::Layer;
use tower_service::Service;

use crate::rpc::Catalogue;

#[derive(Debug, Clone)]
pub(crate) struct ClassifyLayer {
    catalogue: Arc<Catalogue>,
}

impl ClassifyLayer {
    pub(crate) fn new(catalogue: Catalogue) -> Self {
        ClassifyLayer {
            catalogue: Arc::new(catalogue),
        }
    }
}

impl<S> Layer<S> for ClassifyLayer {
    type Service = Classify<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Classify {
            inner,
            catalogue: self.catalogue.clone(),
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Classify<S> {
    inner: S,
    catalogue: Arc<Catalogue>,
}

impl<S, B> Service<http::Request<B>> for Classify<S>
where
    S: Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        if let Some(rpc) = self.catalogue.find(request.uri().path()) {
            request.extensions_mut().insert(rpc);
        }
        self.inner.call(request)
    }
}

#[cfg(test)]
mod tests {
    use std::{
        convert::Infallible,
        future::{ready, Ready},
        task::{Context, Poll},
    };

    use tonic::codegen::http;
    use tower_layer::Layer;
    use tower_service::Service;

    use super::ClassifyLayer;
    use crate::rpc::{self, Catalogue, Rpc};

    /// Answers with the descriptor the classify layer left in the request, if any.
    struct Echo;

    impl Service<http::Request<()>> for Echo {
        type Response = Option<&'static Rpc>;
        type Error = Infallible;
        type Future = Ready<Result<Self::Response, Infallible>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, request: http::Request<()>) -> Self::Future {
            ready(Ok(rpc::of(request.extensions())))
        }
    }

    async fn classified(path: &str) -> Option<&'static Rpc> {
        let layer = ClassifyLayer::new(Catalogue::new(crate::api::rpcs()));
        let request = http::Request::builder()
            .uri(path)
            .body(())
            .expect("request");
        let Ok(found) = layer.layer(Echo).call(request).await;
        found
    }

    #[tokio::test]
    async fn a_served_path_carries_its_line_and_another_none() {
        let enqueue = classified("/dueq.v1.QueueService/Enqueue").await;
        assert_eq!(enqueue.map(|rpc| rpc.method), Some("Enqueue"));
        let watch = classified("/grpc.health.v1.Health/Watch").await;
        assert_eq!(
            watch.map(|rpc| (rpc.access, rpc.kind)),
            Some((rpc::Access::Open, rpc::CallKind::Stream))
        );
        assert!(classified("/dueq.v1.QueueService/NoSuchMethod")
            .await
            .is_none());
        assert!(classified("/random/path").await.is_none());
    }
}
