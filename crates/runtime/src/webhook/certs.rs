//! The webhook's serving certificate: read from files (a Secret mounted from cert-manager or
//! Volcano's admission-init job) and re-read when they change, or generated in process (a CA
//! and a certificate it signs), and renewed before it expires. Either way the handshake takes
//! whatever is current, so a new certificate is served without a restart.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use time::OffsetDateTime;

use super::WebhookError;

/// How long a generated certificate is valid. It is renewed once two thirds of that has passed.
pub const GENERATED_VALIDITY: time::Duration = time::Duration::days(365);

/// Where the certificate comes from.
#[derive(Debug, Clone)]
pub enum CertSource {
    /// PEM files: the serving certificate (chain), its key, and the CA for `caBundle`.
    Files {
        /// `--tls-cert-file`.
        cert: PathBuf,
        /// `--tls-private-key-file`.
        key: PathBuf,
        /// `--ca-cert-file`.
        ca: PathBuf,
    },
    /// A CA generated at start, and a certificate for `names` it signs.
    Generated {
        /// DNS names and IP addresses the API server may reach the webhook at.
        names: Vec<String>,
        /// How long each generation is valid.
        validity: time::Duration,
    },
}

/// One certificate in use: what the handshake serves and the CA bundle that trusts it.
#[derive(Debug, Clone)]
pub struct Issued {
    /// The certificate chain and key, ready for rustls.
    pub key: Arc<CertifiedKey>,
    /// PEM of the CA(s) to write into the webhook configurations' `caBundle`.
    pub ca_bundle: Vec<u8>,
    /// When the serving certificate should be replaced (generated certificates only).
    pub renew_at: Option<OffsetDateTime>,
    /// What the files looked like when read (file certificates only): size and mtime of each.
    pub(crate) stamp: Option<Vec<(u64, Option<SystemTime>)>>,
}

impl CertSource {
    /// Reads or generates a certificate.
    pub fn issue(&self) -> Result<Issued, WebhookError> {
        match self {
            CertSource::Files { cert, key, ca } => read_files(cert, key, ca),
            CertSource::Generated { names, validity } => generate(names, *validity),
        }
    }

    /// Whether `current` should be replaced now: its files changed, or it is due for renewal.
    pub fn is_stale(&self, current: &Issued) -> bool {
        match self {
            CertSource::Files { cert, key, ca } => {
                current.stamp.as_ref() != Some(&stamp(&[cert, key, ca]))
            }
            CertSource::Generated { .. } => current
                .renew_at
                .is_some_and(|at| OffsetDateTime::now_utc() >= at),
        }
    }
}

fn stamp(paths: &[&PathBuf]) -> Vec<(u64, Option<SystemTime>)> {
    paths
        .iter()
        .map(|p| match std::fs::metadata(p) {
            Ok(m) => (m.len(), m.modified().ok()),
            Err(_) => (0, None),
        })
        .collect()
}

fn read_files(cert: &PathBuf, key: &PathBuf, ca: &PathBuf) -> Result<Issued, WebhookError> {
    let bad = |path: &PathBuf, message: String| WebhookError::Certificate {
        source_name: path.display().to_string(),
        message,
    };
    let stamp_before = stamp(&[cert, key, ca]);
    let read = |path: &PathBuf| std::fs::read(path).map_err(|e| bad(path, e.to_string()));
    let cert_pem = read(cert)?;
    let key_pem = read(key)?;
    let ca_pem = read(ca)?;
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| bad(cert, format!("not a PEM certificate: {e}")))?;
    if chain.is_empty() {
        return Err(bad(cert, "holds no certificate".into()));
    }
    if CertificateDer::pem_slice_iter(&ca_pem).next().is_none() {
        return Err(bad(ca, "holds no certificate".into()));
    }
    let private = PrivateKeyDer::from_pem_slice(&key_pem)
        .map_err(|e| bad(key, format!("not a PEM private key: {e}")))?;
    let signer = rustls::crypto::ring::sign::any_supported_type(&private)
        .map_err(|e| bad(key, format!("unusable private key: {e}")))?;
    let certified = CertifiedKey::new(chain, signer);
    certified
        .keys_match()
        .map_err(|e| bad(key, format!("does not match {}: {e}", cert.display())))?;
    Ok(Issued {
        key: Arc::new(certified),
        ca_bundle: ca_pem,
        renew_at: None,
        stamp: Some(stamp_before),
    })
}

fn generate(names: &[String], validity: time::Duration) -> Result<Issued, WebhookError> {
    let failed = |e: rcgen::Error| WebhookError::Certificate {
        source_name: "generated certificate".into(),
        message: e.to_string(),
    };
    let now = OffsetDateTime::now_utc();
    // A minute of slack for clocks a little behind ours.
    let not_before = now - time::Duration::minutes(1);
    let not_after = now + validity;

    let ca_key = rcgen::KeyPair::generate().map_err(failed)?;
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(failed)?;
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "volcano-admission-ca");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Constrained(0));
    ca_params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    ca_params.not_before = not_before;
    ca_params.not_after = not_after;
    let ca_cert = ca_params.self_signed(&ca_key).map_err(failed)?;
    let issuer = rcgen::Issuer::new(ca_params, ca_key);

    let key = rcgen::KeyPair::generate().map_err(failed)?;
    let mut params = rcgen::CertificateParams::new(names.to_vec()).map_err(failed)?;
    params.distinguished_name.push(
        rcgen::DnType::CommonName,
        names
            .first()
            .map(String::as_str)
            .unwrap_or("volcano-admission"),
    );
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    params.not_before = not_before;
    params.not_after = not_after;
    let cert = params.signed_by(&key, &issuer).map_err(failed)?;

    let private = PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes()).map_err(|e| {
        WebhookError::Certificate {
            source_name: "generated certificate".into(),
            message: e.to_string(),
        }
    })?;
    let signer = rustls::crypto::ring::sign::any_supported_type(&private).map_err(|e| {
        WebhookError::Certificate {
            source_name: "generated certificate".into(),
            message: e.to_string(),
        }
    })?;
    let chain = vec![cert.der().clone()];
    Ok(Issued {
        key: Arc::new(CertifiedKey::new(chain, signer)),
        ca_bundle: ca_cert.pem().into_bytes(),
        renew_at: Some(now + validity * 2 / 3),
        stamp: None,
    })
}

/// The certificate the handshake serves: swapped whole when a new one is issued.
#[derive(Debug, Clone)]
pub struct CurrentCert(Arc<RwLock<Arc<CertifiedKey>>>);

impl CurrentCert {
    /// Starts with `key`.
    pub fn new(key: Arc<CertifiedKey>) -> Self {
        CurrentCert(Arc::new(RwLock::new(key)))
    }

    /// Serves `key` from the next handshake on.
    pub fn replace(&self, key: Arc<CertifiedKey>) {
        // A poisoned lock only means a panic elsewhere mid-swap; the value is still whole.
        let mut guard = self.0.write().unwrap_or_else(|p| p.into_inner());
        *guard = key;
    }

    fn get(&self) -> Arc<CertifiedKey> {
        self.0.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl ResolvesServerCert for CurrentCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.get())
    }
}

/// The names a generated certificate covers: the Service's DNS names and the host of the URL.
pub fn names_for(service: Option<(&str, &str)>, url: Option<&str>) -> Vec<String> {
    let mut names = Vec::new();
    if let Some((namespace, name)) = service {
        names.push(format!("{name}.{namespace}.svc"));
        names.push(name.to_string());
        names.push(format!("{name}.{namespace}"));
        names.push(format!("{name}.{namespace}.svc.cluster.local"));
    }
    if let Some(host) = url.and_then(url_host) {
        names.push(host);
    }
    if names.is_empty() {
        names.push("localhost".into());
    }
    names
}

/// The host of an `https://host[:port]/path` URL, without brackets around an IPv6 address.
fn url_host(url: &str) -> Option<String> {
    let rest = url.strip_prefix("https://").unwrap_or(url);
    let authority = rest.split('/').next()?;
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next()?
    } else {
        authority.split(':').next()?
    };
    (!host.is_empty()).then(|| host.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_certificate_names_the_service_and_the_url_host() {
        let names = names_for(
            Some(("volcano-system", "volcano-admission-service")),
            Some("https://127.0.0.1:8443"),
        );
        assert_eq!(names[0], "volcano-admission-service.volcano-system.svc");
        assert!(names.contains(&"127.0.0.1".to_string()), "{names:?}");
        assert_eq!(url_host("https://[::1]:9443/x").as_deref(), Some("::1"));
    }

    #[test]
    fn a_generated_certificate_is_renewed_after_two_thirds_of_its_life() {
        let source = CertSource::Generated {
            names: vec!["localhost".into()],
            validity: time::Duration::hours(3),
        };
        let issued = source.issue().unwrap_or_else(|e| panic!("{e}"));
        assert!(!source.is_stale(&issued));
        let renew = issued.renew_at.unwrap_or_else(|| panic!("no renewal time"));
        let in_two_hours = OffsetDateTime::now_utc() + time::Duration::hours(2);
        assert!((renew - in_two_hours).abs() < time::Duration::minutes(1));
        assert!(String::from_utf8_lossy(&issued.ca_bundle).contains("BEGIN CERTIFICATE"));
    }

    #[test]
    fn unreadable_files_are_named() {
        let dir = std::env::temp_dir().join(format!("vc-certs-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let cert = dir.join("tls.crt");
        let _ = std::fs::write(&cert, "not pem");
        let source = CertSource::Files {
            cert: cert.clone(),
            key: dir.join("tls.key"),
            ca: dir.join("ca.crt"),
        };
        let e = source.issue().map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("tls.key"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
