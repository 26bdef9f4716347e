//! Certificates for a local or first set-up (`dueq certs`): a CA of its own, a server
//! certificate it signs whose subjectAltName lists every name clients dial (modern
//! clients ignore the CN, see `tls::files`), and a client certificate for mTLS whose
//! name an auth file's `client_cert_subject` matches. Made in memory; the caller
//! writes the files.

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

/// The names every server certificate carries, before `--host`'s.
pub const LOCAL_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// A certificate and its private key, PEM.
pub struct Pem {
    pub cert: String,
    pub key: String,
}

/// What `make` returns: the CA's certificate (its key is dropped: nothing else can be
/// signed by it), the server's and the client's.
pub struct Set {
    pub ca: String,
    pub server: Pem,
    pub client: Pem,
    /// The server certificate's names, in order.
    pub server_names: Vec<String>,
}

/// A CA, a server certificate for [`LOCAL_NAMES`] and `hosts` (DNS names or IP
/// addresses), and a client certificate named `client` (its CN and DNS SAN), each
/// valid from today for `days` days (the CA for as long). An error names the value
/// that cannot go into a certificate.
pub fn make(hosts: &[String], client: &str, days: u32) -> Result<Set, String> {
    for (flag, name) in hosts
        .iter()
        .map(|h| ("--host", h))
        .chain([("--client", &client.to_owned())])
    {
        if !is_host_name(name) {
            return Err(format!(
                "{flag} {name:?}: not a DNS name (letters, digits, '-' and '.') or an IP address"
            ));
        }
    }
    let dates = validity(days);
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(|e| e.to_string())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca.distinguished_name
        .push(DnType::CommonName, "dueq local CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    dated(&mut ca, dates);
    let ca_key = KeyPair::generate().map_err(|e| format!("a CA key: {e}"))?;
    let issuer = CertifiedIssuer::self_signed(ca, ca_key).map_err(|e| format!("the CA: {e}"))?;

    let mut server_names: Vec<String> = LOCAL_NAMES.iter().map(|n| n.to_string()).collect();
    for host in hosts {
        if !server_names.contains(host) {
            server_names.push(host.clone());
        }
    }
    let leaf = |names: Vec<String>, cn: &str, usage| -> Result<Pem, String> {
        let mut params =
            CertificateParams::new(names).map_err(|e| format!("--host or --client: {e}"))?;
        params.distinguished_name.push(DnType::CommonName, cn);
        params.use_authority_key_identifier_extension = true;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![usage];
        dated(&mut params, dates);
        let key = KeyPair::generate().map_err(|e| format!("a key: {e}"))?;
        let cert = params
            .signed_by(&key, &issuer)
            .map_err(|e| format!("signing {cn:?}: {e}"))?;
        Ok(Pem {
            cert: cert.pem(),
            key: key.serialize_pem(),
        })
    };
    let server = leaf(
        server_names.clone(),
        &server_names[0],
        ExtendedKeyUsagePurpose::ServerAuth,
    )?;
    let client = leaf(
        vec![client.to_owned()],
        client,
        ExtendedKeyUsagePurpose::ClientAuth,
    )?;
    Ok(Set {
        ca: issuer.pem(),
        server,
        client,
        server_names,
    })
}

type Ymd = (i32, u32, u32);

/// From the start of today (UTC, this host's clock: the one clients check the dates
/// against) to `days` days later.
fn validity(days: u32) -> (Ymd, Ymd) {
    use chrono::Datelike;
    let day = |secs: i64| {
        let date = chrono::DateTime::from_timestamp(secs, 0).unwrap_or_default();
        (date.year(), date.month(), date.day())
    };
    let now = crate::clock::local_ms() / 1000;
    (day(now), day(now + i64::from(days) * 86_400))
}

fn dated(params: &mut CertificateParams, (from, to): (Ymd, Ymd)) {
    // chrono's month (1-12) and day (1-31) fit a u8.
    let ymd = |(year, month, day): Ymd| rcgen::date_time_ymd(year, month as u8, day as u8);
    params.not_before = ymd(from);
    params.not_after = ymd(to);
}

/// An IP address, or a DNS name: dot-separated labels of ASCII letters, digits and
/// '-' (not at a label's ends), the first of which may be `*`.
fn is_host_name(name: &str) -> bool {
    if name.parse::<std::net::IpAddr>().is_ok() {
        return true;
    }
    let label = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    let mut labels = name.split('.');
    let first = labels.next().unwrap_or_default();
    name.len() <= 253 && (first == "*" || label(first)) && labels.all(label)
}

#[cfg(test)]
mod tests {
    use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};

    use super::make;

    fn der(pem: &str) -> Vec<u8> {
        use rustls_pki_types::{pem::PemObject, CertificateDer};
        CertificateDer::from_pem_slice(pem.as_bytes())
            .expect("PEM")
            .to_vec()
    }

    #[test]
    fn the_server_certificate_names_every_host_in_its_subject_alt_name() {
        let set = make(&["dueq.internal".into(), "10.0.0.7".into()], "app-1", 30).expect("make");
        let der = der(&set.server.cert);
        let (_, cert) = X509Certificate::from_der(&der).expect("X.509");
        let san = cert
            .subject_alternative_name()
            .expect("SAN")
            .expect("a SAN extension");
        let names: Vec<String> = san
            .value
            .general_names
            .iter()
            .map(|name| match name {
                GeneralName::DNSName(dns) => dns.to_string(),
                GeneralName::IPAddress(ip) => format!("ip:{ip:?}"),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(names[0], "localhost");
        assert_eq!(names[1], "ip:[127, 0, 0, 1]");
        assert!(names.contains(&"dueq.internal".to_owned()), "{names:?}");
        assert!(names.contains(&"ip:[10, 0, 0, 7]".to_owned()), "{names:?}");
        let days = (cert.validity().not_after.timestamp() - cert.validity().not_before.timestamp())
            / 86_400;
        assert_eq!(days, 30);
        assert!(make(&["not a name!".into()], "c", 1).is_err());
    }
}
