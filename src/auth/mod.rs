//! Who may call what: the principals of `--auth-file`, each with roles and the
//! namespaces they apply to, and the check of one call against them. The tower layer
//! `crate::layers::auth` authenticates (a bearer token, or the names of an mTLS
//! client certificate) and hands the [`Caller`] to the handlers in the request's
//! extensions; the handler path (`api::service`) authorises once it has decoded the
//! request, because the namespace is in the message.

mod file;
mod pattern;
mod roles;

use std::{
    path::{Path, PathBuf},
    sync::{Arc, PoisonError, RwLock},
};

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

pub(crate) use file::AuthFileError;
pub(crate) use roles::Role;

use pattern::Pattern;

/// The principals to serve with, from `--auth-file`; None when there is none, which
/// is refused on an address other hosts can reach unless `--allow-unauthenticated`.
pub(crate) fn principals_for(
    auth_file: Option<&Path>,
    allow_unauthenticated: bool,
    addr: std::net::SocketAddr,
) -> Result<Option<Arc<AuthFile>>, String> {
    match auth_file {
        Some(path) => AuthFile::load(path)
            .map(|file| Some(Arc::new(file)))
            .map_err(|e| e.to_string()),
        None if addr.ip().is_loopback() || allow_unauthenticated => Ok(None),
        None => Err(format!(
            "refusing to listen on {addr} without --auth-file: anyone who can reach it \
             could read and change every namespace; pass --auth-file FILE, listen on a \
             loopback address, or pass --allow-unauthenticated"
        )),
    }
}

/// The principals of `--auth-file` in force. A reload (SIGHUP) reads and checks the
/// whole file first and then swaps the one pointer, so a call sees the old principals
/// or the new ones, never a mix, and a bad file leaves the old ones in force.
#[derive(Debug)]
pub(crate) struct AuthFile {
    path: PathBuf,
    current: RwLock<Arc<Principals>>,
}

impl AuthFile {
    /// Reads and checks `path`, for startup.
    pub(crate) fn load(path: &Path) -> Result<AuthFile, AuthFileError> {
        Ok(AuthFile {
            path: path.to_owned(),
            current: RwLock::new(Arc::new(Principals::load(path)?)),
        })
    }

    /// The principals in force now.
    pub(crate) fn current(&self) -> Arc<Principals> {
        // Only a pointer is ever written under the lock: a poisoned one is whole.
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Re-reads the file: its principals replace the ones in force, or, if it is
    /// missing or has a mistake, nothing changes and the error says why.
    pub(crate) fn reload(&self) -> Result<usize, AuthFileError> {
        let principals = Arc::new(Principals::load(&self.path)?);
        let count = principals.principals.len();
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = principals;
        Ok(count)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

/// What a caller authenticated with, kept by a call that lives on (a Work stream, a
/// server stream) to ask the principals in force at each of its messages whether it
/// still belongs (`api::authorize::Recheck`): a
/// revoked token or certificate subject is refused from its next message on. The
/// token is kept only as its SHA-256.
#[derive(Debug, Clone)]
pub(crate) struct Credential {
    file: Arc<AuthFile>,
    token_sha256: Option<[u8; 32]>,
    client_names: Vec<String>,
}

impl Credential {
    pub(crate) fn new(file: Arc<AuthFile>, token: Option<&str>, client_names: Vec<String>) -> Self {
        Credential {
            file,
            token_sha256: token.map(sha256),
            client_names,
        }
    }

    /// The principal this credential names in the auth file in force now; None once
    /// it names none (revoked).
    pub(crate) fn caller(&self) -> Option<Caller> {
        self.file
            .current()
            .authenticate_digest(self.token_sha256.as_ref(), &self.client_names)
            .map(Caller::Principal)
    }
}

/// The answer to a call whose credential names no principal of the auth file in
/// force (none sent, unknown, or revoked by a reload).
pub(crate) fn unauthenticated() -> tonic::Status {
    tonic::Status::unauthenticated(
        "no known credential: send `authorization: Bearer <token>` with a token whose \
         SHA-256 is a principal's token_sha256 in the server's --auth-file",
    )
}

fn sha256(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// One `[[principal]]` of the auth file.
#[derive(Debug)]
pub(crate) struct Principal {
    pub(crate) name: String,
    roles: Vec<Role>,
    namespaces: Vec<Pattern>,
    token_sha256: Option<[u8; 32]>,
    client_cert_subject: Option<String>,
    /// `max_namespaces`: most namespaces the principal may write into (producer
    /// calls), counted across replicas (`api::quota`); None: no limit of its own.
    pub(crate) max_namespaces: Option<u32>,
    /// `max_jobs`: most unfinished jobs the principal's namespaces may hold together
    /// before its enqueues are refused (`api::quota`); None: no limit of its own.
    pub(crate) max_jobs: Option<u64>,
    /// `max_schedules`: most schedules its namespaces may hold together before its
    /// UpsertSchedule of a new one is refused; None: no limit of its own.
    pub(crate) max_schedules: Option<u64>,
}

/// What a call reaches: one namespace, or every namespace (Migrate with
/// `all_namespaces` or an import from another application's keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope<'a> {
    Namespace(&'a str),
    Everything,
}

impl std::fmt::Display for Scope<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scope::Namespace(namespace) => write!(f, "namespace {namespace:?}"),
            Scope::Everything => f.write_str("all namespaces (needs the role on \"*\")"),
        }
    }
}

impl Principal {
    /// Whether this principal holds a role that includes `needed` on some namespace:
    /// a caller without one is refused before anything in its message is read.
    pub(crate) fn holds(&self, needed: Role) -> bool {
        self.roles.iter().any(|role| role.includes(needed))
    }

    /// Whether this principal holds a role that includes `needed` (the role the RPC
    /// table names for the call) on `scope`. Every namespace at once takes the
    /// pattern `*`: admin for Migrate of every namespace or an import, reader or
    /// more for ListNamespaces.
    pub(crate) fn allows(&self, needed: Role, scope: Scope<'_>) -> bool {
        self.roles.iter().any(|role| role.includes(needed))
            && match scope {
                Scope::Namespace(namespace) => self.namespaces.iter().any(|p| p.matches(namespace)),
                Scope::Everything => self.namespaces.iter().any(Pattern::is_all),
            }
    }
}

/// The caller of one RPC, put in the request's extensions by the auth layer.
#[derive(Debug, Clone)]
pub(crate) enum Caller {
    /// No `--auth-file`: every caller may do everything.
    Unrestricted,
    Principal(Arc<Principal>),
}

/// A call the console makes in-process for a signed-in viewer (src/console/grpc.rs):
/// the auth layer takes this caller from the request's extensions instead of a
/// credential. Only code in this process can put it there; a request off the network
/// carries headers, never extensions.
#[derive(Debug, Clone)]
pub(crate) struct InProcess(pub(crate) Caller);

impl Caller {
    /// Whether this caller may call an RPC needing `role` on namespace `namespace`
    /// (what `api::authorize` decides; the console asks it to decide which buttons
    /// to show, and the RPC it calls decides again).
    pub(crate) fn may(&self, role: Role, namespace: &str) -> bool {
        match self {
            Caller::Unrestricted => true,
            Caller::Principal(principal) => principal.allows(role, Scope::Namespace(namespace)),
        }
    }

    /// The namespaces a principal names without a wildcard (the console lists them
    /// for a principal that may not list every namespace); none when unrestricted.
    pub(crate) fn exact_namespaces(&self) -> Vec<String> {
        match self {
            Caller::Unrestricted => Vec::new(),
            Caller::Principal(principal) => principal
                .namespaces
                .iter()
                .filter_map(Pattern::exact)
                .map(str::to_owned)
                .collect(),
        }
    }

    /// The name for audit lines.
    pub(crate) fn name(&self) -> &str {
        match self {
            Caller::Unrestricted => "(no auth file)",
            Caller::Principal(principal) => &principal.name,
        }
    }
}

/// The principals of an auth file.
#[derive(Debug)]
pub(crate) struct Principals {
    principals: Vec<Arc<Principal>>,
}

impl Principals {
    /// Reads and checks `path`; the error names the principal and the field.
    pub(crate) fn load(path: &std::path::Path) -> Result<Principals, AuthFileError> {
        file::load(path)
    }

    /// How many principals there are: with more than one, each holds at most its
    /// share of the in-flight caps (`crate::layers::shed`).
    pub(crate) fn count(&self) -> usize {
        self.principals.len()
    }

    /// The principal named `name` (a console session keeps the name, so it follows
    /// the auth file's current principal).
    pub(crate) fn by_name(&self, name: &str) -> Option<Arc<Principal>> {
        self.principals.iter().find(|p| p.name == name).cloned()
    }

    /// The principal a bearer token or a client certificate's names (SANs and CN)
    /// belong to. Every token hash is compared, in constant time, so the answer's
    /// timing says nothing about how much of a hash matched.
    pub(crate) fn authenticate(
        &self,
        token: Option<&str>,
        client_names: &[String],
    ) -> Option<Arc<Principal>> {
        self.authenticate_digest(token.map(sha256).as_ref(), client_names)
    }

    /// The same, from the SHA-256 of the token.
    fn authenticate_digest(
        &self,
        digest: Option<&[u8; 32]>,
        client_names: &[String],
    ) -> Option<Arc<Principal>> {
        if let Some(digest) = digest {
            let mut found = None;
            for principal in &self.principals {
                if let Some(hash) = &principal.token_sha256 {
                    if bool::from(hash.ct_eq(digest)) && found.is_none() {
                        found = Some(principal.clone());
                    }
                }
            }
            if found.is_some() {
                return found;
            }
        }
        self.principals
            .iter()
            .find(|p| {
                p.client_cert_subject
                    .as_ref()
                    .is_some_and(|subject| client_names.iter().any(|n| n == subject))
            })
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principal(roles: &[Role], namespaces: &[&str]) -> Principal {
        Principal {
            name: "p".into(),
            roles: roles.to_vec(),
            namespaces: namespaces.iter().map(|p| Pattern::new(p)).collect(),
            token_sha256: None,
            client_cert_subject: None,
            max_namespaces: None,
            max_jobs: None,
            max_schedules: None,
        }
    }

    #[test]
    fn everything_takes_admin_on_star() {
        let ns = Scope::Everything;
        // Migrate of every namespace needs admin on `*`.
        assert!(principal(&[Role::Admin], &["*"]).allows(Role::Admin, ns));
        assert!(!principal(&[Role::Admin], &["shop-*"]).allows(Role::Admin, ns));
        assert!(!principal(&[Role::Producer, Role::Worker], &["*"]).allows(Role::Admin, ns));
        // Listing every namespace takes a reading role on `*`.
        assert!(principal(&[Role::Reader], &["*"]).allows(Role::Reader, ns));
        assert!(!principal(&[Role::Reader], &["shop-*"]).allows(Role::Reader, ns));
        assert!(!principal(&[Role::Reader], &["*"]).allows(Role::Admin, ns));
    }

    #[test]
    fn roles_and_namespaces_both_apply() {
        let p = principal(&[Role::Worker], &["shop-*", "billing"]);
        assert!(p.allows(Role::Worker, Scope::Namespace("shop-eu")));
        assert!(p.allows(Role::Worker, Scope::Namespace("billing")));
        assert!(!p.allows(Role::Worker, Scope::Namespace("billing-2")));
        assert!(!p.allows(Role::Producer, Scope::Namespace("shop-eu")));
    }

    #[test]
    fn a_token_or_a_certificate_name_finds_its_principal() {
        let mut by_token = principal(&[Role::Reader], &["*"]);
        by_token.name = "token".into();
        by_token.token_sha256 = Some(Sha256::digest(b"secret").into());
        let mut by_cert = principal(&[Role::Reader], &["*"]);
        by_cert.name = "cert".into();
        by_cert.client_cert_subject = Some("worker.internal".into());
        let all = Principals {
            principals: vec![Arc::new(by_token), Arc::new(by_cert)],
        };
        let name = |token, names: &[String]| all.authenticate(token, names).map(|p| p.name.clone());
        assert_eq!(name(Some("secret"), &[]), Some("token".into()));
        assert_eq!(name(Some("wrong"), &[]), None);
        assert_eq!(name(None, &[]), None);
        assert_eq!(name(None, &["worker.internal".into()]), Some("cert".into()));
        assert_eq!(name(None, &["other".into()]), None);
    }
}
