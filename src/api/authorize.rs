//! Authorisation of one call, once its request is decoded: the namespace in the
//! message is validated first (into a [`Namespace`], which the handler then takes),
//! and the caller the auth layer found (`crate::layers::AuthLayer`) is checked
//! against the role the RPC table names for the call (`super::rpcs`) on that
//! namespace. A denied call is answered PERMISSION_DENIED before its handler runs,
//! so nothing is written. Calls of audited RPCs (operator actions that change or
//! remove data), allowed or refused, are recorded with their outcome by
//! `super::audit`, around this check.

use tonic::Request;

use super::ApiError;
use crate::{
    auth::{Caller, Scope},
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
/// without a caller did not pass the auth layer: refused, never let through.
pub(super) fn authorize<T: Scoped>(
    request: &Request<T>,
    rpc: &'static Rpc,
) -> Result<T::Target, ApiError> {
    let target = request.get_ref().target()?;
    authorize_scope(request.extensions(), rpc, target.scope())?;
    Ok(target)
}

/// The same, for a call whose target is known only after its first message (Work):
/// the caller the auth layer put in the call's extensions, against `scope`.
pub(super) fn authorize_scope(
    extensions: &tonic::Extensions,
    rpc: &'static Rpc,
    scope: Scope<'_>,
) -> Result<(), ApiError> {
    let caller = extensions.get::<Caller>();
    let allowed = match (caller, rpc.access) {
        (Some(_), Access::Open) | (Some(Caller::Unrestricted), _) => true,
        (Some(Caller::Principal(principal)), Access::Role(needed)) => {
            principal.allows(needed, scope)
        }
        (None, _) => false,
    };
    let name = caller.map_or("(unknown)", Caller::name);
    if !allowed {
        return Err(ApiError::Denied(format!(
            "principal {name:?} may not call {rpc} on {scope}"
        )));
    }
    Ok(())
}
