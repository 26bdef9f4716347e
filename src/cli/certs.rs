//! `dueq certs`: writes a local CA, a server certificate and a client certificate
//! (`dueq::certs`) to a folder, then prints the exact `dueq serve` flags, `DUEQ_*`
//! variables and grpcurl line that use them. Existing files are kept unless --force.

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::ExitCode,
};

use dueq::config::CertsConfig;

/// The files written, in --out.
const CA: &str = "ca.pem";
const SERVER: &str = "server.pem";
const SERVER_KEY: &str = "server-key.pem";
const CLIENT: &str = "client.pem";
const CLIENT_KEY: &str = "client-key.pem";
const FILES: [&str; 5] = [CA, SERVER, SERVER_KEY, CLIENT, CLIENT_KEY];

/// Where the printed lines say the service is: `dueq serve`'s default --listen.
const ADDR: &str = "127.0.0.1:50051";

pub(crate) fn run(config: CertsConfig) -> ExitCode {
    match write(&config) {
        Ok(dir) => {
            print!("{}", instructions(&dir, &config));
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("dueq certs: {error}");
            ExitCode::FAILURE
        }
    }
}

/// `dueq dev --tls`'s certificates, in `data_dir`'s tls/: the ones there if every
/// file is, else new ones. The folder, absolute.
pub(crate) fn for_dev(data_dir: &Path) -> Result<PathBuf, String> {
    let out = data_dir.join("tls");
    if FILES.iter().all(|name| out.join(name).exists()) {
        return Ok(out);
    }
    write(&CertsConfig {
        out,
        hosts: Vec::new(),
        client: "dueq-client".into(),
        days: 365,
        force: true,
    })
}

/// The `DUEQ_*` variables and grpcurl line for `dueq dev --tls` serving on `listen`
/// with the certificates in `dir` (TLS without client certificates).
pub(crate) fn dev_lines(dir: &Path, listen: &str) -> [String; 2] {
    let ca = quote(&dir.join(CA).display().to_string());
    [
        format!("export DUEQ_ADDR=https://{listen} DUEQ_TLS_CA={ca}"),
        format!("grpcurl -cacert {ca} {listen} list"),
    ]
}

/// Makes the certificates and writes them; the folder, absolute.
fn write(config: &CertsConfig) -> Result<PathBuf, String> {
    let out = &config.out;
    let set = dueq::certs::make(&config.hosts, &config.client, config.days)?;
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let dir = std::fs::canonicalize(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let present: Vec<&str> = FILES
        .into_iter()
        .filter(|name| dir.join(name).exists())
        .collect();
    if !present.is_empty() && !config.force {
        return Err(format!(
            "{} already holds {}: not replaced (--force replaces them)",
            dir.display(),
            present.join(", ")
        ));
    }
    let files = [
        (CA, &set.ca, false),
        (SERVER, &set.server.cert, false),
        (SERVER_KEY, &set.server.key, true),
        (CLIENT, &set.client.cert, false),
        (CLIENT_KEY, &set.client.key, true),
    ];
    for (name, pem, secret) in files {
        let path = dir.join(name);
        write_file(&path, pem, secret)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(dir)
}

/// Writes `text` to `path`; a `secret` (a private key) readable by its owner only.
fn write_file(path: &Path, text: &str, secret: bool) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let mode = if secret { 0o600 } else { 0o644 };
        options.mode(mode);
        let mut file = options.open(path)?;
        // A file replaced under --force keeps its old mode otherwise.
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        file.write_all(text.as_bytes())
    }
    #[cfg(not(unix))]
    {
        let _ = secret;
        options.open(path)?.write_all(text.as_bytes())
    }
}

/// What was written, and the lines that use it; each command line is indented by
/// two spaces, ready to copy.
fn instructions(dir: &Path, config: &CertsConfig) -> String {
    let file = |name: &str| quote(&dir.join(name).display().to_string());
    let mut names: Vec<String> = dueq::certs::LOCAL_NAMES.map(String::from).to_vec();
    names.extend(
        config
            .hosts
            .iter()
            .filter(|h| !names.contains(h))
            .cloned()
            .collect::<Vec<_>>(),
    );
    let client = &config.client;
    format!(
        "dueq certs: wrote {dir} (valid {days} days)\n\
         \x20 {CA:<28} the CA: clients trust it; the service checks client certificates with it\n\
         \x20 {:<28} the service's certificate, for {names}\n\
         \x20 {:<28} a client certificate named {client:?}\n\
         \n\
         Serve over TLS, requiring a client certificate of the CA (mTLS; without\n\
         --tls-client-ca, TLS alone):\n\
         \x20 dueq serve --tls-cert {server} --tls-key {server_key} --tls-client-ca {ca}\n\
         \n\
         An auth file's principal for the client certificate (docs/security.md):\n\
         \x20 client_cert_subject = {client:?}\n\
         \n\
         The dueq CLI and the client libraries read:\n\
         \x20 export DUEQ_ADDR=https://{ADDR}\n\
         \x20 export DUEQ_TLS_CA={ca}\n\
         \x20 export DUEQ_TLS_CLIENT_CERT={client_cert}\n\
         \x20 export DUEQ_TLS_CLIENT_KEY={client_key}\n\
         \n\
         grpcurl:\n\
         \x20 grpcurl -cacert {ca} -cert {client_cert} -key {client_key} {ADDR} list\n",
        format!("{SERVER}, {SERVER_KEY}"),
        format!("{CLIENT}, {CLIENT_KEY}"),
        dir = dir.display(),
        days = config.days,
        names = names.join(", "),
        server = file(SERVER),
        server_key = file(SERVER_KEY),
        ca = file(CA),
        client_cert = file(CLIENT),
        client_key = file(CLIENT_KEY),
    )
}

/// `text` as one shell word: bare when it is plain, else in single quotes.
fn quote(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:,=@%".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        return text.to_owned();
    }
    format!("'{}'", text.replace('\'', r"'\''"))
}
