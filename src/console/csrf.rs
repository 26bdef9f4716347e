//! Cross-site request forgery: every request that changes something (any method but
//! GET and HEAD) must come from the console's own pages. Browsers say where a request
//! comes from in `Sec-Fetch-Site` and `Origin`, and a page of another site cannot
//! forge either: a request whose `Sec-Fetch-Site` is not `same-origin`, or whose
//! `Origin` is missing or names another host than the one it was sent to, is refused
//! (403) before any handler runs. The session cookie is SameSite=Strict besides.

use axum::{
    extract::Request,
    http::{header, HeaderMap, Method, StatusCode},
    middleware::Next,
    response::{IntoResponse, Response},
};

use super::html::message_page;

pub(super) async fn guard(request: Request, next: Next) -> Response {
    if matches!(*request.method(), Method::GET | Method::HEAD) {
        return next.run(request).await;
    }
    match refusal(request.headers()) {
        None => next.run(request).await,
        Some(why) => {
            tracing::info!(method = %request.method(), path = %request.uri().path(), why, "console: request refused as cross-site");
            (StatusCode::FORBIDDEN, message_page("Refused", why)).into_response()
        }
    }
}

/// Why a state-changing request with these headers is refused; None: it came from
/// a page of this console.
fn refusal(headers: &HeaderMap) -> Option<&'static str> {
    let text = |name| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = text("sec-fetch-site") {
        if site != "same-origin" {
            return Some("refused: this request did not come from a console page (Sec-Fetch-Site)");
        }
    }
    let Some(origin) = text(header::ORIGIN.as_str()) else {
        return Some("refused: a request that changes something must carry an Origin header");
    };
    let host = text(header::HOST.as_str())?;
    let origin_host = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"));
    if origin_host != Some(host) {
        return Some("refused: the request's Origin is not this console");
    }
    None
}

#[cfg(test)]
mod tests {
    use axum::http::{HeaderMap, HeaderValue};

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn a_same_origin_request_passes() {
        let ok = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://127.0.0.1:8080"),
            ("sec-fetch-site", "same-origin"),
        ]);
        assert_eq!(super::refusal(&ok), None);
        let no_fetch_metadata = headers(&[("host", "h:1"), ("origin", "https://h:1")]);
        assert_eq!(super::refusal(&no_fetch_metadata), None);
    }

    #[test]
    fn a_cross_site_or_unproven_request_is_refused() {
        for bad in [
            headers(&[
                ("host", "h:1"),
                ("origin", "http://h:1"),
                ("sec-fetch-site", "cross-site"),
            ]),
            headers(&[
                ("host", "h:1"),
                ("origin", "http://h:1"),
                ("sec-fetch-site", "same-site"),
            ]),
            headers(&[("host", "h:1"), ("origin", "http://evil:1")]),
            headers(&[("host", "h:1"), ("origin", "null")]),
            headers(&[("host", "h:1")]),
        ] {
            assert!(super::refusal(&bad).is_some(), "{bad:?}");
        }
    }
}
