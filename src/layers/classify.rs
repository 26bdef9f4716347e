//! The outermost concern: looks the request's path up in the RPC table once; the
//! other concerns take the line it finds (the request's extensions carried it until
//! issue 35, which no handler read: an allocation per call). A path the server does
//! not serve gets none: the concerns treat it as an unknown unary call and tonic
//! answers UNIMPLEMENTED.

use tonic::codegen::http;

use crate::rpc::{Catalogue, Line};

#[derive(Debug)]
pub(super) struct Classify {
    catalogue: Catalogue,
}

impl Classify {
    pub(super) fn new(catalogue: Catalogue) -> Self {
        Classify { catalogue }
    }

    /// The request's line of the table.
    pub(super) fn classify<B>(&self, request: &http::Request<B>) -> Option<Line> {
        self.catalogue.find(request.uri().path())
    }
}

#[cfg(test)]
mod tests {
    use tonic::codegen::http;

    use super::Classify;
    use crate::rpc::{self, Catalogue, Rpc};

    fn classified(path: &str) -> Option<&'static Rpc> {
        let classify = Classify::new(Catalogue::new(crate::api::rpcs()));
        let request = http::Request::builder()
            .uri(path)
            .body(())
            .expect("request");
        classify.classify(&request).map(|line| line.rpc)
    }

    #[test]
    fn a_served_path_carries_its_line_and_another_none() {
        let enqueue = classified("/dueq.v1.QueueService/Enqueue");
        assert_eq!(enqueue.map(|rpc| rpc.method), Some("Enqueue"));
        let watch = classified("/grpc.health.v1.Health/Watch");
        assert_eq!(
            watch.map(|rpc| (rpc.access, rpc.kind)),
            Some((rpc::Access::Open, rpc::CallKind::Stream))
        );
        assert!(classified("/dueq.v1.QueueService/NoSuchMethod").is_none());
        assert!(classified("/random/path").is_none());
    }
}
