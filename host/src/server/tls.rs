//! Serving A2A over https: `[tls] cert_file` and `key_file` (PEM) make the
//! server speak TLS itself, so bearer tokens never cross a network in clear
//! text and no proxy is needed in front.
//!
//! The server's own loop ([`serve`](super::serve)) runs each handshake in
//! its connection's task, under the connection cap and for at most
//! `[limits] tls_handshake_timeout_secs`. [`TlsListener`] is the same for a
//! plain `axum::serve` (tests use it for https webhooks and executors):
//! handshakes on tasks of their own, at most [`MAX_HANDSHAKES`] at a time and
//! each for at most [`HANDSHAKE_TIMEOUT`], so a client that connects and says
//! nothing holds up nobody else.

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::PrivateKeyDer;
use rustls::pki_types::pem::PemObject;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::outbound;

/// How long a client has to finish its TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Handshakes in progress at once; the next connection waits for a slot.
pub const MAX_HANDSHAKES: usize = 1024;

/// The server's certificate chain (`cert_file`) and its private key
/// (`key_file`), both PEM. Errors name the file and what is wrong with it.
pub fn acceptor(cert_file: &Path, key_file: &Path) -> Result<TlsAcceptor, String> {
    // The HTTP bindings speak HTTP/1.1 only.
    acceptor_for(cert_file, key_file, b"http/1.1")
}

/// The same identity for the gRPC listener, which speaks HTTP/2 (ALPN `h2`).
pub fn grpc_acceptor(cert_file: &Path, key_file: &Path) -> Result<TlsAcceptor, String> {
    acceptor_for(cert_file, key_file, b"h2")
}

fn acceptor_for(cert_file: &Path, key_file: &Path, alpn: &[u8]) -> Result<TlsAcceptor, String> {
    let chain = outbound::read_pem_certificates(cert_file)?;
    let key = PrivateKeyDer::from_pem_file(key_file)
        .map_err(|error| format!("{}: no PEM private key: {error}", key_file.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| error.to_string())?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|error| {
            format!(
                "{} and {} do not make a TLS identity: {error}",
                cert_file.display(),
                key_file.display()
            )
        })?;
    config.alpn_protocols = vec![alpn.to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// A listener whose connections have finished their TLS handshake.
pub struct TlsListener {
    handshaken: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local_addr: SocketAddr,
    accepting: JoinHandle<()>,
}

impl TlsListener {
    pub fn new(tcp: TcpListener, acceptor: TlsAcceptor) -> io::Result<Self> {
        let local_addr = tcp.local_addr()?;
        let (ready, handshaken) = mpsc::channel(64);
        let accepting = tokio::spawn(accept_connections(tcp, acceptor, ready));
        Ok(TlsListener {
            handshaken,
            local_addr,
            accepting,
        })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.handshaken.recv().await {
            Some(connection) => connection,
            // The accepting task is gone only when the listener is dropped.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.local_addr)
    }
}

/// Accept TCP connections and hand each to a handshake task.
async fn accept_connections(
    tcp: TcpListener,
    acceptor: TlsAcceptor,
    ready: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
) {
    let slots = Arc::new(Semaphore::new(MAX_HANDSHAKES));
    loop {
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
            return;
        };
        let (stream, peer) = match tcp.accept().await {
            Ok(connection) => connection,
            Err(error) => {
                // Out of file descriptors, say: wait rather than spin.
                tracing::warn!(%error, "cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let (acceptor, ready) = (acceptor.clone(), ready.clone());
        tokio::spawn(async move {
            let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await;
            drop(slot);
            match handshake {
                Ok(Ok(tls)) => {
                    let _ = ready.send((tls, peer)).await;
                }
                Ok(Err(error)) => tracing::debug!(%peer, %error, "TLS handshake failed"),
                Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_are_named_when_they_do_not_make_an_identity() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cert = dir.path().join("cert.pem");
        let key = dir.path().join("key.pem");
        let error = acceptor(&cert, &key).err().expect("missing files");
        assert!(error.contains("cert.pem"), "{error}");

        let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])
            .expect("a certificate");
        std::fs::write(&cert, certified.cert.pem()).expect("write");
        std::fs::write(&key, "not a key").expect("write");
        let error = acceptor(&cert, &key).err().expect("no key");
        assert!(error.contains("key.pem"), "{error}");

        let other = rcgen::generate_simple_self_signed(vec!["other".to_owned()]).expect("another");
        std::fs::write(&key, other.signing_key.serialize_pem()).expect("write");
        let error = acceptor(&cert, &key)
            .err()
            .expect("a key of another certificate");
        assert!(error.contains("do not make a TLS identity"), "{error}");

        std::fs::write(&key, certified.signing_key.serialize_pem()).expect("write");
        acceptor(&cert, &key).expect("a matching pair");
    }
}
