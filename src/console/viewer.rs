//! Who is looking at a console page, and what the RPC table lets them do there.
//! (Taken from the request by `session`; every page frame shows it.)

use crate::auth::Caller;

/// Who is looking: the signed-in principal, or everyone when there is no auth file.
pub(crate) struct Viewer {
    pub(crate) caller: Caller,
    /// Signed in (with an auth file); shows the sign-out button.
    pub(crate) signed_in: bool,
}

impl Viewer {
    pub(crate) fn name(&self) -> &str {
        self.caller.name()
    }

    /// Whether the viewer may call QueueService's `method` on `namespace`, as the RPC
    /// table says (which buttons a page shows; the RPC decides again when called).
    pub(crate) fn may_call(&self, method: &str, namespace: &str) -> bool {
        match crate::api::queue_rpc(method).map(|rpc| rpc.access) {
            Some(crate::rpc::Access::Role(role)) => self.caller.may(role, namespace),
            Some(crate::rpc::Access::Open) => true,
            None => false,
        }
    }
}
