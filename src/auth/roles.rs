//! The roles of `--auth-file`. Which role each RPC needs is a column of the one RPC
//! table (`api::rpcs`); here is only how the roles nest: every role includes
//! reader, and admin includes every role. An RPC cannot be left out of the roles:
//! its table line must name the role it needs.

use serde::Deserialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Role {
    Producer,
    Worker,
    Reader,
    Admin,
}

impl Role {
    /// Whether holding `self` grants what `needed` grants.
    pub(crate) fn includes(self, needed: Role) -> bool {
        match (self, needed) {
            (Role::Admin, _) | (_, Role::Reader) => true,
            (held, needed) => held == needed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Role::{self, Admin, Producer, Reader, Worker};

    #[test]
    fn roles_nest_under_admin_over_reader() {
        let all = [Producer, Worker, Reader, Admin];
        for held in all {
            assert!(held.includes(Reader), "{held:?} must read");
            assert!(held.includes(held));
            assert!(Admin.includes(held));
        }
        let excluded: [(Role, Role); 6] = [
            (Reader, Producer),
            (Reader, Worker),
            (Reader, Admin),
            (Producer, Worker),
            (Worker, Producer),
            (Producer, Admin),
        ];
        for (held, needed) in excluded {
            assert!(!held.includes(needed), "{held:?} must not grant {needed:?}");
        }
    }
}
