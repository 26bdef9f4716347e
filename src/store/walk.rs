//! Migrate's reads and writes that are not scripts: the walks that visit keys by SCAN,
//! a bounded step at a time — every namespace under the prefix (`all_namespaces`) and
//! a namespace's layout-1 job keys (the job phase); each step is one SCAN call of
//! COUNT `batch`, and a walk owns its cursor, so callers only ask for the next step —
//! and the import source's size and the deletion of what was imported from it.

use std::collections::BTreeSet;

use deadpool_redis::redis;

use super::{
    keys::{LegacyJobKeys, NamespaceMarker, PrefixKeys},
    Store, StoreError,
};

/// Which node a SCAN step reads.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ScanAt {
    /// The master of the pattern's hash tag (one namespace's keys); the one Redis
    /// outside a cluster.
    PatternSlot,
    /// One cluster master, by address; the one Redis outside a cluster.
    Node(String, u16),
}

impl Store {
    /// One `SCAN cursor MATCH pattern COUNT count [TYPE kind]` step on `at`: the next
    /// cursor (0 when done) and the keys found.
    async fn scan_step(
        &self,
        at: &ScanAt,
        cursor: u64,
        pattern: &str,
        count: u32,
        kind: Option<&str>,
    ) -> Result<(u64, Vec<Vec<u8>>), StoreError> {
        let mut cmd = redis::cmd("SCAN");
        cmd.arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(count);
        if let Some(kind) = kind {
            cmd.arg("TYPE").arg(kind);
        }
        let (slot, mut conn) = self.conns.get().await?;
        let reply = match at {
            ScanAt::PatternSlot => conn.query_at_key(pattern.as_bytes(), &cmd).await,
            ScanAt::Node(host, port) => conn.query_at_node(host, *port, &cmd).await,
        }
        .map_err(|e| self.fail(slot, "", e))?;
        redis::from_redis_value(reply)
            .map_err(|e| StoreError::corrupt("a SCAN reply", e.to_string()))
    }

    /// Where the namespaces are: every master of a cluster (by address, from
    /// CLUSTER SLOTS), or the one Redis.
    async fn scan_targets(&self) -> Result<Vec<ScanAt>, StoreError> {
        let (slot, mut conn) = self.conns.get().await?;
        if !conn.is_cluster() {
            return Ok(vec![ScanAt::Node(String::new(), 0)]);
        }
        let slots: Vec<redis::Value> = redis::cmd("CLUSTER")
            .arg("SLOTS")
            .query_async(&mut conn)
            .await
            .map_err(|e| self.fail(slot, "", e))?;
        let mut masters = BTreeSet::new();
        for range in slots {
            let master = slot_range_master(range).ok_or_else(|| {
                StoreError::corrupt(
                    "the reply to CLUSTER SLOTS",
                    "not [start, end, [host, port, ...], ...]",
                )
            })?;
            masters.insert(master);
        }
        Ok(masters
            .into_iter()
            .map(|(host, port)| ScanAt::Node(host, port))
            .collect())
    }

    /// The SCARD of an import source's index.
    pub(crate) async fn source_size(
        &self,
        source: &super::keys::BoringnodeKeys,
    ) -> Result<u64, StoreError> {
        self.query(redis::cmd("SCARD").arg(&source.index).to_owned())
            .await
    }

    /// Deletes imported source records: each hash and its index entry.
    pub(crate) async fn delete_source(
        &self,
        source: &super::keys::BoringnodeKeys,
        ids: &[String],
    ) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        for id in ids {
            pipe.cmd("DEL")
                .arg(source.record(id))
                .ignore()
                .cmd("SREM")
                .arg(&source.index)
                .arg(id)
                .ignore();
        }
        let (slot, mut conn) = self.conns.get().await?;
        if conn.is_cluster() {
            // The records are in many slots: a cluster takes a pipeline of one slot
            // only, so the commands go one by one (Migrate's import is not hot).
            for cmd in pipe.cmd_iter() {
                cmd.query_async::<()>(&mut conn)
                    .await
                    .map_err(|e| self.fail(slot, "", e))?;
            }
            return Ok(());
        }
        pipe.query_async::<()>(&mut conn)
            .await
            .map_err(|e| self.fail(slot, "", e))
    }
}

/// The master (host, port) of one CLUSTER SLOTS entry: `[start, end, [host, port,
/// id, ...], replicas...]`.
fn slot_range_master(range: redis::Value) -> Option<(String, u16)> {
    let redis::Value::Array(items) = range else {
        return None;
    };
    let redis::Value::Array(node) = items.into_iter().nth(2)? else {
        return None;
    };
    let mut node = node.into_iter();
    let host = redis::from_redis_value(node.next()?).ok()?;
    let port = redis::from_redis_value(node.next()?).ok()?;
    Some((host, port))
}

/// Every namespace under the key prefix that holds metadata or a pre-index listing:
/// on every master of a cluster.
pub(crate) struct NamespaceWalk {
    markers: Vec<NamespaceMarker>,
    cursor: u64,
    found: BTreeSet<String>,
    skipped: BTreeSet<String>,
}

/// What a [`NamespaceWalk`] found.
#[derive(Debug, Default)]
pub(crate) struct NamespaceScan {
    /// The namespaces, sorted.
    pub(crate) namespaces: Vec<String>,
    /// Keys the SCAN pattern matched that are not a namespace's marker key (a job id
    /// or queue name ending in `}:meta`, say), sorted; lossily decoded.
    pub(crate) skipped: Vec<String>,
}

impl NamespaceWalk {
    pub(crate) fn new() -> Self {
        NamespaceWalk {
            markers: vec![NamespaceMarker::LegacyListing, NamespaceMarker::Meta],
            cursor: 0,
            found: BTreeSet::new(),
            skipped: BTreeSet::new(),
        }
    }

    /// Walks to the end, `batch` keys a step.
    pub(crate) async fn collect(
        mut self,
        store: &Store,
        batch: u32,
    ) -> Result<NamespaceScan, StoreError> {
        let keys = PrefixKeys::new(&store.prefix);
        let all_markers = self.markers.clone();
        for node in store.scan_targets().await? {
            self.markers.clone_from(&all_markers);
            self.cursor = 0;
            self.walk_node(store, &keys, &node, batch).await?;
        }
        Ok(NamespaceScan {
            namespaces: self.found.into_iter().collect(),
            skipped: self.skipped.into_iter().collect(),
        })
    }

    /// Walks one node to the end.
    async fn walk_node(
        &mut self,
        store: &Store,
        keys: &PrefixKeys,
        node: &ScanAt,
        batch: u32,
    ) -> Result<(), StoreError> {
        while let Some(&marker) = self.markers.last() {
            let pattern = keys.namespaces_pattern(marker);
            let (next, found) = store
                .scan_step(node, self.cursor, &pattern, batch, None)
                .await?;
            for key in &found {
                match std::str::from_utf8(key)
                    .ok()
                    .and_then(|k| keys.namespace_of(k, marker))
                {
                    Some(ns) => self.found.insert(ns.to_owned()),
                    None => self
                        .skipped
                        .insert(String::from_utf8_lossy(key).into_owned()),
                };
            }
            self.cursor = next;
            if next == 0 {
                self.markers.pop();
            }
        }
        Ok(())
    }
}

/// A namespace's layout-1 job keys of one kind, a SCAN step at a time.
pub(crate) struct LegacyJobWalk {
    kind: LegacyJobKeys,
    /// The next SCAN cursor; `None` once the scan has come back to 0.
    cursor: Option<u64>,
}

impl LegacyJobWalk {
    pub(crate) fn new(kind: LegacyJobKeys) -> Self {
        LegacyJobWalk {
            kind,
            cursor: Some(0),
        }
    }

    /// The keys of the next SCAN step (possibly none), or `None` when the walk is over.
    pub(crate) async fn next(
        &mut self,
        store: &Store,
        namespace: &str,
        count: u32,
    ) -> Result<Option<Vec<Vec<u8>>>, StoreError> {
        let Some(cursor) = self.cursor else {
            return Ok(None);
        };
        let kind = match self.kind {
            LegacyJobKeys::JobHashes => "hash",
            LegacyJobKeys::JobRecords => "string",
            LegacyJobKeys::ReadySets | LegacyJobKeys::Listings => "zset",
        };
        let pattern = store.keys(namespace).legacy_job_pattern(self.kind);
        let (next, found) = store
            .scan_step(&ScanAt::PatternSlot, cursor, &pattern, count, Some(kind))
            .await?;
        self.cursor = (next != 0).then_some(next);
        Ok(Some(found))
    }

    /// The job ids of job keys this walk found (a `JobHashes` walk).
    pub(crate) fn job_ids(store: &Store, namespace: &str, found: &[Vec<u8>]) -> Vec<String> {
        let keys = store.keys(namespace);
        found
            .iter()
            .filter_map(|key| keys.job_id_of(key))
            .map(str::to_owned)
            .collect()
    }
}

/// A namespace's flow lanes and concurrency parks (issue 32), a SCAN step at a time,
/// for Migrate's flow repair.
pub(crate) struct FlowIndexWalk {
    /// The next SCAN cursor; `None` once the scan has come back to 0.
    cursor: Option<u64>,
}

/// One key a [`FlowIndexWalk`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FlowIndexKey {
    /// `'l'` a lane, `'w'` the park of a concurrency key.
    pub(crate) kind: char,
    pub(crate) queue: String,
    /// The lane, or the concurrency key.
    pub(crate) name: String,
}

impl FlowIndexWalk {
    pub(crate) fn new() -> Self {
        FlowIndexWalk { cursor: Some(0) }
    }

    /// The keys of the next SCAN step (possibly none), or `None` when the walk is over.
    pub(crate) async fn next(
        &mut self,
        store: &Store,
        namespace: &str,
        count: u32,
    ) -> Result<Option<Vec<FlowIndexKey>>, StoreError> {
        let Some(cursor) = self.cursor else {
            return Ok(None);
        };
        let keys = store.keys(namespace);
        let pattern = keys.flow_index_pattern();
        let (next, found) = store
            .scan_step(&ScanAt::PatternSlot, cursor, &pattern, count, None)
            .await?;
        self.cursor = (next != 0).then_some(next);
        Ok(Some(
            found
                .iter()
                .filter_map(|key| keys.flow_index_of(key))
                .map(|(kind, queue, name)| FlowIndexKey { kind, queue, name })
                .collect(),
        ))
    }
}
