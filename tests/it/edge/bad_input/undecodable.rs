//! Bytes that are not a message of the request's type (issue 29 item 9): INVALID_ARGUMENT
//! saying the request could not be decoded, never INTERNAL, for a unary call, a
//! server stream and the Work stream (its first message and a later one).

use prost::Message as _;
use tokio_stream::StreamExt as _;
use tonic::{
    codec::{Codec, EncodeBuf, Encoder},
    codegen::http::uri::PathAndQuery,
};

use super::*;

/// Sends raw bytes as each message; decodes the answers as `U`.
struct RawCodec<U>(std::marker::PhantomData<U>);

impl<U> Default for RawCodec<U> {
    fn default() -> Self {
        RawCodec(std::marker::PhantomData)
    }
}

struct RawEncoder;

impl Encoder for RawEncoder {
    type Item = Vec<u8>;
    type Error = Status;

    fn encode(&mut self, item: Vec<u8>, buf: &mut EncodeBuf<'_>) -> Result<(), Status> {
        use bytes::BufMut as _;
        buf.put_slice(&item);
        Ok(())
    }
}

impl<U: prost::Message + Default + Send + 'static> Codec for RawCodec<U> {
    type Encode = Vec<u8>;
    type Decode = U;
    type Encoder = RawEncoder;
    type Decoder = tonic_prost::ProstDecoder<U>;

    fn encoder(&mut self) -> RawEncoder {
        RawEncoder
    }

    fn decoder(&mut self) -> Self::Decoder {
        tonic_prost::ProstDecoder::default()
    }
}

/// Not protobuf of any message: a length-delimited field 1 cut short, a key with
/// wire type 7 (there is none), a varint that never ends.
const GARBAGE: [&[u8]; 3] = [&[0x0a, 0x05, b'a'], &[0x0f, 0x01], &[0x08, 0xff, 0xff]];

fn assert_undecodable(what: &str, status: &Status, method: &str) {
    assert_eq!(status.code(), Code::InvalidArgument, "{what}: {status:?}");
    let says = format!("could not be decoded as {method}'s request message");
    assert!(
        status.message().starts_with("request: "),
        "{what}: {status:?}"
    );
    assert!(status.message().contains(&says), "{what}: {status:?}");
}

#[tokio::test]
async fn undecodable_bytes_are_invalid_argument_for_unary_and_server_streams() {
    let redis = Redis::start().await;
    let service = start(&redis).await;
    let mut conn = redis.conn().await;
    let before = snapshot(&mut conn).await;
    let mut grpc = super::raw_grpc(&service).await;
    for bytes in GARBAGE {
        let what = format!("Enqueue of {bytes:?}");
        let path = PathAndQuery::from_static("/dueq.v1.QueueService/Enqueue");
        let codec = RawCodec::<proto::EnqueueResponse>::default();
        grpc.ready().await.expect("ready");
        let status = grpc
            .unary(tonic::Request::new(bytes.to_vec()), path, codec)
            .await
            .expect_err(&what);
        assert_undecodable(&what, &status, "Enqueue");

        let what = format!("WatchJob of {bytes:?}");
        let path = PathAndQuery::from_static("/dueq.v1.QueueService/WatchJob");
        let codec = RawCodec::<proto::WatchJobResponse>::default();
        grpc.ready().await.expect("ready");
        let status = grpc
            .server_streaming(tonic::Request::new(bytes.to_vec()), path, codec)
            .await
            .expect_err(&what);
        assert_undecodable(&what, &status, "WatchJob");
    }
    let changed = unchanged("undecodable", &mut conn, &before).await;
    assert_no_failures("undecodable", changed.into_iter().collect());
}

#[tokio::test]
async fn an_undecodable_work_message_ends_the_stream_with_invalid_argument() {
    let redis = Redis::start().await;
    let service = start(&redis).await;
    let mut grpc = super::raw_grpc(&service).await;
    let path = || PathAndQuery::from_static("/dueq.v1.QueueService/Work");
    let start = proto::WorkRequest {
        request: Some(proto::work_request::Request::Start(proto::WorkStart {
            namespace: "ns".into(),
            queues: vec!["q".into()],
            ..Default::default()
        })),
    }
    .encode_to_vec();
    for bytes in GARBAGE {
        // As the first message: refused before the stream opens, naming `start`.
        let codec = RawCodec::<proto::WorkResponse>::default();
        grpc.ready().await.expect("ready");
        let requests = tokio_stream::iter([bytes.to_vec()]);
        let status = grpc
            .streaming(tonic::Request::new(requests), path(), codec)
            .await
            .expect_err("an undecodable start");
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        assert!(
            status.message().starts_with("start: could not be decoded"),
            "{status:?}"
        );

        // After the start: the stream ends with INVALID_ARGUMENT, not quietly.
        let codec = RawCodec::<proto::WorkResponse>::default();
        grpc.ready().await.expect("ready");
        let (send, open) = tokio::sync::mpsc::channel::<Vec<u8>>(2);
        send.send(start.clone()).await.expect("start");
        let requests = tokio_stream::wrappers::ReceiverStream::new(open);
        let mut stream = grpc
            .streaming(tonic::Request::new(requests), path(), codec)
            .await
            .expect("the stream opens")
            .into_inner();
        send.send(bytes.to_vec()).await.expect("garbage");
        let ended = within_patience("the stream's end", stream.next()).await;
        match ended {
            Some(Err(status)) => assert_undecodable("a later Work message", &status, "Work"),
            other => panic!("expected INVALID_ARGUMENT, got {other:?}"),
        }
    }
}
