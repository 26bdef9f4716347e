//! What tonic answers, before any handler runs, when the bytes of a request are not
//! a message: INTERNAL, by gRPC's convention for a peer's malformed protobuf. For a
//! server that is the caller's mistake, so dueq answers INVALID_ARGUMENT saying the
//! message could not be decoded (`crate::layers::undecodable` for unary and
//! server-streaming calls, whose request tonic decodes first; the Work stream's
//! handler for the messages it reads).

use tonic::{Code, Status};

/// What tonic and prost say when a request's bytes cannot be decoded: protobuf that
/// does not parse, a frame cut short, a unary call without its message.
const UNDECODABLE: [&str; 3] = [
    "failed to decode Protobuf message",
    "Unexpected EOF decoding stream",
    "Missing request message",
];

/// The INVALID_ARGUMENT status to answer instead of tonic's `code` and `message`,
/// when they say a request of `method` could not be decoded; None for any other
/// status.
pub(crate) fn undecodable(method: &str, code: Code, message: &str) -> Option<Status> {
    let decoding = code == Code::Internal && UNDECODABLE.iter().any(|m| message.starts_with(m));
    decoding.then(|| {
        Status::invalid_argument(format!(
            "request: could not be decoded as {method}'s request message ({message}); \
             encode it from dueq's .proto files"
        ))
    })
}

#[cfg(test)]
mod tests {
    use tonic::Code;

    use super::undecodable;

    #[test]
    fn only_tonics_decoding_failures_are_the_callers() {
        for message in [
            "failed to decode Protobuf message: invalid wire type value: 7",
            "Unexpected EOF decoding stream.",
            "Missing request message.",
        ] {
            let status = undecodable("Enqueue", Code::Internal, message).expect(message);
            assert_eq!(status.code(), Code::InvalidArgument);
            assert!(status
                .message()
                .starts_with("request: could not be decoded as Enqueue's request message"));
            assert!(status.message().contains(message));
        }
        assert!(undecodable("Enqueue", Code::Internal, "redis: connection refused").is_none());
        let other_code = "failed to decode Protobuf message: x";
        assert!(undecodable("Enqueue", Code::Unavailable, other_code).is_none());
    }
}
