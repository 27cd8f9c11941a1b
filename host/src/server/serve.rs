//! The serve loop: accept connections under the cap (`connections`), speak
//! TLS when configured, hand each request to the router, and shut down
//! gracefully.
//!
//! * A connection has `header_read_timeout` to send a request's headers (the
//!   first request and each next one on a kept-alive connection), so clients
//!   that trickle bytes or sit idle cannot pin connections forever.
//!   `axum::serve` sets no timer, which leaves hyper's timeout off; hence
//!   this loop over hyper directly.
//! * TLS handshakes run in each connection's own task, so a client that
//!   connects and says nothing holds up nobody, for at most
//!   `tls_handshake_timeout`, and under the cap like any connection.
//! * Accepting never stops for long. An accept error that is about one
//!   connection (reset, aborted) is skipped. Any other, typically running
//!   out of file descriptors (`EMFILE`), closes the connection idle the
//!   longest to free a descriptor and retries after a short pause that
//!   doubles while the errors go on (10 ms to 1 s); both are logged at most
//!   every ten seconds. So descriptor exhaustion slows the server down for a
//!   moment instead of silencing it for everyone.
//! * The router sees each request with the peer's address as
//!   `ConnectInfo<SocketAddr>` (the rate limiter keys self-asserted callers
//!   by it).

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::{Arc, LazyLock};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::ConnectInfo;
use axum::http::{Request, Response};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

use super::SHUTDOWN_GRACE;
use super::connections::{Activity, Admission, Connections, InFlight, Notice, since_last};

/// The first pause after an accept error; it doubles up to [`MAX_ACCEPT_BACKOFF`].
const MIN_ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// The longest pause between accept attempts while errors go on.
const MAX_ACCEPT_BACKOFF: Duration = Duration::from_secs(1);

/// What a connection refused at the cap reads before it is closed.
static REFUSAL: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let body = "every connection is busy (limits.max_connections); retry in a moment\n";
    format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Retry-After: 1\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
});

/// The bounds the serve loop applies to connections.
#[derive(Clone, Copy, Debug)]
pub struct ConnectionLimits {
    /// Connections open at once, TLS handshakes included.
    pub max_connections: usize,
    /// Time to send a request's headers.
    pub header_read_timeout: Duration,
    /// Time to finish a TLS handshake.
    pub tls_handshake_timeout: Duration,
}

/// Serves `app` on `listener` (HTTP/1.1; over TLS with `tls`) until
/// `shutdown` resolves, then stops accepting connections and gives open
/// requests and streams [`SHUTDOWN_GRACE`] to finish before returning.
pub async fn serve(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    app: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let server = Arc::new(Shared {
        http,
        app,
        tls,
        tls_handshake_timeout: limits.tls_handshake_timeout,
    });
    let connections = Connections::new(limits.max_connections);
    let (stop, stopping) = watch::channel(false);
    let accept_notice = Notice::default();
    let mut backoff = MIN_ACCEPT_BACKOFF;
    let mut shutdown = pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let (stream, peer) = match accepted {
            Ok(connection) => {
                backoff = MIN_ACCEPT_BACKOFF;
                connection
            }
            Err(error) if is_about_one_connection(&error) => continue,
            Err(error) => {
                let freed = connections.close_longest_idle();
                accept_notice.note(|more| {
                    tracing::error!(
                        %error,
                        "cannot accept connections{}; retrying in {} ms{}",
                        if freed { ", closed the connection idle the longest" } else { "" },
                        backoff.as_millis(),
                        since_last(more)
                    );
                });
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    () = &mut shutdown => break,
                }
                backoff = (backoff * 2).min(MAX_ACCEPT_BACKOFF);
                continue;
            }
        };
        let Some(admission) = connections.admit().await else {
            refuse(stream, server.tls.is_some());
            continue;
        };
        tokio::spawn(Arc::clone(&server).connection(stream, peer, admission, stopping.clone()));
    }
    drop(listener);
    tracing::info!("shutting down");
    let _ = stop.send(true);
    if tokio::time::timeout(SHUTDOWN_GRACE, connections.drained())
        .await
        .is_err()
    {
        tracing::warn!(
            "open requests did not finish within {} s; closing them",
            SHUTDOWN_GRACE.as_secs()
        );
    }
    Ok(())
}

/// Errors `accept` reports about one incoming connection, not the listener.
fn is_about_one_connection(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// Turn away a connection beyond the cap: a 503 for plain HTTP, if the
/// socket takes it at once, then close. Over TLS there is no one to tell
/// before a handshake, so it is closed.
fn refuse(stream: TcpStream, tls: bool) {
    if !tls {
        // Never waits: a client that reads nothing must not hold up the loop.
        let _ = stream.try_write(&REFUSAL);
    }
    drop(stream);
}

/// What every connection task shares.
struct Shared {
    http: http1::Builder,
    app: Router,
    tls: Option<TlsAcceptor>,
    tls_handshake_timeout: Duration,
}

impl Shared {
    async fn connection(
        self: Arc<Self>,
        stream: TcpStream,
        peer: SocketAddr,
        admission: Admission,
        stopping: watch::Receiver<bool>,
    ) {
        let service = PeerService {
            app: self.app.clone(),
            peer,
            activity: admission.activity(),
        };
        let close = Arc::clone(&admission.close);
        match &self.tls {
            None => self.drive(stream, service, close, stopping).await,
            Some(acceptor) => {
                let handshake =
                    tokio::time::timeout(self.tls_handshake_timeout, acceptor.accept(stream));
                let tls = tokio::select! {
                    handshake = handshake => handshake,
                    // Displaced or shutting down before it said anything.
                    () = close.notified() => return,
                };
                match tls {
                    Ok(Ok(tls)) => self.drive(tls, service, close, stopping).await,
                    Ok(Err(error)) => tracing::debug!(%peer, %error, "TLS handshake failed"),
                    Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                }
            }
        }
        drop(admission);
    }

    /// Serve HTTP/1.1 on `io` until the client is done, or until the
    /// connection is displaced or the server stops: then it finishes the
    /// request in flight, if any, and closes.
    async fn drive<I>(
        &self,
        io: I,
        service: PeerService,
        close: Arc<Notify>,
        mut stopping: watch::Receiver<bool>,
    ) where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let mut connection = pin!(self.http.serve_connection(TokioIo::new(io), service));
        let mut closing = false;
        loop {
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(error) = result {
                        tracing::debug!(%error, "connection ended with an error");
                    }
                    return;
                }
                () = close.notified(), if !closing => {
                    connection.as_mut().graceful_shutdown();
                    closing = true;
                }
                _ = stopping.changed(), if !closing => {
                    connection.as_mut().graceful_shutdown();
                    closing = true;
                }
            }
        }
    }
}

/// The router, for one connection: each request gets the peer's address
/// and is in flight until its response body is dropped.
#[derive(Clone)]
struct PeerService {
    app: Router,
    peer: SocketAddr,
    activity: Activity,
}

impl hyper::service::Service<Request<Incoming>> for PeerService {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn call(&self, mut request: Request<Incoming>) -> Self::Future {
        let in_flight = self.activity.begin();
        request.extensions_mut().insert(ConnectInfo(self.peer));
        let app = self.app.clone();
        Box::pin(async move {
            let response = app.oneshot(request).await?;
            Ok(response.map(|body| {
                Body::new(Tracked {
                    body,
                    _in_flight: in_flight,
                })
            }))
        })
    }
}

/// A response body that keeps its request in flight until it is dropped.
struct Tracked {
    body: Body,
    _in_flight: InFlight,
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
