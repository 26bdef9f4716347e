//! Replies fit in one gRPC message (invariant 9): a claim leases only the jobs its
//! reply can carry, and a page of jobs or schedules stops early, by bytes as well as
//! by count, instead of building a reply the transport refuses.

use std::collections::BTreeMap;

use dueq::proto;
use prost::Message;

use crate::common::*;

/// The service's default message limit, which these tests run under.
const MAX_MESSAGE: usize = 4 * 1024 * 1024;
/// The service's default payload limit.
const MAX_PAYLOAD: usize = 1024 * 1024;

fn big_job(name: &str) -> proto::EnqueueRequest {
    proto::EnqueueRequest {
        payload: vec![b'x'; MAX_PAYLOAD],
        ..job("q", name)
    }
}

#[tokio::test]
async fn a_claim_leases_only_the_jobs_its_reply_can_carry() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut ids = Vec::new();
    for i in 0..6 {
        ids.push(enqueue(&mut c, big_job(&format!("big{i}"))).await.job_id);
    }
    let mut delivered: BTreeMap<String, u32> = BTreeMap::new();
    let mut first = true;
    let patience = Patience::new("all six big jobs to be delivered");
    while delivered.len() < 6 {
        let reply = c
            .claim_job(proto::ClaimJobRequest {
                max_jobs: 10,
                acks: vec![],
                ..claim_req(&["q"], 0, Some(60_000))
            })
            .await
            .expect("a claim of big jobs succeeds")
            .into_inner();
        assert!(
            !reply.jobs.is_empty(),
            "each claim carries at least one job"
        );
        assert!(
            reply.encoded_len() <= MAX_MESSAGE,
            "{}",
            reply.encoded_len()
        );
        if first {
            first = false;
            assert!(reply.jobs.len() < 6, "not all six fit in one reply");
            for id in &ids {
                let leased = reply.jobs.iter().any(|j| &j.job_id == id);
                let state = state(&get_job(&mut c, id).await);
                let expected = if leased {
                    proto::JobState::Active
                } else {
                    proto::JobState::Pending
                };
                assert_eq!(state, expected, "{id}: only what was sent is leased");
            }
        }
        for j in reply.jobs {
            assert_eq!(
                j.attempt, 1,
                "{}: the first delivery is attempt 1",
                j.job_id
            );
            assert_eq!(j.payload.len(), MAX_PAYLOAD);
            *delivered.entry(j.job_id).or_default() += 1;
        }
        patience.wait().await;
    }
    assert!(delivered.values().all(|&n| n == 1), "{delivered:?}");
    for id in &ids {
        assert_eq!(state(&get_job(&mut c, id).await), proto::JobState::Active);
    }
}

fn headers() -> std::collections::HashMap<String, String> {
    [("trace".to_owned(), "abc".to_owned())].into()
}

/// Pages every job of queue "q" with `view`; every reply under the message limit.
async fn job_pages(c: &mut Client, view: proto::JobView) -> Vec<Vec<proto::Job>> {
    let mut pages = Vec::new();
    let mut token = String::new();
    loop {
        let page = c
            .list_jobs(proto::ListJobsRequest {
                namespace: "ns".into(),
                queue: "q".into(),
                page_size: 1000,
                page_token: token,
                view: view as i32,
                ..Default::default()
            })
            .await
            .expect("ListJobs")
            .into_inner();
        assert!(page.encoded_len() <= MAX_MESSAGE, "{}", page.encoded_len());
        pages.push(page.jobs);
        if page.next_page_token.is_empty() {
            return pages;
        }
        token = page.next_page_token;
    }
}

#[tokio::test]
async fn job_pages_are_bounded_by_bytes_and_basic_leaves_payloads_out() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut ids = Vec::new();
    for i in 0..6 {
        let req = proto::EnqueueRequest {
            headers: headers(),
            ..big_job(&format!("big{i}"))
        };
        ids.push(enqueue(&mut c, req).await.job_id);
    }

    let full = job_pages(&mut c, proto::JobView::Full).await;
    assert!(full.len() > 1, "six 1 MiB jobs take more than one page");
    let seen: Vec<String> = full.iter().flatten().map(|j| j.job_id.clone()).collect();
    assert_eq!(seen, ids, "every job once, in enqueue order");
    for j in full.iter().flatten() {
        assert_eq!(
            (j.payload.len(), j.headers.clone()),
            (MAX_PAYLOAD, headers())
        );
    }

    for view in [proto::JobView::Basic, proto::JobView::Unspecified] {
        let basic = job_pages(&mut c, view).await;
        assert_eq!(basic.len(), 1, "{view:?}: small records fit in one page");
        let seen: Vec<String> = basic[0].iter().map(|j| j.job_id.clone()).collect();
        assert_eq!(seen, ids);
        for j in &basic[0] {
            assert!(
                j.payload.is_empty() && j.headers.is_empty(),
                "{view:?}: {j:?}"
            );
            assert_eq!(j.name.len(), 4, "the rest of the job is there");
        }
    }
    let whole = get_job(&mut c, &ids[0]).await;
    assert_eq!(
        whole.payload.len(),
        MAX_PAYLOAD,
        "GetJob returns the whole job"
    );
}

/// Pages every schedule of "ns" with `view`; every reply under the message limit.
async fn schedule_pages(c: &mut Client, view: proto::ScheduleView) -> Vec<Vec<proto::Schedule>> {
    let mut pages = Vec::new();
    let mut token = String::new();
    loop {
        let page = c
            .list_schedules(proto::ListSchedulesRequest {
                namespace: "ns".into(),
                page_size: 1000,
                page_token: token,
                view: view as i32,
                ..Default::default()
            })
            .await
            .expect("ListSchedules")
            .into_inner();
        assert!(page.encoded_len() <= MAX_MESSAGE, "{}", page.encoded_len());
        pages.push(page.schedules);
        if page.next_page_token.is_empty() {
            return pages;
        }
        token = page.next_page_token;
    }
}

#[tokio::test]
async fn schedule_pages_are_bounded_by_bytes_and_basic_leaves_payloads_out() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let ids: Vec<String> = (0..6).map(|i| format!("s{i}")).collect();
    for id in &ids {
        let s = proto::Schedule {
            payload: vec![b'x'; MAX_PAYLOAD],
            headers: headers(),
            ..every(id, 3600)
        };
        upsert(&mut c, "ns", s).await;
    }

    let full = schedule_pages(&mut c, proto::ScheduleView::Full).await;
    assert!(
        full.len() > 1,
        "six 1 MiB schedules take more than one page"
    );
    let seen: Vec<String> = full.iter().flatten().map(|s| s.id.clone()).collect();
    assert_eq!(seen, ids, "every schedule once, in id order");
    for s in full.iter().flatten() {
        assert_eq!(
            (s.payload.len(), s.headers.clone()),
            (MAX_PAYLOAD, headers())
        );
    }

    for view in [proto::ScheduleView::Basic, proto::ScheduleView::Unspecified] {
        let basic = schedule_pages(&mut c, view).await;
        assert_eq!(basic.len(), 1, "{view:?}: small records fit in one page");
        let seen: Vec<String> = basic[0].iter().map(|s| s.id.clone()).collect();
        assert_eq!(seen, ids);
        for s in &basic[0] {
            assert!(
                s.payload.is_empty() && s.headers.is_empty(),
                "{view:?}: {s:?}"
            );
            assert_eq!(s.job_name, "job", "the rest of the schedule is there");
        }
    }
    let whole = get(&mut c, "ns", "s0").await;
    assert_eq!(
        whole.payload.len(),
        MAX_PAYLOAD,
        "GetSchedule returns the whole schedule"
    );
}
