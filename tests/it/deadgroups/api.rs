//! ListDeadGroups: grouping and normalisation, order and pages, bad input, who may
//! list and who may act on a group.

use tonic::Code;

use super::*;
use crate::security::auth::{token_hash, with_token};

/// Messages that differ only in numbers, hex ids and quoted strings share a group;
/// a group is per queue (the same message in two queues: two groups, one
/// fingerprint); groups come largest first with their first and last dead time and
/// the last job that joined, message as it was.
#[tokio::test]
async fn dead_jobs_are_grouped_by_their_normalised_error() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut jobs = of_kind("q", 'A', 3);
    jobs.extend(of_kind("q", 'B', 2));
    jobs.extend(of_kind("r", 'A', 1));
    jobs.extend(of_kind("q", 'C', 4));
    let ids = kill(&mut c, jobs).await;

    let all = groups(&mut c, "").await;
    let summary: Vec<(String, String, u64)> = all
        .iter()
        .map(|g| (g.queue.clone(), kind_of(&g.sample_error), g.count))
        .collect();
    let want = |q: &str, k: char, n: u64| (q.to_owned(), kind_of(&message(k, 0)), n);
    assert_eq!(
        summary,
        [
            want("q", 'C', 4),
            want("q", 'A', 3),
            want("q", 'B', 2),
            want("r", 'A', 1)
        ]
    );
    let (qa, ra) = (&all[1], &all[3]);
    assert_eq!(
        qa.fingerprint, ra.fingerprint,
        "one message, one fingerprint"
    );
    assert!(
        all.iter()
            .all(|g| g.fingerprint.len() == 16
                && g.fingerprint.bytes().all(|b| b.is_ascii_hexdigit()))
    );
    assert_ne!(all[0].fingerprint, all[1].fingerprint);
    // The last job that joined q's A group is the third A job, its message as sent.
    assert_eq!(qa.sample_job_id, ids[2]);
    assert_eq!(qa.sample_error, message('A', 2));
    let (first, last) = (ms(&qa.first_seen), ms(&qa.last_seen));
    assert!(first > 0 && first <= last, "{first} {last}");
    let dead_at = ms(&get_job(&mut c, &ids[0]).await.finish_time);
    assert_eq!(first, dead_at, "first seen: when the longest-dead job died");

    // One queue's groups; pages of one.
    let only_r = groups(&mut c, "r").await;
    assert_eq!(only_r.len(), 1);
    assert_eq!(only_r[0], *ra);
    let mut paged = Vec::new();
    let mut token = String::new();
    loop {
        let page = list_page(&mut c, "", 1, &token).await.expect("page");
        assert!(page.groups.len() <= 1);
        paged.extend(page.groups);
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    assert_eq!(paged, all);
}

/// A long message's sample is cut to 512 bytes, never inside a character.
#[tokio::test]
async fn a_long_sample_is_cut_on_a_character_boundary() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let long = format!("x{}", "é".repeat(600));
    kill(&mut c, vec![(one_attempt("q", "long"), long.clone())]).await;
    let g = groups(&mut c, "q").await.pop().expect("a group");
    assert_eq!(g.sample_error.len(), 511);
    assert!(long.starts_with(&g.sample_error));
}

/// Every bad field is refused with INVALID_ARGUMENT naming it, and nothing is
/// written.
#[tokio::test]
async fn bad_input_is_refused_naming_the_field_and_writes_nothing() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    kill(&mut c, of_kind("q", 'A', 1)).await;
    let fp = fingerprint(&mut c, "q", 'A').await;
    let mut conn = redis.conn().await;
    let before = snapshot(&mut conn).await;
    let list = |queue: &str, page_size: u32, token: &str| proto::ListDeadGroupsRequest {
        namespace: "ns".into(),
        queue: queue.into(),
        page_size,
        page_token: token.into(),
    };
    let retry = |fingerprint: &str| proto::RetryDeadJobsRequest {
        namespace: "ns".into(),
        queue: "q".into(),
        error_fingerprint: fingerprint.into(),
        ..Default::default()
    };
    let purge = |state: proto::JobState, fingerprint: &str| proto::PurgeJobsRequest {
        namespace: "ns".into(),
        queue: "q".into(),
        state: state as i32,
        error_fingerprint: fingerprint.into(),
        ..Default::default()
    };
    let refusals = vec![
        (
            "page_size",
            c.list_dead_groups(list("", 1001, "")).await.map(|_| ()),
        ),
        (
            "page_token",
            c.list_dead_groups(list("", 0, "abc")).await.map(|_| ()),
        ),
        (
            "page_token",
            c.list_dead_groups(list("", 0, "-1")).await.map(|_| ()),
        ),
        (
            "page_token",
            c.list_dead_groups(list("", 0, "99999999999"))
                .await
                .map(|_| ()),
        ),
        (
            "queue",
            c.list_dead_groups(list(&"x".repeat(300), 0, ""))
                .await
                .map(|_| ()),
        ),
        (
            "error_fingerprint",
            c.retry_dead_jobs(retry("xyz")).await.map(|_| ()),
        ),
        (
            "error_fingerprint",
            c.retry_dead_jobs(retry(&fp.to_uppercase()))
                .await
                .map(|_| ()),
        ),
        (
            "error_fingerprint",
            c.retry_dead_jobs(retry(&format!("{fp}0")))
                .await
                .map(|_| ()),
        ),
        (
            "error_fingerprint",
            c.purge_jobs(purge(proto::JobState::Dead, "other "))
                .await
                .map(|_| ()),
        ),
        (
            "state",
            c.purge_jobs(purge(proto::JobState::Pending, &fp))
                .await
                .map(|_| ()),
        ),
        (
            "state",
            c.purge_jobs(purge(proto::JobState::Delayed, &fp))
                .await
                .map(|_| ()),
        ),
        (
            "state",
            c.purge_jobs(purge(proto::JobState::Completed, &fp))
                .await
                .map(|_| ()),
        ),
    ];
    for (field, result) in refusals {
        let status = result.expect_err(field);
        assert_eq!(status.code(), Code::InvalidArgument, "{field}: {status:?}");
        assert!(
            status.message().contains(field),
            "{field}: {}",
            status.message()
        );
    }
    assert_eq!(snapshot(&mut conn).await, before, "nothing was written");
    // A well-formed fingerprint of no group, and a page past the end, are empty.
    let none = c
        .retry_dead_jobs(retry("0000000000000000"))
        .await
        .expect("retry")
        .into_inner();
    assert_eq!((none.retried, none.more), (0, false));
    let past = list_page(&mut c, "", 10, "5").await.expect("past the end");
    assert!(past.groups.is_empty() && past.next_page_token.is_empty());
}

/// A reader may list the groups but neither retry nor purge one: PERMISSION_DENIED,
/// and the group stays; an admin may.
#[tokio::test]
async fn a_reader_may_list_groups_but_not_retry_or_purge_them() {
    let redis = Redis::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut text = String::new();
    for (name, role) in [("reader", "reader"), ("admin", "admin")] {
        text.push_str(&format!(
            "[[principal]]\nname = \"{name}\"\nroles = [\"{role}\"]\nnamespaces = [\"ns\"]\n\
             token_sha256 = \"{}\"\n\n",
            token_hash(&format!("t-{name}"))
        ));
    }
    let path = dir.path().join("auth.toml");
    std::fs::write(&path, text).expect("write auth file");
    let mut cfg = config(&redis.url());
    cfg.auth_file = Some(path);
    let service = Service::start_with(cfg).await;
    let mut c = service.client().await;
    let admin_token = Some("t-admin");
    let reader = Some("t-reader");
    let jobs = of_kind("q", 'A', 2);
    let mut ids = Vec::new();
    for (req, _) in &jobs {
        let id = c
            .enqueue(with_token(req.clone(), admin_token))
            .await
            .expect("enqueue")
            .into_inner()
            .job_id;
        ids.push(id);
    }
    for (id, (_, msg)) in ids.iter().zip(&jobs) {
        let claimed = c
            .claim_job(with_token(claim_req(&["q"], 0, None), admin_token))
            .await
            .expect("claim")
            .into_inner()
            .jobs
            .pop()
            .expect("a job");
        assert_eq!(&claimed.job_id, id);
        let fail = proto::FailJobRequest {
            namespace: "ns".into(),
            job_id: claimed.job_id,
            lease_token: claimed.lease_token,
            error: msg.clone(),
            ..Default::default()
        };
        c.fail_job(with_token(fail, admin_token))
            .await
            .expect("fail");
    }
    let list = proto::ListDeadGroupsRequest {
        namespace: "ns".into(),
        ..Default::default()
    };
    let listed = c
        .list_dead_groups(with_token(list.clone(), reader))
        .await
        .expect("a reader lists")
        .into_inner()
        .groups;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].count, 2);
    let fp = listed[0].fingerprint.clone();
    let retry = proto::RetryDeadJobsRequest {
        namespace: "ns".into(),
        queue: "q".into(),
        error_fingerprint: fp.clone(),
        ..Default::default()
    };
    let purge = proto::PurgeJobsRequest {
        namespace: "ns".into(),
        queue: "q".into(),
        error_fingerprint: fp,
        ..Default::default()
    };
    let denied = c.retry_dead_jobs(with_token(retry.clone(), reader)).await;
    assert_eq!(
        denied.expect_err("reader retry").code(),
        Code::PermissionDenied
    );
    let denied = c.purge_jobs(with_token(purge, reader)).await;
    assert_eq!(
        denied.expect_err("reader purge").code(),
        Code::PermissionDenied
    );
    let denied = c.list_dead_groups(list.clone()).await;
    assert_eq!(denied.expect_err("no token").code(), Code::Unauthenticated);
    let still = c
        .list_dead_groups(with_token(list, reader))
        .await
        .expect("list")
        .into_inner()
        .groups;
    assert_eq!(still, listed, "the group is untouched");
    let done = c
        .retry_dead_jobs(with_token(retry, admin_token))
        .await
        .expect("an admin retries")
        .into_inner();
    assert_eq!((done.retried, done.more), (2, false));
}
