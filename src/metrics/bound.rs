//! The cardinality bound (`--metrics-max-series`): the first N namespaces, and the
//! first N (namespace, queue) pairs, this instance labels keep their own label
//! values; any after them fold into `_other`. Admission is for the life of the
//! process, so a series never changes its labels.

use std::{
    collections::HashSet,
    sync::{Mutex, MutexGuard, PoisonError},
};

/// The label value the namespaces and queues beyond the bound fold into.
pub(crate) const OTHER: &str = "_other";

#[derive(Debug)]
pub(crate) struct Bound {
    max: usize,
    namespaces: Mutex<HashSet<String>>,
    queues: Mutex<HashSet<(String, String)>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Bound {
    pub(crate) fn new(max: usize) -> Self {
        Bound {
            max,
            namespaces: Mutex::new(HashSet::new()),
            queues: Mutex::new(HashSet::new()),
        }
    }

    /// The namespace's label value: itself if admitted (now or before), else `_other`.
    pub(crate) fn namespace(&self, namespace: &str) -> String {
        let mut known = lock(&self.namespaces);
        if known.contains(namespace) {
            return namespace.to_owned();
        }
        if known.len() < self.max {
            known.insert(namespace.to_owned());
            return namespace.to_owned();
        }
        OTHER.to_owned()
    }

    /// The (namespace, queue) label values: a namespace beyond the bound takes its
    /// queues with it (`_other`, `_other`); a queue beyond it folds into
    /// (namespace, `_other`).
    pub(crate) fn queue(&self, namespace: &str, queue: &str) -> (String, String) {
        let namespace = self.namespace(namespace);
        if namespace == OTHER {
            return (namespace, OTHER.to_owned());
        }
        let mut known = lock(&self.queues);
        let pair = (namespace, queue.to_owned());
        if known.contains(&pair) {
            return pair;
        }
        if known.len() < self.max {
            known.insert(pair.clone());
            return pair;
        }
        (pair.0, OTHER.to_owned())
    }

    /// `--metrics-max-series`.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// The namespaces admitted so far (for the gauges read at scrape time).
    pub(crate) fn namespaces(&self) -> Vec<String> {
        let mut names: Vec<String> = lock(&self.namespaces).iter().cloned().collect();
        names.sort();
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_beyond_the_bound_and_keeps_what_it_admitted() {
        let bound = Bound::new(2);
        assert_eq!(bound.namespace("a"), "a");
        assert_eq!(bound.namespace("b"), "b");
        assert_eq!(bound.namespace("c"), OTHER);
        assert_eq!(bound.namespace("a"), "a");
        assert_eq!(bound.queue("a", "q1"), ("a".into(), "q1".into()));
        assert_eq!(bound.queue("b", "q1"), ("b".into(), "q1".into()));
        assert_eq!(bound.queue("a", "q2"), ("a".into(), OTHER.into()));
        assert_eq!(bound.queue("c", "q1"), (OTHER.into(), OTHER.into()));
        assert_eq!(bound.queue("a", "q1"), ("a".into(), "q1".into()));
        assert_eq!(bound.namespaces(), vec!["a".to_owned(), "b".to_owned()]);
    }
}
