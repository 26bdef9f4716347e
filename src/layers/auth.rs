//! Authentication: every call to dueq's own services carries a bearer token (or
//! comes over mTLS with a client certificate) that names a principal of
//! `--auth-file`, or is answered UNAUTHENTICATED before any handler runs. The
//! [`Caller`] goes into the request's extensions (of dueq's own services: the open
//! RPCs' handlers read none); authorisation needs the decoded
//! request (the namespace is in the message), so the handler path does it
//! (`api::authorize`). The RPCs the table marks open (health and reflection) stay
//! open: load balancers and grpcurl use them, and they reveal nothing of any tenant.
//!
//! The principals are those of the auth file in force at the call (`AuthFile`, which
//! SIGHUP reloads). A refused call is logged on `dueq::audit` at info with its method
//! (its namespace is in the message, which is not read); a call let through also
//! carries its [`Credential`], so a stream that lives on can ask again.

use std::sync::Arc;

use tonic::{body::Body, codegen::http};

use crate::{
    api::audit_lines,
    auth::{unauthenticated, AuthFile, Caller, Credential, InProcess},
    rpc::{Access, Rpc},
};

#[derive(Debug, Clone)]
pub(crate) struct Authenticate {
    /// None: no `--auth-file`, every caller is unrestricted.
    pub(crate) principals: Option<Arc<AuthFile>>,
}

/// The names (DNS/URI/email SANs, then the CN) of the client's verified mTLS
/// certificate, which the TLS acceptor puts in the request's extensions; none
/// without mTLS.
fn client_cert_names<B>(request: &http::Request<B>) -> Vec<String> {
    crate::tls::client_cert_names(request.extensions())
}

/// The token of `authorization: Bearer <token>` (the scheme is case-insensitive).
fn bearer<B>(request: &http::Request<B>) -> Option<&str> {
    let value = request
        .headers()
        .get(http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

impl Authenticate {
    /// Puts the caller in the request's extensions; or the UNAUTHENTICATED answer.
    pub(super) fn refusal(
        &self,
        rpc: Option<&'static Rpc>,
        request: &mut http::Request<Body>,
    ) -> Option<http::Response<Body>> {
        let open = rpc.is_some_and(|rpc| rpc.access == Access::Open);
        let in_process = request.extensions_mut().remove::<InProcess>();
        let caller = match &self.principals {
            _ if in_process.is_some() => in_process.map(|InProcess(caller)| caller),
            // The open RPCs' handlers are tonic's (health, reflection) and read no
            // caller: one in the extensions would cost an allocation per call.
            _ if open => return None,
            None => Some(Caller::Unrestricted),
            Some(file) => {
                let credential =
                    Credential::new(file.clone(), bearer(request), client_cert_names(request));
                let caller = credential.caller();
                request.extensions_mut().insert(credential);
                caller
            }
        };
        if let Some(caller) = caller {
            request.extensions_mut().insert(caller);
            return None;
        }
        let method = rpc.map_or_else(|| request.uri().path(), |rpc| rpc.method);
        audit_lines::refused(
            None,
            method,
            "",
            "UNAUTHENTICATED",
            audit_lines::via(request.headers()),
        );
        Some(unauthenticated().into_http())
    }
}

#[cfg(test)]
mod tests {
    use tonic::codegen::http;

    #[test]
    fn reads_a_bearer_token() {
        let with = |value: &str| {
            http::Request::builder()
                .header("authorization", value)
                .body(())
                .expect("request")
        };
        assert_eq!(super::bearer(&with("Bearer abc")), Some("abc"));
        assert_eq!(super::bearer(&with("bearer  abc ")), Some("abc"));
        assert_eq!(super::bearer(&with("Basic abc")), None);
        assert_eq!(super::bearer(&with("Bearer ")), None);
        assert_eq!(super::bearer(&http::Request::new(())), None);
    }
}
