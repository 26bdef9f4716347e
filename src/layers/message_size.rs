//! A request larger than `--max-message-size` is answered RESOURCE_EXHAUSTED naming
//! the flag. tonic refuses such a request while decoding it, before any handler runs,
//! with OUT_OF_RANGE and its own wording ("Error, decoded message length too large"),
//! which names neither the limit's flag nor what to do; no handler ever sees the
//! request, so the status is rewritten here, on tonic's trailers-only answer.

use tonic::codegen::http::{self, HeaderValue};

/// What tonic says when a request is over its decoding limit.
const TONIC_TOO_LARGE: &str = "decoded message length too large";

#[derive(Debug, Clone, Copy)]
pub(super) struct MessageSize {
    /// `--max-message-size`, in bytes.
    pub(super) limit: usize,
}

impl MessageSize {
    /// Rewrites tonic's OUT_OF_RANGE for an over-sized request.
    pub(super) fn reword<R>(self, response: &mut http::Response<R>) {
        let headers = response.headers_mut();
        if headers.get("grpc-status").is_none_or(|s| s != "11") {
            return;
        }
        let message = headers
            .get("grpc-message")
            .and_then(|v| v.to_str().ok())
            .map(percent_decode);
        if let Some(message) = message.filter(|m| m.contains(TONIC_TOO_LARGE)) {
            headers.insert("grpc-status", HeaderValue::from_static("8"));
            if let Ok(value) =
                HeaderValue::from_str(&percent_encode(&explain(&message, self.limit)))
            {
                headers.insert("grpc-message", value);
            }
        }
    }
}

/// The status message: the request's size (from tonic's "found N bytes") and the
/// flag that limits it.
fn explain(tonic_message: &str, limit: usize) -> String {
    let found = tonic_message
        .split_once("found ")
        .and_then(|(_, rest)| rest.split(' ').next())
        .and_then(|n| n.parse::<u64>().ok());
    let size = found.map_or_else(|| "the request".to_owned(), |n| format!("{n} bytes"));
    format!(
        "request: {size} exceeds the server's --max-message-size of {limit} bytes; send \
         less per call (smaller payloads, fewer jobs per EnqueueBatch) or raise \
         --max-message-size"
    )
}

/// grpc-message is percent-encoded (gRPC over HTTP/2: bytes outside 0x20-0x7E, and
/// `%`).
pub(super) fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub(super) fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            0x20..=0x7e if b != b'%' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_size_and_the_flag() {
        let tonic = "Error, decoded message length too large: found 5000000 bytes, the limit is: 4194304 bytes";
        assert_eq!(
            explain(&percent_decode(&percent_encode(tonic)), 4194304),
            "request: 5000000 bytes exceeds the server's --max-message-size of 4194304 \
             bytes; send less per call (smaller payloads, fewer jobs per EnqueueBatch) or \
             raise --max-message-size"
        );
        assert_eq!(percent_decode("a%20b%25c%zz"), "a b%c%zz");
    }
}
