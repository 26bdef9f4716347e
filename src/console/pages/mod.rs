//! The console's pages: each reads through the in-process gRPC client as its viewer
//! (or from the namespace's sampler, after checking the viewer may read it) and
//! renders HTML; each action is one RPC (or a bounded loop of one RPC) made as the
//! viewer, then a redirect back with what it did.

pub(super) mod bulk;
pub(super) mod dead;
pub(super) mod flows;
pub(super) mod jobs;
pub(super) mod ops;
pub(super) mod overview;
pub(super) mod queues;
pub(super) mod schedules;

use axum::{
    http::StatusCode,
    response::{IntoResponse, Redirect, Response},
};

use super::{
    html::{enc, message_page, Failure},
    viewer::Viewer,
};
use crate::{auth::Role, domain::Namespace};

pub(super) async fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        message_page("Not found", "There is no such page."),
    )
        .into_response()
}

/// `ns` as a namespace the viewer may read (the sampler reads for all viewers, so
/// the console checks here what the RPC would).
pub(super) fn readable(viewer: &Viewer, ns: &str) -> Result<Namespace, Failure> {
    let namespace = Namespace::parse(ns).map_err(|problem| {
        Failure(tonic::Status::invalid_argument(format!(
            "namespace: {problem}"
        )))
    })?;
    if !viewer.caller.may(Role::Reader, ns) {
        return Err(Failure(tonic::Status::permission_denied(format!(
            "principal {:?} may not read namespace {ns:?}",
            viewer.name()
        ))));
    }
    Ok(namespace)
}

/// Back to `path` with a notice of what an action did.
pub(super) fn done(path: &str, notice: &str) -> Response {
    let sep = if path.contains('?') { '&' } else { '?' };
    Redirect::to(&format!("{path}{sep}notice={}", enc(notice))).into_response()
}

/// The fields of a posted form (application/x-www-form-urlencoded); a field given
/// twice keeps its first value.
pub(super) struct Fields(Vec<(String, String)>);

impl Fields {
    pub(super) fn of(body: &[u8]) -> Fields {
        Fields(url::form_urlencoded::parse(body).into_owned().collect())
    }

    /// Every value of `name` (a checkbox list).
    pub(super) fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0
            .iter()
            .filter(move |(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    pub(super) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}
