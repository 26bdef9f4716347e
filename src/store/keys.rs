//! The Redis key layout. Nothing outside this module builds a key.
//!
//! Every key of a namespace carries the hash tag `{<namespace>}` so that Redis Cluster
//! puts all of them in one slot and every script touches a single slot (invariant 6).
//! The prefix and the namespace are validated to hold no `{`, `}` or other characters
//! that could move the tag; ids come last, after a fixed per-kind infix, so no id can
//! produce another record's key or an internal key:
//!
//! | key                          | type | holds                                      |
//! |------------------------------|------|--------------------------------------------|
//! | `<prefix>:{<ns>}:meta`       | hash | namespace metadata (`schema` version)      |
//! | `<prefix>:{<ns>}:due`        | zset | schedule id -> next run (epoch ms)         |
//! | `<prefix>:{<ns>}:ids`        | zset | schedule id -> 0, for listing in id order  |
//! | `<prefix>:{<ns>}:s:<id>`     | hash | the schedule record (canonical)            |
//! | `<prefix>:{<ns>}:migrate_lock` | string | Migrate's lease (token, with a TTL)      |
//! | `<prefix>:{<ns>}:ids_next`   | zset | the listing being built while upgrading    |
//!
//! The pre-index layout (schema 1) had the same schedule hashes, `:ids` as a SET, no
//! `:due` and no `:meta`; Migrate upgrades it.

/// Schema version of the layout above (the pre-index layout is version 1).
pub const SCHEMA_VERSION: u32 = 2;

/// Keys of one namespace.
#[derive(Debug, Clone)]
pub struct NamespaceKeys {
    base: String,
}

impl NamespaceKeys {
    /// `prefix` and `namespace` must already be validated (see `api::validate`).
    pub fn new(prefix: &str, namespace: &str) -> Self {
        Self {
            base: format!("{prefix}:{{{namespace}}}:"),
        }
    }

    pub fn meta(&self) -> String {
        format!("{}meta", self.base)
    }

    pub fn due(&self) -> String {
        format!("{}due", self.base)
    }

    pub fn ids(&self) -> String {
        format!("{}ids", self.base)
    }

    pub fn migrate_lock(&self) -> String {
        format!("{}migrate_lock", self.base)
    }

    pub fn ids_next(&self) -> String {
        format!("{}ids_next", self.base)
    }

    /// The prefix a schedule id is appended to; scripts that visit many schedules
    /// build their keys from it.
    pub fn schedule_prefix(&self) -> String {
        format!("{}s:", self.base)
    }

    /// The key of one schedule, as raw bytes (ids are arbitrary UTF-8).
    pub fn schedule(&self, id: &str) -> Vec<u8> {
        let mut key = self.schedule_prefix().into_bytes();
        key.extend_from_slice(id.as_bytes());
        key
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_never_alias_internal_keys() {
        let keys = NamespaceKeys::new("dueq", "ns");
        for id in [
            "due", "ids", "meta", "", ":due", "}{due", "x}{y", "{ns}:due",
        ] {
            let key = keys.schedule(id);
            assert!(key.starts_with(b"dueq:{ns}:s:"));
            for internal in [
                keys.due(),
                keys.ids(),
                keys.meta(),
                keys.migrate_lock(),
                keys.ids_next(),
            ] {
                assert_ne!(key, internal.as_bytes());
            }
        }
    }

    #[test]
    fn every_key_shares_the_namespace_hash_tag() {
        let keys = NamespaceKeys::new("dueq", "tenant-1");
        for key in [keys.due(), keys.ids(), keys.meta(), keys.schedule_prefix()] {
            let open = key.find('{').unwrap_or(usize::MAX);
            let close = key.find('}').unwrap_or(usize::MAX);
            assert_eq!(&key[open + 1..close], "tenant-1");
        }
    }
}
