//! A namespace name, validated once where a request enters (`api::authorize`, before
//! authorisation reads it) and carried from there as a type: handlers, use cases and
//! the store take `&Namespace`, so none of them checks a string again.

use std::{fmt, ops::Deref, sync::Arc};

use super::limits::{is_namespace, MAX_NAMESPACE_LEN};

/// A namespace: 1 to 64 of `A-Z a-z 0-9 _ - .`. Namespaces become part of Redis keys
/// and the Cluster hash tag, so no other character (a brace, a colon) can get in
/// (invariant 6). Cheap to clone: the name is shared.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Namespace(Arc<str>);

/// Why a name is not a namespace.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NamespaceProblem {
    #[error("must not be empty")]
    Empty,
    #[error("must be at most {MAX_NAMESPACE_LEN} characters")]
    TooLong,
    #[error("{0:?} may only contain A-Z a-z 0-9 _ - .")]
    Characters(String),
}

impl Namespace {
    pub(crate) fn parse(name: &str) -> Result<Namespace, NamespaceProblem> {
        if name.is_empty() {
            return Err(NamespaceProblem::Empty);
        }
        if name.len() > MAX_NAMESPACE_LEN {
            return Err(NamespaceProblem::TooLong);
        }
        if !is_namespace(name) {
            return Err(NamespaceProblem::Characters(name.to_owned()));
        }
        Ok(Namespace(Arc::from(name)))
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl Deref for Namespace {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Namespace {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::{Namespace, NamespaceProblem};

    #[test]
    fn names_that_would_break_keys_are_refused() {
        for bad in ["a{b", "a}b", "a:b", "a b", "ü", "a\0b"] {
            assert_eq!(
                Namespace::parse(bad),
                Err(NamespaceProblem::Characters(bad.to_owned())),
                "{bad:?}"
            );
        }
        assert_eq!(Namespace::parse(""), Err(NamespaceProblem::Empty));
        assert_eq!(
            Namespace::parse(&"x".repeat(65)),
            Err(NamespaceProblem::TooLong)
        );
        for good in ["a", "tenant-1", "prod.eu_west", &"x".repeat(64)] {
            assert_eq!(
                Namespace::parse(good).map(|n| n.to_string()),
                Ok(good.to_owned())
            );
        }
    }
}
