//! The client libraries' conformance suite (clients/conformance/): every case of
//! cases.toml, run for Python, TypeScript and Rust by that language's driver against
//! a real `dueq serve` on a real Redis. One test per case and language:
//! `clients::python::<case>`, `clients::typescript::<case>`, `clients::rust::<case>`,
//! and `clients::python_stream::<case>` for the Python worker's second transport.
//!
//! Python needs python3 with grpcio, TypeScript node and npm: those are ignored
//! unless asked for (`-- --include-ignored`, as CI runs them) and fail, when run, if
//! what they need is missing. The Rust driver is built with cargo, always there.

pub(crate) mod cases;
mod docs;
pub(crate) mod driver;
mod examples;
pub(crate) mod server;
mod unit;

use std::path::PathBuf;

use driver::Lang;

macro_rules! conformance {
    ($($case:ident),* $(,)?) => {
        /// The cases, in the order cases.toml lists them.
        const CASES: &[&str] = &[$(stringify!($case)),*];

        mod python {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[ignore = "needs python grpcio"]
                async fn $case() {
                    super::cases::$case(super::Lang::Python).await;
                }
            )*
        }

        mod python_stream {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[ignore = "needs python grpcio"]
                async fn $case() {
                    super::cases::$case(super::Lang::PythonStream).await;
                }
            )*
        }

        mod typescript {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[ignore = "needs node"]
                async fn $case() {
                    super::cases::$case(super::Lang::TypeScript).await;
                }
            )*
        }

        mod rust {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::cases::$case(super::Lang::Rust).await;
                }
            )*
        }
    };
}

conformance![
    acks_what_the_handler_returns,
    a_raised_error_retries_with_backoff,
    non_retryable_makes_the_job_dead,
    a_long_handler_has_its_lease_extended,
    progress_and_cancel_reach_the_handler,
    sigterm_drains_in_flight_work,
    a_service_restart_mid_stream_loses_nothing,
    permission_denied_is_typed,
    unauthenticated_is_typed,
    tls_connects,
    mtls_connects,
    schedule_occurrences_run_once_across_two_workers,
    bad_input_is_refused_before_sending,
    the_producer_api_stores_what_it_says,
    flow_dependencies,
];

#[derive(serde::Deserialize)]
struct Spec {
    case: Vec<Case>,
}

#[derive(serde::Deserialize)]
struct Case {
    name: String,
    title: String,
}

fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn spec() -> Spec {
    let text = std::fs::read_to_string(repo("clients/conformance/cases.toml")).expect("cases.toml");
    toml::from_str(&text).expect("cases.toml parses")
}

/// The parity table the README shows: one row per case, a column per client. Every
/// cell is a test above, so a green run is what the ticks claim.
fn parity_table(spec: &Spec) -> String {
    let mut table = String::from(
        "| behaviour (clients/conformance/cases.toml) | Python | Python, `transport=\"stream\"` | TypeScript | Rust |\n|---|:-:|:-:|:-:|:-:|\n",
    );
    for case in &spec.case {
        table.push_str(&format!("| {} | ✓ | ✓ | ✓ | ✓ |\n", case.title));
    }
    table
}

#[test]
fn every_case_of_the_spec_runs_for_every_client_and_the_readme_shows_them() {
    let spec = spec();
    let names: Vec<&str> = spec.case.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, CASES, "cases.toml and the conformance! list differ");
    let readme = std::fs::read_to_string(repo("README.md")).expect("README.md");
    let begin = "<!-- parity:begin -->\n";
    let start = readme
        .find(begin)
        .expect("README has <!-- parity:begin -->")
        + begin.len();
    let end = readme[start..]
        .find("<!-- parity:end -->")
        .expect("parity:end")
        + start;
    assert_eq!(
        &readme[start..end],
        parity_table(&spec),
        "README.md's parity table is not the one cases.toml makes"
    );
}
