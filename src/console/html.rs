//! The frame of every page, the error page, and the small formatters pages share.

use axum::{
    http::StatusCode,
    response::{IntoResponse, Response},
};
use maud::{html, Markup, DOCTYPE};
use tonic::Code;

use super::viewer::Viewer;

/// Percent-encodes `text` for a URL path segment or query value.
pub(crate) fn enc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The page around `body`: the head, the bar (the namespace's tabs when `ns` is
/// given, the viewer and sign-out) and the script.
pub(crate) fn page(viewer: &Viewer, title: &str, ns: Option<(&str, Tab)>, body: Markup) -> Markup {
    let bar = html! {
        header.bar {
            a.brand href="/" { "dueq" }
            @if let Some((ns, tab)) = ns {
                span.ns { (ns) }
                nav {
                    @for (each, label, path) in Tab::ALL {
                        a href={ "/ns/" (enc(ns)) (path) } aria-current=[(each == tab).then_some("page")] { (label) }
                    }
                }
            }
            span.who {
                (viewer.name())
                @if viewer.signed_in {
                    form.inline method="post" action="/logout" { button.link type="submit" { "Sign out" } }
                }
            }
        }
    };
    page_frame(title, Some(bar), body)
}

/// The tabs of a namespace's pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tab {
    Queues,
    Jobs,
    Dead,
    Schedules,
    Workers,
    Audit,
}

impl Tab {
    const ALL: [(Tab, &'static str, &'static str); 6] = [
        (Tab::Queues, "Queues", ""),
        (Tab::Jobs, "Jobs", "/jobs"),
        (Tab::Dead, "Dead letters", "/dead"),
        (Tab::Schedules, "Schedules", "/schedules"),
        (Tab::Workers, "Workers", "/workers"),
        (Tab::Audit, "Audit", "/audit"),
    ];
}

pub(crate) fn page_frame(title: &str, bar: Option<Markup>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · dueq" }
                link rel="stylesheet" href=(super::assets::CSS_PATH);
                script src=(super::assets::JS_PATH) defer {}
            }
            body {
                @if let Some(bar) = bar { (bar) }
                (body)
            }
        }
    }
}

/// A page that only says something (a refusal, a missing page).
pub(crate) fn message_page(title: &str, message: &str) -> Markup {
    page_frame(
        title,
        None,
        html! { main.narrow { h1 { (title) } p { (message) } p { a href="/" { "Back to the overview" } } } },
    )
}

/// A banner for `?notice=` (what the last action did).
pub(crate) fn notice(text: Option<&str>) -> Markup {
    html! { @if let Some(text) = text.filter(|t| !t.is_empty()) { p.notice role="status" { (text) } } }
}

/// An RPC's refusal as a page: its gRPC code as the HTTP status, its message as said.
#[derive(Debug)]
pub(crate) struct Failure(pub(crate) tonic::Status);

impl From<tonic::Status> for Failure {
    fn from(status: tonic::Status) -> Failure {
        Failure(status)
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let code = self.0.code();
        let http = match code {
            Code::InvalidArgument | Code::OutOfRange => StatusCode::BAD_REQUEST,
            Code::NotFound => StatusCode::NOT_FOUND,
            Code::PermissionDenied => StatusCode::FORBIDDEN,
            Code::Unauthenticated => StatusCode::UNAUTHORIZED,
            Code::FailedPrecondition | Code::AlreadyExists | Code::Aborted => StatusCode::CONFLICT,
            Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
            Code::Unavailable | Code::DeadlineExceeded => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let title = format!("{code:?}");
        (http, message_page(&title, self.0.message())).into_response()
    }
}

/// A page's answer: the page, or the RPC's refusal.
pub(crate) type Answer = Result<Response, Failure>;

/// A namespace's page under `tab`, titled "NS · what".
pub(crate) fn ns_page(viewer: &Viewer, ns: &str, tab: Tab, what: &str, body: Markup) -> Answer {
    Ok(page(viewer, &format!("{ns} · {what}"), Some((ns, tab)), body).into_response())
}

/// A duration in ms as a person reads it: 45s, 3m 05s, 2h 10m, 4d 3h.
pub(crate) fn span(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {:02}s", s / 60, s % 60),
        3600..=86_399 => format!("{}h {:02}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d {}h", s / 86_400, (s % 86_400) / 3600),
    }
}

/// A timestamp as UTC text, to the second; "—" when unset.
pub(crate) fn time(ts: Option<&prost_types::Timestamp>) -> String {
    ts.and_then(|t| chrono::DateTime::from_timestamp(t.seconds, 0))
        .map_or_else(
            || "—".to_owned(),
            |t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
        )
}

/// A timestamp in ms since the epoch.
pub(crate) fn ms_of(ts: Option<&prost_types::Timestamp>) -> Option<i64> {
    ts.map(|t| t.seconds * 1000 + i64::from(t.nanos / 1_000_000))
}

/// A state's name in lower case, as the pages and filters write it.
pub(crate) fn state_name(state: i32) -> &'static str {
    use crate::proto::JobState;
    match JobState::try_from(state).unwrap_or(JobState::Unspecified) {
        JobState::Pending => "pending",
        JobState::Delayed => "delayed",
        JobState::Active => "active",
        JobState::Completed => "completed",
        JobState::Dead => "dead",
        JobState::Cancelled => "cancelled",
        JobState::Waiting => "waiting",
        JobState::Skipped => "skipped",
        JobState::Unspecified => "unknown",
    }
}

/// A state badge.
pub(crate) fn badge(state: &str) -> Markup {
    html! { span class={ "badge " (state) } { (state) } }
}

/// A form that posts one action (a button), with the confirmation its `confirm`
/// text asks for (the script shows it; without script the post goes ahead).
pub(crate) fn action(to: &str, label: &str, confirm: Option<&str>) -> Markup {
    // The action's name (the path's last segment) for scripts and tests to find it.
    let name = to.rsplit('/').next().unwrap_or_default();
    html! {
        form.inline method="post" action=(to) data-confirm=[confirm] data-action=(name) {
            button type="submit" { (label) }
        }
    }
}

/// Numbers with thousands separators.
pub(crate) fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_what_pages_show() {
        assert_eq!(super::enc("a b/c%é"), "a%20b%2Fc%25%C3%A9");
        assert_eq!(super::span(45_000), "45s");
        assert_eq!(super::span(185_000), "3m 05s");
        assert_eq!(super::span(7_800_000), "2h 10m");
        assert_eq!(super::count(1_234_567), "1,234,567");
        assert_eq!(super::count(12), "12");
    }
}
