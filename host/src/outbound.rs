//! Outbound HTTP: the one way the harness builds the HTTP clients that call
//! out (push-notification webhooks, remote hook executors), over `http` or
//! `https`.
//!
//! TLS is rustls with the ring crypto provider, installed process-wide the
//! first time a client is built. Server certificates are checked against the
//! system's roots (the platform verifier) plus the operator's extra roots,
//! `[tls] extra_ca_files` in the configuration: PEM files, for webhooks and
//! executors behind a private CA.

use std::path::{Path, PathBuf};
use std::sync::Once;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// Certificates trusted on top of the system's roots.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ExtraRoots {
    /// (file it came from, the certificates it holds: at least one).
    bundles: Vec<(PathBuf, Vec<CertificateDer<'static>>)>,
}

impl ExtraRoots {
    /// Read every file of `paths` (PEM, one or more certificates each).
    /// Fails naming the file that cannot be read or holds no certificate.
    pub fn from_pem_files(paths: &[PathBuf]) -> Result<Self, String> {
        let bundles = paths
            .iter()
            .map(|path| Ok((path.clone(), read_pem_certificates(path)?)))
            .collect::<Result<_, String>>()?;
        Ok(ExtraRoots { bundles })
    }

    fn certificates(&self) -> Vec<reqwest::Certificate> {
        self.bundles
            .iter()
            .flat_map(|(path, certificates)| {
                certificates.iter().filter_map(move |der| {
                    // With rustls this only copies the bytes; it cannot fail.
                    reqwest::Certificate::from_der(der)
                        .inspect_err(|error| {
                            tracing::error!(file = %path.display(), %error, "skipping an extra CA certificate");
                        })
                        .ok()
                })
            })
            .collect()
    }
}

/// The certificates of the PEM file at `path`, at least one. Errors name the
/// file and what is wrong with it.
pub fn read_pem_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certificates: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .and_then(|certificates| certificates.collect())
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    if certificates.is_empty() {
        return Err(format!(
            "{} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
            path.display()
        ));
    }
    Ok(certificates)
}

// The files, not kilobytes of PEM, when a configuration is printed.
impl std::fmt::Debug for ExtraRoots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.bundles.iter().map(|(path, _)| path))
            .finish()
    }
}

/// A client builder that trusts the system's roots and `extra_roots`.
pub fn client_builder(extra_roots: &ExtraRoots) -> reqwest::ClientBuilder {
    install_crypto_provider();
    reqwest::Client::builder().tls_certs_merge(extra_roots.certificates())
}

/// What went wrong with an outbound request, every cause included ("...:
/// invalid peer certificate: UnknownIssuer"), without the URL (its query
/// could hold a secret; callers name the endpoint themselves).
pub fn describe(error: reqwest::Error) -> String {
    let error = error.without_url();
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// rustls needs a process-wide crypto provider before any client is built.
fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Fails only if an embedding program installed one first: theirs
        // is used, which is what they asked for.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_roots_name_the_file_that_is_missing_or_not_pem() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("missing.pem");
        let error =
            ExtraRoots::from_pem_files(std::slice::from_ref(&missing)).expect_err("missing");
        assert!(error.contains("missing.pem"), "{error}");

        let garbage = dir.path().join("garbage.pem");
        std::fs::write(&garbage, "not a certificate").expect("write");
        let error = ExtraRoots::from_pem_files(&[garbage]).expect_err("garbage");
        assert!(error.contains("garbage.pem"), "{error}");

        let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])
            .expect("a certificate");
        let good = dir.path().join("ca.pem");
        std::fs::write(&good, certified.cert.pem()).expect("write");
        let roots = ExtraRoots::from_pem_files(&[good]).expect("a PEM certificate");
        assert_eq!(roots.certificates().len(), 1);
        client_builder(&roots)
            .build()
            .expect("a client trusting it");
    }
}
