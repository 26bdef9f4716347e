//! Sentinel mode beyond failover: the master's password in the sentinels' URLs.

use dueq::config::RedisMode;
use tonic::Code;

use crate::common::*;

pub(super) fn sentinel_config(url: &str) -> dueq::config::ServeConfig {
    let mut config = config(url);
    config.redis_mode = RedisMode::Sentinel;
    config.redis_sentinel_master = Some(SENTINEL_MASTER.into());
    config
}

/// Pins: a password-protected master found through the sentinels is used with the
/// password in the URL (the sentinels themselves need none), and refused without.
#[tokio::test]
async fn a_password_protected_master_works_with_the_password_in_the_url() {
    let setup = Sentinels::start_with_password(Some("s3cret")).await;
    let with = setup
        .url()
        .replace("redis://127.0.0.1", "redis://:s3cret@127.0.0.1");
    let service = Service::start_with(sentinel_config(&with)).await;
    let mut c = service.client().await;
    let id = enqueue(&mut c, job("q", "j")).await.job_id;
    let claimed = claim_job(&mut c, &["q"], 0, None).await.expect("the job");
    assert_eq!(claimed.job_id, id);

    let without = Service::start_unready(sentinel_config(&setup.url())).await;
    let mut c = without.client().await;
    let err = c.enqueue(job("q", "j")).await.expect_err("no password");
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
}
