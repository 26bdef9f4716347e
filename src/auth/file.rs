//! Reading `--auth-file`: TOML, one `[[principal]]` table per principal. Every
//! mistake stops startup (or, on a reload, keeps the principals in force) with a
//! message naming the file, the principal and the field, because a half-read auth
//! file would let the wrong callers in or lock everyone out.

use std::{collections::HashSet, path::Path, sync::Arc};

use serde::Deserialize;

use super::{pattern::Pattern, roles::Role, Principal, Principals};

#[derive(Debug, thiserror::Error)]
#[error("auth file {path}: {reason}")]
pub(crate) struct AuthFileError {
    path: String,
    reason: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    principal: Vec<Entry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: String,
    roles: Vec<Role>,
    namespaces: Vec<String>,
    token_sha256: Option<String>,
    /// The name of an environment variable holding `token_sha256`, so a deployment
    /// (docker-compose) can ship the file and take the hash from its environment.
    token_sha256_env: Option<String>,
    client_cert_subject: Option<String>,
    /// Most namespaces the principal may write into (its producer calls); none: no
    /// limit of its own.
    max_namespaces: Option<i64>,
    /// Most unfinished jobs its namespaces may hold together (needs `max_namespaces`).
    max_jobs: Option<i64>,
    /// Most schedules its namespaces may hold together (needs `max_namespaces`).
    max_schedules: Option<i64>,
}

/// Most a principal's `max_namespaces` may be: the registry of its namespaces is one
/// Redis set, and the limit is meant to be small.
const MOST_NAMESPACES: i64 = 1_000_000;

/// Most a principal's `max_namespaces` may be with `max_jobs` or `max_schedules`: a
/// replica sums those over the principal's namespaces, reading each one (at most once
/// a second per principal it serves, `api::quota`), so the read must stay bounded.
const MOST_COUNTED_NAMESPACES: i64 = 10_000;

/// Most a principal's `max_jobs` or `max_schedules` may be.
const MOST_ITEMS: i64 = 1_000_000_000;

pub(super) fn load(path: &Path) -> Result<Principals, AuthFileError> {
    let fail = |reason: String| AuthFileError {
        path: path.display().to_string(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read: {e}")))?;
    parse(&text, &|var| std::env::var(var).ok()).map_err(fail)
}

/// An entry's error message from `(field, reason)`: it names the entry (its name and
/// place in the file) and the field.
type At<'a> = &'a dyn Fn(&str, String) -> String;

/// The principals of an auth file's text, every entry checked; `env` reads the
/// variables `token_sha256_env` names.
fn parse(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Principals, String> {
    let file: File = toml::from_str(text).map_err(|e| e.to_string())?;
    if file.principal.is_empty() {
        return Err("no [[principal]]: every call would be refused".into());
    }
    let mut names = HashSet::new();
    let mut seen = Seen::default();
    let mut principals = Vec::new();
    for (index, entry) in file.principal.into_iter().enumerate() {
        let at = |field: &str, reason: String| {
            format!(
                "principal {:?} (#{}): {field}: {reason}",
                entry.name,
                index + 1
            )
        };
        check_grants(&entry, &at, &mut names)?;
        let token = token_hash(&entry, env, &at)?;
        check_credentials(&entry, token, &at, &mut seen)?;
        let limits = limits(&entry, &at)?;
        principals.push(Arc::new(Principal {
            max_namespaces: limits.namespaces,
            max_jobs: limits.jobs,
            max_schedules: limits.schedules,
            namespaces: entry.namespaces.iter().map(|p| Pattern::new(p)).collect(),
            name: entry.name,
            roles: entry.roles,
            token_sha256: token,
            client_cert_subject: entry.client_cert_subject,
        }));
    }
    Ok(Principals { principals })
}

/// Who the entry is and what it may do: a name no other entry has (`names` holds
/// the earlier ones), at least one role, and namespace patterns, none empty.
fn check_grants(entry: &Entry, at: At<'_>, names: &mut HashSet<String>) -> Result<(), String> {
    if entry.name.trim().is_empty() {
        return Err(at("name", "must not be empty".into()));
    }
    if !names.insert(entry.name.clone()) {
        return Err(at("name", "another principal has the same name".into()));
    }
    if entry.roles.is_empty() {
        return Err(at(
            "roles",
            "list at least one of producer, worker, reader, admin".into(),
        ));
    }
    if entry.namespaces.is_empty() || entry.namespaces.iter().any(|p| p.is_empty()) {
        return Err(at(
            "namespaces",
            "list namespace names or patterns (shop-*, *), none empty".into(),
        ));
    }
    Ok(())
}

/// The entry's token hash, from `token_sha256` or from the environment variable
/// `token_sha256_env` names (one or the other); None if it has neither.
fn token_hash(
    entry: &Entry,
    env: &dyn Fn(&str) -> Option<String>,
    at: At<'_>,
) -> Result<Option<[u8; 32]>, String> {
    match (&entry.token_sha256, &entry.token_sha256_env) {
        (Some(_), Some(_)) => Err(at(
            "token_sha256_env",
            "set token_sha256 or token_sha256_env, not both".into(),
        )),
        (Some(hex), None) => Ok(Some(sha256_hex(hex).map_err(|r| at("token_sha256", r))?)),
        (None, Some(var)) => {
            let hex = env(var).filter(|v| !v.is_empty()).ok_or_else(|| {
                at(
                    "token_sha256_env",
                    format!("environment variable {var} is not set"),
                )
            })?;
            Ok(Some(sha256_hex(hex.trim()).map_err(|r| {
                at(&format!("token_sha256_env ({var})"), r)
            })?))
        }
        (None, None) => Ok(None),
    }
}

/// The credentials of the entries checked so far.
#[derive(Default)]
struct Seen {
    hashes: HashSet<[u8; 32]>,
    subjects: HashSet<String>,
}

/// How the entry proves who it is: a token and/or a client certificate subject, not
/// empty, neither one another entry's (`seen` holds the earlier ones): a credential
/// names exactly one principal.
fn check_credentials(
    entry: &Entry,
    token: Option<[u8; 32]>,
    at: At<'_>,
    seen: &mut Seen,
) -> Result<(), String> {
    if token.is_none() && entry.client_cert_subject.is_none() {
        return Err(at(
            "token_sha256",
            "a principal needs token_sha256 (or token_sha256_env) and/or client_cert_subject"
                .into(),
        ));
    }
    if let Some(hash) = token {
        if !seen.hashes.insert(hash) {
            return Err(at(
                "token_sha256",
                "another principal has the same token; each token must name one principal".into(),
            ));
        }
    }
    if entry
        .client_cert_subject
        .as_ref()
        .is_some_and(|s| s.is_empty())
    {
        return Err(at("client_cert_subject", "must not be empty".into()));
    }
    if let Some(subject) = &entry.client_cert_subject {
        if !seen.subjects.insert(subject.clone()) {
            return Err(at(
                "client_cert_subject",
                format!(
                    "another principal has the subject {subject:?}; each certificate \
                     subject must name one principal"
                ),
            ));
        }
    }
    Ok(())
}

/// The entry's own limits, each optional.
struct Limits {
    namespaces: Option<u32>,
    jobs: Option<u64>,
    schedules: Option<u64>,
}

/// The entry's limits, each in its range; `max_jobs` and `max_schedules` need a
/// `max_namespaces` of at most [`MOST_COUNTED_NAMESPACES`], which bounds the
/// namespaces a replica reads to sum them.
fn limits(entry: &Entry, at: At<'_>) -> Result<Limits, String> {
    let namespaces = limit(entry.max_namespaces, "max_namespaces", MOST_NAMESPACES, at)?;
    let jobs = limit(entry.max_jobs, "max_jobs", MOST_ITEMS, at)?;
    let schedules = limit(entry.max_schedules, "max_schedules", MOST_ITEMS, at)?;
    let counted = [(jobs, "max_jobs"), (schedules, "max_schedules")]
        .into_iter()
        .find_map(|(value, field)| value.map(|_| field));
    if let Some(field) = counted {
        match namespaces {
            None => {
                return Err(at(
                    field,
                    format!(
                        "needs max_namespaces (at most {MOST_COUNTED_NAMESPACES}) too: the \
                         principal's total is summed over its namespaces"
                    ),
                ))
            }
            Some(n) if n > MOST_COUNTED_NAMESPACES.unsigned_abs() => {
                return Err(at(
                    "max_namespaces",
                    format!(
                        "{n} is over {MOST_COUNTED_NAMESPACES}, the most with {field}: the \
                         principal's total is summed over its namespaces"
                    ),
                ))
            }
            Some(_) => {}
        }
    }
    Ok(Limits {
        namespaces: namespaces.and_then(|n| u32::try_from(n).ok()),
        jobs,
        schedules,
    })
}

/// An optional limit of the entry: from 1 to `most`; left out, no limit.
fn limit(value: Option<i64>, field: &str, most: i64, at: At<'_>) -> Result<Option<u64>, String> {
    let Some(value) = value else {
        return Ok(None);
    };
    match u64::try_from(value) {
        Ok(n) if n >= 1 && value <= most => Ok(Some(n)),
        _ => Err(at(
            field,
            format!("{value} is not from 1 to {most} (leave it out for no limit)"),
        )),
    }
}

/// 64 lower-case hex digits; the token itself is never stored.
fn sha256_hex(hex: &str) -> Result<[u8; 32], String> {
    let well_formed = hex.len() == 64
        && hex
            .bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c));
    if !well_formed {
        return Err(
            "must be the SHA-256 of the token as 64 lower-case hex digits \
             (printf %s \"$TOKEN\" | sha256sum)"
                .into(),
        );
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|e| e.to_string())?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::parse;

    const HASH: &str = "930bbdc51b6aed5c2a5678fd6e28dee7a05e8a4b643cfc0b4427c3efb86c0d94";

    fn error(text: &str) -> String {
        parse(text, &|_| None).expect_err("refused")
    }

    #[test]
    fn a_good_file_loads() {
        let text = format!(
            "[[principal]]\nname = \"shop\"\nroles = [\"producer\", \"worker\"]\n\
             namespaces = [\"shop-*\"]\ntoken_sha256 = \"{HASH}\"\n\n\
             [[principal]]\nname = \"ops\"\nroles = [\"admin\"]\nnamespaces = [\"*\"]\n\
             client_cert_subject = \"ops.internal\"\nmax_namespaces = 3\n\
             max_jobs = 1000\nmax_schedules = 50\n"
        );
        let principals = parse(&text, &|_| None).expect("loads");
        assert_eq!(principals.principals.len(), 2);
        let limits: Vec<_> = principals
            .principals
            .iter()
            .map(|p| p.max_namespaces)
            .collect();
        assert_eq!(limits, [None, Some(3)]);
        let counted: Vec<_> = principals
            .principals
            .iter()
            .map(|p| (p.max_jobs, p.max_schedules))
            .collect();
        assert_eq!(counted, [(None, None), (Some(1000), Some(50))]);
    }

    #[test]
    fn mistakes_name_the_principal_and_the_field() {
        let base = |extra: &str| {
            format!("[[principal]]\nname = \"shop\"\nroles = [\"producer\"]\nnamespaces = [\"a\"]\n{extra}")
        };
        for (text, needles) in [
            (base(""), vec!["\"shop\"", "token_sha256"]),
            (base("token_sha256 = \"ABC\""), vec!["\"shop\"", "token_sha256", "lower-case hex"]),
            (
                base(&format!("token_sha256 = \"{}\"", HASH.to_uppercase())),
                vec!["token_sha256", "lower-case"],
            ),
            (
                format!("[[principal]]\nname = \"shop\"\nroles = [\"boss\"]\nnamespaces = [\"a\"]\ntoken_sha256 = \"{HASH}\""),
                vec!["roles", "boss"],
            ),
            (
                format!("[[principal]]\nname = \"shop\"\nroles = []\nnamespaces = [\"a\"]\ntoken_sha256 = \"{HASH}\""),
                vec!["\"shop\"", "roles"],
            ),
            (
                format!("[[principal]]\nname = \"shop\"\nroles = [\"admin\"]\nnamespaces = []\ntoken_sha256 = \"{HASH}\""),
                vec!["\"shop\"", "namespaces"],
            ),
            (base(&format!("token_sha256 = \"{HASH}\"\ntoken = \"x\"")), vec!["token"]),
            (base("token_sha256_env = \"NOPE\""), vec!["\"shop\"", "NOPE", "not set"]),
            (
                format!("{}\n{}", base(&format!("token_sha256 = \"{HASH}\"")), base(&format!("token_sha256 = \"{HASH}\""))),
                vec!["\"shop\" (#2)", "name"],
            ),
            ("".to_owned(), vec!["no [[principal]]"]),
            (
                base(&format!("token_sha256 = \"{HASH}\"\nmax_namespaces = 0")),
                vec!["\"shop\" (#1)", "max_namespaces", "0 is not from 1"],
            ),
            (
                base(&format!("token_sha256 = \"{HASH}\"\nmax_namespaces = -3")),
                vec!["\"shop\" (#1)", "max_namespaces", "-3"],
            ),
            (
                base(&format!("token_sha256 = \"{HASH}\"\nmax_namespaces = 2000000")),
                vec!["\"shop\" (#1)", "max_namespaces", "2000000"],
            ),
            (
                base(&format!("token_sha256 = \"{HASH}\"\nmax_namespaces = \"two\"")),
                vec!["max_namespaces"],
            ),
            (
                "[[principal]]\nname = \"a\"\nroles = [\"admin\"]\nnamespaces = [\"*\"]\n\
                 client_cert_subject = \"ops.internal\"\n\
                 [[principal]]\nname = \"b\"\nroles = [\"reader\"]\nnamespaces = [\"a\"]\n\
                 client_cert_subject = \"ops.internal\"\n"
                    .to_owned(),
                vec!["\"b\" (#2)", "client_cert_subject", "\"ops.internal\"", "one principal"],
            ),
        ] {
            let message = error(&text);
            for needle in needles {
                assert!(message.contains(needle), "{message:?} lacks {needle:?} for:\n{text}");
            }
        }
    }

    /// Pins (issue 29 item 5): `max_jobs` and `max_schedules` are from 1 up, and
    /// need a `max_namespaces` of at most 10,000, the namespaces their totals are
    /// summed over; each mistake names the principal and the field.
    #[test]
    fn the_counted_limits_need_a_bounded_max_namespaces() {
        let base = |extra: &str| {
            format!(
                "[[principal]]\nname = \"shop\"\nroles = [\"producer\"]\nnamespaces = [\"a\"]\n\
                 token_sha256 = \"{HASH}\"\n{extra}"
            )
        };
        for (extra, needles) in [
            ("max_jobs = 10", vec!["max_jobs", "needs max_namespaces"]),
            (
                "max_schedules = 10",
                vec!["max_schedules", "needs max_namespaces"],
            ),
            (
                "max_namespaces = 20000\nmax_jobs = 10",
                vec!["max_namespaces", "20000 is over 10000", "max_jobs"],
            ),
            (
                "max_namespaces = 2\nmax_jobs = 0",
                vec!["max_jobs", "0 is not from 1"],
            ),
            (
                "max_namespaces = 2\nmax_schedules = -1",
                vec!["max_schedules", "-1 is not from 1"],
            ),
        ] {
            let message = error(&base(extra));
            assert!(message.contains("\"shop\" (#1)"), "{message}");
            for needle in needles {
                assert!(
                    message.contains(needle),
                    "{message:?} lacks {needle:?} for {extra}"
                );
            }
        }
        let good = parse(&base("max_namespaces = 10000\nmax_schedules = 7"), &|_| {
            None
        })
        .expect("loads");
        assert_eq!(good.principals[0].max_schedules, Some(7));
    }

    #[test]
    fn the_compose_auth_file_loads_with_its_environment() {
        let text = include_str!("../../deploy/auth.toml");
        assert!(parse(text, &|_| None)
            .expect_err("refused without the hash")
            .contains("DUEQ_TOKEN_SHA256 is not set"));
        let env = |var: &str| (var == "DUEQ_TOKEN_SHA256").then(|| HASH.to_owned());
        let principals = parse(text, &env).expect("loads");
        assert!(principals.authenticate(Some("secret-token"), &[]).is_some());
    }

    #[test]
    fn the_hash_may_come_from_the_environment() {
        let text = "[[principal]]\nname = \"app\"\nroles = [\"admin\"]\nnamespaces = [\"*\"]\n\
                    token_sha256_env = \"DUEQ_TOKEN_SHA256\"\n";
        let env = |var: &str| (var == "DUEQ_TOKEN_SHA256").then(|| super::tests::HASH.to_owned());
        let principals = parse(text, &env).expect("loads");
        assert!(principals.authenticate(Some("secret-token"), &[]).is_some());
    }
}
