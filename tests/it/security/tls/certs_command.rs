//! `dueq certs` works end to end: what it writes serves mTLS, and the lines it prints
//! (the serve flags, the auth file's client_cert_subject, the DUEQ_* variables and the
//! grpcurl line) are what these tests run, parsed from its output, not repeated here.

use std::{collections::BTreeMap, net::SocketAddr, path::Path, process::Output};

use super::{pki::Leaf, serving_channel};
use crate::{common::*, tools::binary::Binary};

/// The address the printed lines name (`dueq serve`'s default --listen).
const PRINTED_ADDR: &str = "127.0.0.1:50051";

/// What `dueq certs` printed, parsed.
struct Printed {
    serve_flags: Vec<String>,
    subject: String,
    env: BTreeMap<String, String>,
    grpcurl: String,
}

/// The lines of `out` that start with `prefix` after their two-space indent, the
/// prefix taken off.
fn indented<'a>(out: &'a str, prefix: &str) -> Vec<&'a str> {
    out.lines()
        .filter_map(|l| l.strip_prefix("  ")?.strip_prefix(prefix))
        .collect()
}

fn parse(out: &str) -> Printed {
    let one = |prefix: &str| match indented(out, prefix)[..] {
        [line] => line.trim().to_owned(),
        ref lines => panic!("{prefix:?}: {lines:?} in\n{out}"),
    };
    let serve_flags = one("dueq serve ")
        .split_whitespace()
        .map(String::from)
        .collect();
    let subject = one("client_cert_subject = ");
    let env = indented(out, "export ")
        .into_iter()
        .map(|l| {
            let (k, v) = l.split_once('=').expect("NAME=value");
            (k.to_owned(), v.to_owned())
        })
        .collect();
    Printed {
        serve_flags,
        subject: serde_json::from_str(&subject).expect("a quoted subject"),
        env,
        grpcurl: format!("grpcurl {}", one("grpcurl ")),
    }
}

fn dueq(args: &[&str], envs: &BTreeMap<String, String>) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_dueq"))
        .args(args)
        .env_clear()
        .envs(envs)
        .output()
        .expect("run dueq")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A service started with what `dueq certs` printed, and an auth file whose only
/// principal is the printed client_cert_subject; the Redis and folders it uses.
struct Setup {
    printed: Printed,
    addr: SocketAddr,
    _dueq: Binary,
    _redis: Redis,
    _dir: tempfile::TempDir,
}

impl Setup {
    async fn start() -> Setup {
        let dir = tempfile::tempdir().expect("tempdir");
        let out_dir = dir.path().join("certs");
        let out_arg = out_dir.to_str().expect("path");
        let made = dueq(&["certs", "--out", out_arg], &BTreeMap::new());
        assert!(made.status.success(), "{}", text(&made));
        let printed = parse(&String::from_utf8_lossy(&made.stdout));
        for key in ["server-key.pem", "client-key.pem"] {
            assert_eq!(mode(&out_dir.join(key)), 0o600, "{key}");
        }
        let again = dueq(&["certs", "--out", out_arg], &BTreeMap::new());
        assert!(!again.status.success(), "overwrote: {}", text(&again));
        assert!(
            text(&again).contains("--force replaces them"),
            "{}",
            text(&again)
        );

        let auth_file = dir.path().join("auth.toml");
        std::fs::write(
            &auth_file,
            format!(
                "[[principal]]\nname = \"certs-client\"\nroles = [\"admin\"]\n\
                 namespaces = [\"*\"]\nclient_cert_subject = \"{}\"\n",
                printed.subject
            ),
        )
        .expect("write the auth file");
        let redis = Redis::start().await;
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().expect("addr");
        let mut flags: Vec<&str> = printed.serve_flags.iter().map(String::as_str).collect();
        flags.extend(["--auth-file", auth_file.to_str().expect("path")]);
        let dueq = Binary::spawn_with(&addr.to_string(), &redis.url(), "info", &flags);
        let read = |name: &str| std::fs::read_to_string(out_dir.join(name)).expect("read PEM");
        let client = Leaf {
            cert: read("client.pem"),
            key: read("client-key.pem"),
        };
        serving_channel(addr, &read("ca.pem"), Some(&client)).await;
        Setup {
            printed,
            addr,
            _dueq: dueq,
            _redis: redis,
            _dir: dir,
        }
    }

    /// The printed DUEQ_* variables, DUEQ_ADDR on this service's port.
    fn env(&self) -> BTreeMap<String, String> {
        let mut env = self.printed.env.clone();
        let addr = env.get_mut("DUEQ_ADDR").expect("DUEQ_ADDR printed");
        assert!(addr.contains(PRINTED_ADDR), "{addr}");
        *addr = addr.replace(PRINTED_ADDR, &self.addr.to_string());
        env
    }
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).expect("stat").permissions().mode() & 0o777
}

#[cfg(not(unix))]
fn mode(_: &Path) -> u32 {
    0o600
}

/// Pins (issue 29 item 17): `dueq certs` writes a CA, a server certificate the
/// service starts with, and a client certificate that the printed client_cert_subject
/// names in an auth file; the keys are 0600 and a second run refuses to overwrite.
/// The dueq CLI with only the printed DUEQ_* variables is let in over mTLS; without
/// the client certificate it is not.
#[tokio::test]
async fn certs_output_serves_mtls_to_the_cli_with_the_printed_variables() {
    let setup = Setup::start().await;
    let env = setup.env();
    for key in ["DUEQ_TLS_CA", "DUEQ_TLS_CLIENT_CERT", "DUEQ_TLS_CLIENT_KEY"] {
        assert!(env.contains_key(key), "{key} printed: {env:?}");
    }
    // A std Command blocks the test's thread: the service is another process.
    let listed = dueq(&["namespaces"], &env);
    assert!(listed.status.success(), "{}", text(&listed));

    let mut no_cert = env.clone();
    no_cert.remove("DUEQ_TLS_CLIENT_CERT");
    no_cert.remove("DUEQ_TLS_CLIENT_KEY");
    let refused = dueq(&["namespaces"], &no_cert);
    assert!(!refused.status.success(), "{}", text(&refused));
}

/// Pins (issue 29 item 17): the grpcurl line `dueq certs` prints lists the services
/// of the service started with its printed flags.
#[tokio::test]
#[ignore = "needs grpcurl"]
async fn certs_output_serves_the_printed_grpcurl_line() {
    tools::require("grpcurl");
    let setup = Setup::start().await;
    let command = setup
        .printed
        .grpcurl
        .replace(PRINTED_ADDR, &setup.addr.to_string());
    assert_ne!(
        command, setup.printed.grpcurl,
        "the line names {PRINTED_ADDR}"
    );
    let out = tokio::process::Command::new("bash")
        .args(["-c", &command])
        .output()
        .await
        .expect("bash");
    assert!(
        out.status.success() && text(&out).contains("dueq.v1.QueueService"),
        "{command}\n{}",
        text(&out)
    );
}

/// Pins: docs/security.md's `dueq certs` example prints what the document shows (its
/// folder, /home/me there, aside).
#[test]
fn the_security_doc_certs_recipe_prints_what_it_shows() {
    let block = crate::doc_examples::between("certs-recipe");
    let command = crate::doc_examples::fenced("certs-recipe").trim();
    let shown = block
        .split("```text\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a text block of the output");
    let args: Vec<&str> = command
        .strip_prefix("dueq ")
        .expect("a dueq command")
        .split_whitespace()
        .collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dueq"))
        .args(args)
        .current_dir(dir.path())
        .output()
        .expect("run dueq certs");
    assert!(out.status.success(), "{}", text(&out));
    let here = std::fs::canonicalize(dir.path()).expect("the folder");
    let printed =
        String::from_utf8_lossy(&out.stdout).replace(&here.display().to_string(), "/home/me");
    assert_eq!(printed, shown);
}
