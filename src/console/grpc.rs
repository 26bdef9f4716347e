//! The console's gRPC client: dueq's services behind dueq's layers, called in
//! process. A call carries the viewer as an [`InProcess`] caller (the auth layer
//! takes it instead of a credential) and `x-dueq-via: console` for the audit.

use std::convert::Infallible;

use tonic::{body::Body, codegen::http, metadata::MetadataValue};
use tower::{util::BoxCloneSyncService, ServiceExt};
use tower_service::Service;

use crate::{
    auth::{Caller, InProcess},
    proto::queue_service_client::QueueServiceClient,
};

type Inner = BoxCloneSyncService<http::Request<Body>, http::Response<Body>, Infallible>;

/// A client of the layered services (cheap to clone).
#[derive(Clone)]
pub(crate) struct Grpc {
    inner: Inner,
    max_message: usize,
}

impl Grpc {
    pub(crate) fn new<S, B>(service: S, max_message: usize) -> Grpc
    where
        S: Service<http::Request<Body>, Response = http::Response<B>, Error = Infallible>
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: Send + 'static,
        B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let service = service.map_response(|response: http::Response<B>| response.map(Body::new));
        Grpc {
            inner: BoxCloneSyncService::new(service),
            max_message,
        }
    }

    pub(crate) fn queue(&self) -> QueueServiceClient<Inner> {
        QueueServiceClient::new(self.inner.clone())
            .max_decoding_message_size(self.max_message)
            .max_encoding_message_size(self.max_message)
    }
}

/// `message` as `caller` sends it from the console.
pub(crate) fn request<T>(caller: &Caller, message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.extensions_mut().insert(InProcess(caller.clone()));
    request
        .metadata_mut()
        .insert("x-dueq-via", MetadataValue::from_static("console"));
    request
}
