//! The limits the API enforces, from the service configuration, and the checks that
//! apply them.

use std::{sync::Arc, time::Duration};

use tonic::metadata::MetadataMap;

use super::{deadline, heavy::HeavyReads, validate, ApiError};

#[derive(Debug, Clone)]
pub(crate) struct Limits {
    pub(crate) max_payload_size: usize,
    /// Largest gRPC message sent: a reply is built to fit in it.
    pub(crate) max_message_size: usize,
    pub(crate) max_wait: Duration,
    /// Most jobs per EnqueueBatch.
    pub(crate) max_batch: u32,
    /// Longest lease a claim or an Enqueue may ask for.
    pub(crate) max_lease: Duration,
    /// The gate and byte budgets of GetJob and full-view ListJobs.
    pub(crate) heavy: Arc<HeavyReads>,
}

impl Limits {
    /// The wait a long-poll honours: the request's, capped by the server and the
    /// client's deadline.
    pub(super) fn wait(
        &self,
        wait: &Option<prost_types::Duration>,
        metadata: &MetadataMap,
    ) -> Result<Duration, ApiError> {
        let requested = match wait {
            Some(d) => Duration::from_millis(validate::duration_ms("wait", d)? as u64),
            None => Duration::ZERO,
        };
        Ok(deadline::effective_wait(requested, self.max_wait, metadata))
    }

    /// A lease: positive and at most the server's cap.
    pub(super) fn lease_ms(&self, field: &str, d: &prost_types::Duration) -> Result<i64, ApiError> {
        let ms = validate::duration_ms(field, d)?;
        let cap = i64::try_from(self.max_lease.as_millis()).unwrap_or(i64::MAX);
        if ms <= 0 {
            return Err(ApiError::invalid(field, "must be positive"));
        }
        if ms > cap {
            return Err(ApiError::invalid(
                field,
                format!(
                    "must be at most {}",
                    humantime::format_duration(self.max_lease)
                ),
            ));
        }
        Ok(ms)
    }
}
