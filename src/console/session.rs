//! Sign-in: a bearer token of the auth file, checked once, becomes a session kept
//! here (the browser holds only a random id in an HttpOnly, SameSite=Strict cookie,
//! Secure under TLS). A session keeps its principal's name, so each request is
//! decided by the principal the auth file names now. Without an auth file the
//! console is open, as gRPC is, and nobody signs in.

use std::{collections::HashMap, sync::Arc, sync::Mutex, time::Duration};

use axum::{
    extract::{FromRequestParts, Query, State},
    http::{header, request::Parts, HeaderMap, StatusCode},
    response::{IntoResponse, Redirect, Response},
    Form,
};
use maud::html;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use super::{html::page_frame, viewer::Viewer, Console};
use crate::auth::Caller;

const COOKIE: &str = "dueq_session";
/// A session ends this long after sign-in.
const TTL: Duration = Duration::from_secs(12 * 3600);
/// Most sessions kept; a sign-in beyond it ends the oldest.
const MAX_SESSIONS: usize = 10_000;

struct Session {
    principal: String,
    expires: Instant,
}

/// The sessions, by the SHA-256 of their id.
#[derive(Default)]
pub(super) struct Sessions {
    map: Mutex<HashMap<[u8; 32], Session>>,
}

fn digest(id: &str) -> [u8; 32] {
    Sha256::digest(id.as_bytes()).into()
}

impl Sessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Session>> {
        self.map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A new session for `principal`; its id for the cookie.
    fn create(&self, principal: &str) -> String {
        let id = format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        let now = Instant::now();
        let mut map = self.lock();
        map.retain(|_, s| s.expires > now);
        if map.len() >= MAX_SESSIONS {
            let oldest = map.iter().min_by_key(|(_, s)| s.expires).map(|(k, _)| *k);
            if let Some(key) = oldest {
                map.remove(&key);
            }
        }
        let session = Session {
            principal: principal.to_owned(),
            expires: now + TTL,
        };
        map.insert(digest(&id), session);
        id
    }

    fn principal(&self, id: &str) -> Option<String> {
        let map = self.lock();
        let session = map.get(&digest(id))?;
        (session.expires > Instant::now()).then(|| session.principal.clone())
    }

    fn remove(&self, id: &str) {
        self.lock().remove(&digest(id));
    }
}

fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

impl FromRequestParts<Arc<Console>> for Viewer {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut Parts,
        console: &Arc<Console>,
    ) -> Result<Viewer, Response> {
        let Some(principals) = &console.principals else {
            return Ok(Viewer {
                caller: Caller::Unrestricted,
                signed_in: false,
            });
        };
        let principal = cookie(&parts.headers, COOKIE)
            .and_then(|id| console.sessions.principal(id))
            .and_then(|name| principals.current().by_name(&name));
        match principal {
            Some(principal) => Ok(Viewer {
                caller: Caller::Principal(principal),
                signed_in: true,
            }),
            None => {
                let next = parts.uri.path_and_query().map_or("/", |p| p.as_str());
                let to = format!("/login?next={}", super::html::enc(next));
                Err(Redirect::to(&to).into_response())
            }
        }
    }
}

#[derive(Deserialize)]
pub(super) struct Next {
    next: Option<String>,
}

/// Where to go after sign-in: a path of this console only (never another site).
fn local_path(next: Option<&str>) -> &str {
    match next {
        Some(path) if path.starts_with('/') && !path.starts_with("//") && !path.contains('\\') => {
            path
        }
        _ => "/",
    }
}

fn login_page(next: &str, error: Option<&str>) -> maud::Markup {
    page_frame(
        "Sign in",
        None,
        html! {
            main.narrow {
                h1 { "Sign in to dueq" }
                @if let Some(error) = error { p.error role="alert" { (error) } }
                form method="post" action="/login" {
                    input type="hidden" name="next" value=(next);
                    label for="token" { "Bearer token (a principal's token in the server's auth file)" }
                    input #token type="password" name="token" autocomplete="current-password" required autofocus;
                    button type="submit" { "Sign in" }
                }
            }
        },
    )
}

pub(super) async fn login_form(
    State(console): State<Arc<Console>>,
    Query(next): Query<Next>,
) -> Response {
    if console.principals.is_none() {
        return Redirect::to("/").into_response();
    }
    login_page(local_path(next.next.as_deref()), None).into_response()
}

#[derive(Deserialize)]
pub(super) struct Login {
    token: String,
    next: Option<String>,
}

pub(super) async fn login(
    State(console): State<Arc<Console>>,
    Form(form): Form<Login>,
) -> Response {
    let next = local_path(form.next.as_deref()).to_owned();
    let Some(principals) = &console.principals else {
        return Redirect::to(&next).into_response();
    };
    let Some(principal) = principals
        .current()
        .authenticate(Some(form.token.trim()), &[])
    else {
        // Bounded a second like every refusal line: sign-in floods cannot fill the disk.
        crate::api::audit_lines::refused(None, "ConsoleSignIn", "", "UNAUTHENTICATED", "console");
        let page = login_page(
            &next,
            Some("That token is not a principal's token in the auth file."),
        );
        return (StatusCode::UNAUTHORIZED, page).into_response();
    };
    tracing::info!(target: "dueq::audit", principal = %principal.name, method = "ConsoleSignIn", outcome = "OK", "audit");
    let id = console.sessions.create(&principal.name);
    let secure = if console.secure { "; Secure" } else { "" };
    let cookie = format!(
        "{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
        TTL.as_secs()
    );
    ([(header::SET_COOKIE, cookie)], Redirect::to(&next)).into_response()
}

pub(super) async fn logout(State(console): State<Arc<Console>>, headers: HeaderMap) -> Response {
    if let Some(id) = cookie(&headers, COOKIE) {
        console.sessions.remove(id);
    }
    let cookie = format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
    ([(header::SET_COOKIE, cookie)], Redirect::to("/login")).into_response()
}

#[cfg(test)]
mod tests {
    use axum::http::{header, HeaderMap, HeaderValue};

    #[test]
    fn reads_the_session_cookie_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; dueq_session=xyz; b=2"),
        );
        assert_eq!(super::cookie(&headers, "dueq_session"), Some("xyz"));
        assert_eq!(super::cookie(&headers, "c"), None);
    }

    #[test]
    fn sends_a_signed_in_viewer_only_to_this_consoles_pages() {
        assert_eq!(super::local_path(Some("/ns/a?x=1")), "/ns/a?x=1");
        assert_eq!(super::local_path(Some("//evil.example")), "/");
        assert_eq!(super::local_path(Some("https://evil.example")), "/");
        assert_eq!(super::local_path(Some("/\\evil")), "/");
        assert_eq!(super::local_path(None), "/");
    }

    #[test]
    fn a_session_names_its_principal_until_removed() {
        let sessions = super::Sessions::default();
        let id = sessions.create("ops");
        assert_eq!(sessions.principal(&id).as_deref(), Some("ops"));
        assert_eq!(sessions.principal("not-an-id"), None);
        sessions.remove(&id);
        assert_eq!(sessions.principal(&id), None);
    }
}
