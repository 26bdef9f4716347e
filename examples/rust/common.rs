//! What the Rust examples share: the command line and the client. The client is
//! the one tonic generates from proto/ when dueq builds (build.rs), `dueq::proto`.

use clap::Parser;
use dueq::proto::queue_service_client::QueueServiceClient;
use tonic::transport::Channel;

/// The largest reply accepted: the server's --max-message-size default (4 MiB).
const MAX_MESSAGE: usize = 4 * 1024 * 1024;

#[derive(Parser, Debug)]
pub struct Common {
    /// The dueq service, host:port.
    #[arg(long, env = "DUEQ_TARGET", default_value = "localhost:50051")]
    pub target: String,
    /// The namespace to work in.
    #[arg(long, env = "DUEQ_NAMESPACE", default_value = "shop")]
    pub namespace: String,
    /// Exit after this many (0: until Ctrl-C).
    #[arg(long, default_value_t = 0)]
    pub count: u64,
}

pub type Client = QueueServiceClient<Channel>;

pub async fn connect(target: &str) -> Result<Client, tonic::transport::Error> {
    let url = if target.contains("://") {
        target.to_owned()
    } else {
        format!("http://{target}")
    };
    Ok(QueueServiceClient::connect(url)
        .await?
        .max_decoding_message_size(MAX_MESSAGE))
}

/// A whole number of seconds as a protobuf Duration.
pub fn seconds(s: i64) -> Option<prost_types::Duration> {
    Some(prost_types::Duration {
        seconds: s,
        nanos: 0,
    })
}
