//! The web console (`--console-listen`): its pages, sign-in and cookies, roles,
//! CSRF refusals, actions and the live stream, over real HTTP/1 against the real
//! service and redis-server; and (`browser`, ignored) the same in Chromium.

mod access;
mod actions;
mod audit;
mod browser;
mod bulk;
mod http;
mod ops;
mod pages;

use std::{net::SocketAddr, path::PathBuf};

use sha2::{Digest, Sha256};
use tonic::Request;

use crate::common::*;
pub use http::{Answer, Http};

/// Principals of the console tests (token `t-<name>`): `admin` on every namespace,
/// `reader` a reader on every namespace, `reader-a` a reader of namespace `a`.
pub const PRINCIPALS: &[(&str, &str, &str)] = &[
    ("admin", "admin", "*"),
    ("reader", "reader", "*"),
    ("reader-a", "reader", "a"),
];

/// The auth file of [`PRINCIPALS`] in `dir`.
pub fn write_auth_file(dir: &std::path::Path) -> PathBuf {
    let mut text = String::new();
    for (name, role, pattern) in PRINCIPALS {
        let hash = Sha256::digest(format!("t-{name}").as_bytes());
        let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        text.push_str(&format!(
            "[[principal]]\nname = \"{name}\"\nroles = [\"{role}\"]\nnamespaces = [\"{pattern}\"]\n\
             token_sha256 = \"{hex}\"\n\n"
        ));
    }
    let path = dir.join("auth.toml");
    std::fs::write(&path, text).expect("write auth file");
    path
}

/// A free port on 127.0.0.1 for the console.
pub fn console_addr() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("local addr")
}

/// Redis, the service with its console, and (with an auth file) the tokens.
pub struct Console {
    pub service: Service,
    pub http: Http,
    pub auth: bool,
    _redis: Redis,
    _dir: tempfile::TempDir,
}

impl Console {
    /// The console without an auth file (open, as gRPC is).
    pub async fn open() -> Console {
        Console::start(false).await
    }

    /// The console with the auth file of [`PRINCIPALS`].
    pub async fn with_auth() -> Console {
        Console::start(true).await
    }

    async fn start(auth: bool) -> Console {
        let redis = Redis::start().await;
        let dir = tempfile::tempdir().expect("tempdir");
        let addr = console_addr();
        let mut config = config(&redis.url());
        config.console_listen = Some(addr.to_string());
        if auth {
            config.auth_file = Some(write_auth_file(dir.path()));
        }
        let service = Service::start_with(config).await;
        Console {
            service,
            http: Http::plain(addr),
            auth,
            _redis: redis,
            _dir: dir,
        }
    }

    /// A gRPC request as `admin` (when there is an auth file).
    pub fn req<T>(&self, message: T) -> Request<T> {
        as_principal(message, self.auth.then_some("admin"))
    }

    /// A session cookie (`dueq_session=...`) of `name`, signed in through the form.
    pub async fn sign_in(&self, name: &str) -> String {
        let answer = self
            .http
            .post_form("/login", &format!("token=t-{name}&next=%2F"), None)
            .await;
        assert_eq!(answer.status, 303, "sign-in of {name}: {answer:?}");
        let cookie = answer.header("set-cookie").expect("a session cookie");
        cookie.split(';').next().expect("name=value").to_owned()
    }

    pub async fn enqueue(&self, ns: &str, queue: &str, payload: &str) -> String {
        let mut client = self.service.client().await;
        let message = proto::EnqueueRequest {
            namespace: ns.into(),
            queue: queue.into(),
            name: "work".into(),
            payload: payload.as_bytes().to_vec(),
            ..Default::default()
        };
        client
            .enqueue(self.req(message))
            .await
            .expect("enqueue")
            .into_inner()
            .job_id
    }

    /// Makes one job of `queue` dead (max_attempts 1) with `error`; its id. Its claim
    /// takes the queue's oldest pending job: call it before enqueueing others.
    pub async fn dead_job(&self, ns: &str, queue: &str, payload: &str, error: &str) -> String {
        let mut client = self.service.client().await;
        let message = proto::EnqueueRequest {
            namespace: ns.into(),
            queue: queue.into(),
            name: "work".into(),
            payload: payload.as_bytes().to_vec(),
            max_attempts: Some(1),
            ..Default::default()
        };
        let id = client
            .enqueue(self.req(message))
            .await
            .expect("enqueue")
            .into_inner()
            .job_id;
        let mut claim = claim_req(&[queue], LONG_POLL_MS, None);
        claim.namespace = ns.into();
        let claimed = client
            .claim_job(self.req(claim))
            .await
            .expect("claim")
            .into_inner()
            .jobs
            .pop()
            .expect("a claimed job");
        assert_eq!(claimed.job_id, id);
        let fail = proto::FailJobRequest {
            namespace: ns.into(),
            job_id: id.clone(),
            lease_token: claimed.lease_token,
            error: error.into(),
            ..Default::default()
        };
        client.fail_job(self.req(fail)).await.expect("fail");
        id
    }

    pub async fn queue(&self, ns: &str, queue: &str) -> Option<proto::QueueInfo> {
        let mut client = self.service.client().await;
        let message = proto::ListQueuesRequest {
            namespace: ns.into(),
            page_size: 1000,
            page_token: String::new(),
        };
        client
            .list_queues(self.req(message))
            .await
            .expect("ListQueues")
            .into_inner()
            .queues
            .into_iter()
            .find(|q| q.queue == queue)
    }

    pub async fn job(&self, ns: &str, id: &str) -> Option<proto::Job> {
        let mut client = self.service.client().await;
        let message = proto::GetJobRequest {
            namespace: ns.into(),
            job_id: id.into(),
        };
        match client.get_job(self.req(message)).await {
            Ok(reply) => reply.into_inner().job,
            Err(status) if status.code() == tonic::Code::NotFound => None,
            Err(status) => panic!("GetJob: {status:?}"),
        }
    }

    /// GETs `path` until its body contains `needle` (the sampler's next snapshot).
    pub async fn page_until(&self, path: &str, cookie: Option<&str>, needle: &str) -> Answer {
        let patience = Patience::new(format!("{path} to show {needle:?}"));
        loop {
            let answer = self.http.get(path, cookie).await;
            assert_eq!(answer.status, 200, "{path}: {answer:?}");
            if answer.body.contains(needle) {
                return answer;
            }
            patience.wait().await;
        }
    }
}

/// `message` with `principal`'s bearer token (none: no auth file).
pub fn as_principal<T>(message: T, principal: Option<&str>) -> Request<T> {
    let mut request = Request::new(message);
    if let Some(name) = principal {
        let value = format!("Bearer t-{name}").parse().expect("header value");
        request.metadata_mut().insert("authorization", value);
    }
    request
}

/// HTML text as a person reads it: tags dropped, entities decoded.
pub fn text(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// The cells (as text) of the first table row marked `data-queue="<queue>"`.
pub fn queue_row(html: &str, queue: &str) -> Vec<String> {
    let marker = format!("data-queue=\"{queue}\"");
    let start = html
        .find(&marker)
        .unwrap_or_else(|| panic!("no row of queue {queue} in {html}"));
    let row = &html[start..];
    let row = &row[..row.find("</tr>").expect("the row's end")];
    row.split("<td")
        .skip(1)
        .map(|cell| text(&format!("<td{cell}")).trim().to_owned())
        .collect()
}

/// The number in `<b id="<id>">N</b>` of a queues page.
pub fn card(html: &str, id: &str) -> String {
    let marker = format!("id=\"{id}\">");
    let start = html
        .find(&marker)
        .unwrap_or_else(|| panic!("no {id} in {html}"))
        + marker.len();
    let rest = &html[start..];
    rest[..rest.find('<').expect("the card's end")].to_owned()
}

/// The flow the console tests draw: fetch, then resize and scan, then publish, in
/// queue `media` of `shop`.
pub fn upload_flow(flow_id: &str) -> proto::EnqueueFlowRequest {
    let node = |r: &str, after: &[&str]| proto::FlowNode {
        r#ref: r.into(),
        job: Some(proto::EnqueueRequest {
            queue: "media".into(),
            name: r.into(),
            ..Default::default()
        }),
        after: after.iter().map(|a| (*a).into()).collect(),
        ..Default::default()
    };
    proto::EnqueueFlowRequest {
        namespace: "shop".into(),
        flow_id: flow_id.into(),
        nodes: vec![
            node("fetch", &[]),
            node("resize", &["fetch"]),
            node("scan", &["fetch"]),
            node("publish", &["resize", "scan"]),
        ],
    }
}
