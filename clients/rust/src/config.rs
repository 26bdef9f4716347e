//! How to reach the service: address, namespace, bearer token, TLS and timeouts,
//! from arguments or the `DUEQ_*` environment variables the `dueq` CLI reads.

use std::{fmt, path::PathBuf, time::Duration};

use crate::error::{Error, Result};

/// The address used when neither an argument nor `DUEQ_ADDR` gives one.
pub const DEFAULT_ADDR: &str = "http://127.0.0.1:50051";
/// The namespace used when neither an argument nor `DUEQ_NAMESPACE` gives one.
pub const DEFAULT_NAMESPACE: &str = "default";
/// The service's default `--max-payload-size`: 1 MiB.
pub const DEFAULT_MAX_PAYLOAD_SIZE: usize = 1024 * 1024;
/// How long a connection attempt and each unary call may take unless told.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Connection settings for [`Client::connect`](crate::Client::connect).
///
/// Start from [`Config::from_env`] (the `DUEQ_*` variables, defaults for the rest)
/// or [`Config::new`] (an address), then override with the builder methods: an
/// argument wins over its variable.
///
/// | variable | setting |
/// |---|---|
/// | `DUEQ_ADDR` | [`addr`](Config::addr): `http://host:port`, or `https://` for TLS (default `http://127.0.0.1:50051`) |
/// | `DUEQ_TOKEN` | [`token`](Config::token): sent as `authorization: Bearer <token>` |
/// | `DUEQ_NAMESPACE` | [`namespace`](Config::namespace) (default `default`) |
/// | `DUEQ_TLS_CA` | [`tls_ca`](Config::tls_ca): PEM CA file to trust instead of the system store |
/// | `DUEQ_TLS_CLIENT_CERT`, `DUEQ_TLS_CLIENT_KEY` | [`tls_client_cert`](Config::tls_client_cert): mTLS |
/// | `DUEQ_TLS_SERVER_NAME` | [`tls_server_name`](Config::tls_server_name) |
///
/// ```no_run
/// # async fn f() -> dueq_client::Result<()> {
/// use dueq_client::{Client, Config};
/// let client = Client::connect(Config::from_env()?.namespace("shop")).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Config {
    pub(crate) addr: String,
    pub(crate) token: Option<String>,
    pub(crate) namespace: String,
    pub(crate) tls_ca: Option<PathBuf>,
    pub(crate) tls_client_cert: Option<PathBuf>,
    pub(crate) tls_client_key: Option<PathBuf>,
    pub(crate) tls_server_name: Option<String>,
    pub(crate) timeout: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) max_payload_size: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config::new(DEFAULT_ADDR)
    }
}

// By hand: the token must never show in a Debug print.
impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("addr", &self.addr)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("namespace", &self.namespace)
            .field("tls_ca", &self.tls_ca)
            .field("tls_client_cert", &self.tls_client_cert)
            .field("tls_client_key", &self.tls_client_key)
            .field("tls_server_name", &self.tls_server_name)
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_payload_size", &self.max_payload_size)
            .finish()
    }
}

impl Config {
    /// Settings for `addr` (`http://host:port`, `https://host:port`, or a bare
    /// `host:port`, plaintext unless a TLS setting is given), defaults for the rest;
    /// the environment is not read.
    pub fn new(addr: impl Into<String>) -> Config {
        Config {
            addr: addr.into(),
            token: None,
            namespace: DEFAULT_NAMESPACE.into(),
            tls_ca: None,
            tls_client_cert: None,
            tls_client_key: None,
            tls_server_name: None,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_TIMEOUT,
            max_payload_size: DEFAULT_MAX_PAYLOAD_SIZE,
        }
    }

    /// Settings from the `DUEQ_*` environment variables (table above), defaults for
    /// what is unset. A variable set to an empty string counts as unset. Fails
    /// (InvalidArgument naming the variable) on a value that is not UTF-8.
    pub fn from_env() -> Result<Config> {
        let mut bad = None;
        let config = Config::from_lookup(|name| match std::env::var(name) {
            Ok(value) => Some(value),
            Err(std::env::VarError::NotPresent) => None,
            Err(std::env::VarError::NotUnicode(_)) => {
                bad.get_or_insert(name.to_owned());
                None
            }
        });
        match bad {
            Some(name) => Err(Error::invalid(&name, "is not valid UTF-8")),
            None => Ok(config),
        }
    }

    /// Settings from `lookup(variable name)` as [`Config::from_env`] reads the
    /// environment: for tests, or a configuration source of your own.
    pub fn from_lookup(mut lookup: impl FnMut(&str) -> Option<String>) -> Config {
        let mut var = |name: &str| lookup(name).filter(|value| !value.is_empty());
        let mut config = Config::new(var("DUEQ_ADDR").unwrap_or_else(|| DEFAULT_ADDR.into()));
        config.token = var("DUEQ_TOKEN");
        if let Some(namespace) = var("DUEQ_NAMESPACE") {
            config.namespace = namespace;
        }
        config.tls_ca = var("DUEQ_TLS_CA").map(PathBuf::from);
        config.tls_client_cert = var("DUEQ_TLS_CLIENT_CERT").map(PathBuf::from);
        config.tls_client_key = var("DUEQ_TLS_CLIENT_KEY").map(PathBuf::from);
        config.tls_server_name = var("DUEQ_TLS_SERVER_NAME");
        config
    }

    /// The service's address.
    pub fn addr(mut self, addr: impl Into<String>) -> Config {
        self.addr = addr.into();
        self
    }

    /// The bearer token sent with every call (a service with `--auth-file`).
    pub fn token(mut self, token: impl Into<String>) -> Config {
        self.token = Some(token.into());
        self
    }

    /// The namespace every call works in.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Config {
        self.namespace = namespace.into();
        self
    }

    /// A PEM file of the CA certificate(s) to trust for the service's certificate,
    /// instead of the system trust store. Implies TLS.
    pub fn tls_ca(mut self, path: impl Into<PathBuf>) -> Config {
        self.tls_ca = Some(path.into());
        self
    }

    /// The PEM client certificate and private key to present (mTLS: a service with
    /// `--tls-client-ca`). Implies TLS.
    pub fn tls_client_cert(mut self, cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Config {
        self.tls_client_cert = Some(cert.into());
        self.tls_client_key = Some(key.into());
        self
    }

    /// The name to check the service's certificate against, when it is not the
    /// host of the address. Implies TLS.
    pub fn tls_server_name(mut self, name: impl Into<String>) -> Config {
        self.tls_server_name = Some(name.into());
        self
    }

    /// How long each unary call may take (default 10 s); a call that runs out is
    /// `DeadlineExceeded`. Streams and long-polls are not cut by it.
    pub fn timeout(mut self, timeout: Duration) -> Config {
        self.timeout = timeout;
        self
    }

    /// How long opening a connection may take (default 10 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Config {
        self.connect_timeout = timeout;
        self
    }

    /// The largest payload an enqueue sends (default 1 MiB, the service's default
    /// `--max-payload-size`); a larger one is InvalidArgument naming `payload`,
    /// and nothing is sent.
    pub fn max_payload_size(mut self, bytes: usize) -> Config {
        self.max_payload_size = bytes;
        self
    }

    /// Whether any TLS setting is given.
    pub(crate) fn wants_tls(&self) -> bool {
        self.tls_ca.is_some()
            || self.tls_client_cert.is_some()
            || self.tls_client_key.is_some()
            || self.tls_server_name.is_some()
    }

    /// The address with its scheme: a bare `host:port` is `https://` with TLS
    /// settings and `http://` without. `http://` with TLS settings is refused.
    pub(crate) fn url(&self) -> Result<String> {
        let addr = self.addr.trim();
        if addr.is_empty() {
            return Err(Error::invalid("addr", "must not be empty"));
        }
        if let Some((scheme, _)) = addr.split_once("://") {
            return match scheme {
                "https" => Ok(addr.to_owned()),
                "http" if self.wants_tls() => Err(Error::invalid(
                    "addr",
                    format!("{addr} is plaintext but TLS settings are given: use https://"),
                )),
                "http" => Ok(addr.to_owned()),
                _ => Err(Error::invalid(
                    "addr",
                    format!("{addr}: the scheme must be http:// or https://"),
                )),
            };
        }
        let scheme = if self.wants_tls() { "https" } else { "http" };
        Ok(format!("{scheme}://{addr}"))
    }

    /// Checks what can be checked without the network.
    pub(crate) fn validate(&self) -> Result<()> {
        self.url()?;
        if self.namespace.is_empty() {
            return Err(Error::invalid("namespace", "must not be empty"));
        }
        match (&self.tls_client_cert, &self.tls_client_key) {
            (Some(_), None) => Err(Error::invalid(
                "tls_client_key",
                "a client certificate needs its key (DUEQ_TLS_CLIENT_KEY)",
            )),
            (None, Some(_)) => Err(Error::invalid(
                "tls_client_cert",
                "a client key needs its certificate (DUEQ_TLS_CLIENT_CERT)",
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::ErrorKind;

    fn from(vars: &[(&str, &str)]) -> Config {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|name| vars.get(name).cloned())
    }

    #[test]
    fn defaults_when_nothing_is_set() {
        let c = from(&[]);
        assert_eq!(c.addr, DEFAULT_ADDR);
        assert_eq!(c.namespace, "default");
        assert_eq!(c.token, None);
        assert!(!c.wants_tls());
        assert_eq!(c.url().unwrap(), "http://127.0.0.1:50051");
        assert_eq!(c.max_payload_size, 1024 * 1024);
    }

    #[test]
    fn every_variable_is_read() {
        let c = from(&[
            ("DUEQ_ADDR", "https://q.example:443"),
            ("DUEQ_TOKEN", "s3cret"),
            ("DUEQ_NAMESPACE", "shop"),
            ("DUEQ_TLS_CA", "/ca.pem"),
            ("DUEQ_TLS_CLIENT_CERT", "/c.pem"),
            ("DUEQ_TLS_CLIENT_KEY", "/k.pem"),
            ("DUEQ_TLS_SERVER_NAME", "dueq.internal"),
        ]);
        assert_eq!(c.addr, "https://q.example:443");
        assert_eq!(c.token.as_deref(), Some("s3cret"));
        assert_eq!(c.namespace, "shop");
        assert_eq!(c.tls_ca, Some(PathBuf::from("/ca.pem")));
        assert_eq!(c.tls_client_cert, Some(PathBuf::from("/c.pem")));
        assert_eq!(c.tls_client_key, Some(PathBuf::from("/k.pem")));
        assert_eq!(c.tls_server_name.as_deref(), Some("dueq.internal"));
        c.validate().unwrap();
    }

    #[test]
    fn an_argument_wins_over_its_variable() {
        let c = from(&[("DUEQ_NAMESPACE", "env"), ("DUEQ_TOKEN", "env")])
            .namespace("arg")
            .token("arg");
        assert_eq!(c.namespace, "arg");
        assert_eq!(c.token.as_deref(), Some("arg"));
    }

    #[test]
    fn an_empty_variable_counts_as_unset() {
        let c = from(&[("DUEQ_NAMESPACE", ""), ("DUEQ_TOKEN", "")]);
        assert_eq!(c.namespace, "default");
        assert_eq!(c.token, None);
    }

    #[test]
    fn the_scheme_follows_the_tls_settings() {
        assert_eq!(Config::new("h:1").url().unwrap(), "http://h:1");
        assert_eq!(
            Config::new("h:1").tls_ca("/ca").url().unwrap(),
            "https://h:1"
        );
        let e = Config::new("http://h:1").tls_ca("/ca").url().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().starts_with("addr: "), "{e}");
        let e = Config::new("ftp://h:1").url().unwrap_err();
        assert!(e.message().starts_with("addr: "), "{e}");
    }

    #[test]
    fn a_client_cert_needs_its_key() {
        let e = from(&[
            ("DUEQ_ADDR", "https://h:1"),
            ("DUEQ_TLS_CLIENT_CERT", "/c.pem"),
        ])
        .validate()
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().starts_with("tls_client_key: "), "{e}");
    }

    #[test]
    fn the_token_is_not_printed() {
        let printed = format!("{:?}", Config::new("h:1").token("s3cret"));
        assert!(!printed.contains("s3cret"), "{printed}");
    }
}
