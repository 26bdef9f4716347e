//! Authorisation of one call, once its request is decoded: the namespace in the
//! message is validated first (into a [`Namespace`], which the handler then takes),
//! and the caller the auth layer found (`crate::layers::auth`) is checked
//! against the role the RPC table names for the call (`super::rpcs`) on that
//! namespace. A denied call is answered PERMISSION_DENIED before its handler runs,
//! so nothing is written. Calls of audited RPCs (operator actions that change or
//! remove data), allowed or refused, are recorded with their outcome by
//! `super::audit`, around this check.

use std::{pin::Pin, sync::Arc};

use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Status};

use super::{audit_lines, ApiError, Rescue};
use crate::{
    auth::{unauthenticated, Caller, Credential, Scope},
    domain::Namespace,
    proto,
    rpc::{Access, Rpc},
};

/// What a request reaches, validated from its message: the handler's first argument.
/// A request whose target is its `namespace` field gets its impl from its line in the
/// RPC table (`super::rpcs`); the others are below.
pub(super) trait Scoped {
    type Target: Reach;

    fn target(&self) -> Result<Self::Target, ApiError>;
}

/// What a validated target lets a caller reach, for the role check.
pub(super) trait Reach {
    fn scope(&self) -> Scope<'_>;
}

/// `value` of `field` as a namespace, named on the call's tracing span so every log
/// line of the call carries it.
pub(super) fn namespace(field: &str, value: &str) -> Result<Namespace, ApiError> {
    let namespace =
        Namespace::parse(value).map_err(|problem| ApiError::invalid(field, problem.to_string()))?;
    tracing::Span::current().record("namespace", namespace.as_str());
    Ok(namespace)
}

impl Reach for Namespace {
    fn scope(&self) -> Scope<'_> {
        Scope::Namespace(self.as_str())
    }
}

/// Every namespace at once (ListNamespaces): reader (or more) on `*`.
pub(super) struct AllNamespaces;

impl Reach for AllNamespaces {
    fn scope(&self) -> Scope<'_> {
        Scope::Everything
    }
}

impl Scoped for proto::ListNamespacesRequest {
    type Target = AllNamespaces;

    fn target(&self) -> Result<AllNamespaces, ApiError> {
        Ok(AllNamespaces)
    }
}

/// A preview of a stored schedule reads its namespace; a preview of a timing in the
/// request reads nothing stored and may leave the namespace empty.
impl Reach for Option<Namespace> {
    fn scope(&self) -> Scope<'_> {
        Scope::Namespace(self.as_ref().map_or("", Namespace::as_str))
    }
}

impl Scoped for proto::PreviewScheduleRequest {
    type Target = Option<Namespace>;

    fn target(&self) -> Result<Option<Namespace>, ApiError> {
        let by_id = matches!(
            self.target,
            Some(proto::preview_schedule_request::Target::Id(_))
        );
        if self.namespace.is_empty() && !by_id {
            return Ok(None);
        }
        namespace("namespace", &self.namespace).map(Some)
    }
}

/// What a Migrate reaches: its namespace, unless it covers every namespace; every
/// namespace, or another application's keys (an import source), takes admin on `*`.
pub(super) struct MigrateTarget {
    /// Set unless `all_namespaces` (the handler refuses the other combinations).
    pub(super) namespace: Option<Namespace>,
    everything: bool,
}

impl Reach for MigrateTarget {
    fn scope(&self) -> Scope<'_> {
        match (&self.namespace, self.everything) {
            (Some(namespace), false) => Scope::Namespace(namespace.as_str()),
            _ => Scope::Everything,
        }
    }
}

impl Scoped for proto::MigrateRequest {
    type Target = MigrateTarget;

    fn target(&self) -> Result<MigrateTarget, ApiError> {
        let own_store = self.source == proto::MigrateSource::Unspecified as i32
            || self.source == proto::MigrateSource::Dueq as i32;
        let namespace = match self.namespace.as_str() {
            "" => None,
            name => Some(namespace("namespace", name)?),
        };
        Ok(MigrateTarget {
            namespace,
            everything: self.all_namespaces || !own_store,
        })
    }
}

/// The request's validated target, if its caller may call `rpc` on it. A request
/// without a caller did not pass the auth layer: refused, never let through. A caller
/// that holds no role granting `rpc` is refused PERMISSION_DENIED whatever its message
/// says; one that does learns that a malformed namespace is malformed
/// (INVALID_ARGUMENT naming the field) before whether it may reach it.
pub(super) fn authorize<T: Scoped>(
    request: &Request<T>,
    rpc: &'static Rpc,
) -> Result<T::Target, ApiError> {
    let caller = request.extensions().get::<Caller>();
    let via = audit_lines::via(request.metadata().as_ref());
    let target = match request.get_ref().target() {
        Ok(target) => target,
        Err(invalid) => {
            may_call(caller, rpc, via)?;
            return Err(invalid);
        }
    };
    authorize_caller(caller, rpc, target.scope(), via)?;
    Ok(target)
}

/// Whether `caller` holds a role that grants `rpc` on some namespace; refused (and
/// logged on `dueq::audit`) if not. For a call whose target did not validate.
pub(super) fn may_call(
    caller: Option<&Caller>,
    rpc: &'static Rpc,
    via: &str,
) -> Result<(), ApiError> {
    let allowed = match (caller, rpc.access) {
        (Some(_), Access::Open) | (Some(Caller::Unrestricted), _) => true,
        (Some(Caller::Principal(principal)), Access::Role(needed)) => principal.holds(needed),
        (None, _) => false,
    };
    if allowed {
        return Ok(());
    }
    let name = caller.map_or("(unknown)", Caller::name);
    Err(refuse(
        name,
        rpc,
        "",
        via,
        format!(
            "principal {name:?} may not call {rpc} on any namespace: none of its roles grants it"
        ),
    ))
}

/// Whether `caller` (the one the auth layer put in the call's extensions, or the one
/// a Work stream's credential names now) may call `rpc` on `scope`; refused (and
/// logged on `dueq::audit`) if not.
pub(super) fn authorize_caller(
    caller: Option<&Caller>,
    rpc: &'static Rpc,
    scope: Scope<'_>,
    via: &str,
) -> Result<(), ApiError> {
    let allowed = match (caller, rpc.access) {
        (Some(_), Access::Open) | (Some(Caller::Unrestricted), _) => true,
        (Some(Caller::Principal(principal)), Access::Role(needed)) => {
            principal.allows(needed, scope)
        }
        (None, _) => false,
    };
    if allowed {
        return Ok(());
    }
    let name = caller.map_or("(unknown)", Caller::name);
    let namespace = match scope {
        Scope::Namespace(namespace) => namespace,
        Scope::Everything => "",
    };
    Err(refuse(
        name,
        rpc,
        namespace,
        via,
        format!("principal {name:?} may not call {rpc} on {scope}"),
    ))
}

/// The refusal, logged on `dueq::audit` unless `rpc` is audited (its record, with
/// this outcome, is the line).
fn refuse(principal: &str, rpc: &Rpc, namespace: &str, via: &str, message: String) -> ApiError {
    if !rpc.audited {
        audit_lines::refused(
            Some(principal),
            rpc.method,
            namespace,
            "PERMISSION_DENIED",
            via,
        );
    }
    ApiError::Denied(message)
}

/// What a call that lives on (a Work stream, a server stream) asks again at each
/// message: whether the credential it was opened with still names a principal of the
/// auth file in force (a SIGHUP may have reloaded it) that may call its RPC on its
/// target. A revoked credential ends the call UNAUTHENTICATED, a role or namespace
/// taken away PERMISSION_DENIED; either is an audit line.
pub(super) struct Recheck {
    /// None without an auth file (or for the console's in-process calls, which name
    /// their principal themselves).
    credential: Option<Credential>,
    rpc: &'static Rpc,
    pub(super) via: &'static str,
    /// The target's namespace; None for every namespace.
    namespace: Option<String>,
    rescue: Arc<Rescue>,
}

impl Recheck {
    /// The recheck of `request`, a call of `rpc` authorised on `scope`.
    pub(super) fn of<T>(
        request: &Request<T>,
        rpc: &'static Rpc,
        scope: Scope<'_>,
        rescue: &Arc<Rescue>,
    ) -> Recheck {
        Recheck {
            credential: request.extensions().get::<Credential>().cloned(),
            rpc,
            via: audit_lines::via(request.metadata().as_ref()),
            namespace: match scope {
                Scope::Namespace(namespace) => Some(namespace.to_owned()),
                Scope::Everything => None,
            },
            rescue: rescue.clone(),
        }
    }

    /// The same, once the target is known (a Work stream's start).
    pub(super) fn on(mut self, scope: Scope<'_>) -> Recheck {
        self.namespace = match scope {
            Scope::Namespace(namespace) => Some(namespace.to_owned()),
            Scope::Everything => None,
        };
        self
    }

    /// The status that ends the call if its caller no longer belongs; None if it does.
    pub(super) fn refusal(&self) -> Option<Status> {
        let credential = self.credential.as_ref()?;
        let scope = self
            .namespace
            .as_deref()
            .map_or(Scope::Everything, Scope::Namespace);
        let (method, namespace) = (self.rpc.method, self.namespace.as_deref().unwrap_or(""));
        let Some(caller) = credential.caller() else {
            audit_lines::refused(None, method, namespace, "UNAUTHENTICATED", self.via);
            return Some(unauthenticated());
        };
        let denied = authorize_caller(Some(&caller), self.rpc, scope, self.via).err()?;
        if self.rpc.audited {
            // Its record was made when the call started: the refusal is a line of its own.
            let principal = Some(caller.name());
            audit_lines::refused(principal, method, namespace, "PERMISSION_DENIED", self.via);
        }
        Some(self.rescue.status(denied))
    }

    /// `stream`, asking again before each message it sends: it ends with the
    /// refusal instead of a message once its caller no longer belongs.
    pub(super) fn guard<T: Send + 'static>(
        self,
        stream: Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>,
    ) -> Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>> {
        if self.credential.is_none() {
            return stream;
        }
        Box::pin(futures_util::stream::unfold(
            Some((stream, self)),
            |state| async move {
                let (mut stream, recheck) = state?;
                let item = stream.next().await?;
                match recheck.refusal() {
                    Some(refused) => Some((Err(refused), None)),
                    None => Some((item, Some((stream, recheck)))),
                }
            },
        ))
    }
}
