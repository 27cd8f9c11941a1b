//! The A2A gRPC binding (spec 10): `lf.a2a.v1.A2AService` over HTTP/2, on a
//! listener of its own (`[grpc] listen`), with TLS when `[tls]` serves https.
//!
//! * **Same service, same answers.** Calls go to the [`TaskService`] the HTTP
//!   bindings use, through the same authenticator and rate limiter
//!   ([`service`]); messages cross as ProtoJSON ([`convert`]), so a request is
//!   validated exactly as in JSON-RPC, and errors carry the same ErrorInfo
//!   ([`status`]).
//! * **Service parameters are metadata** (spec 10.2): `authorization`
//!   (`Bearer <token>`), `a2a-version` (missing means 0.3, refused as in the
//!   other bindings), `a2a-extensions`; on loopback without tokens, the
//!   caller names itself with `x-participant-id`. No Host or Origin checks:
//!   browsers do not speak gRPC.
//! * **Streams** (SendStreamingMessage, SubscribeToTask) are server streams of
//!   `StreamResponse`, the Task first, ending when the turn or the task ends.
//! * **Bounds.** At most `max_connections` connections at once (the next waits
//!   to be accepted), `max_concurrent_streams` calls per connection, messages
//!   up to `[limits] max_body_bytes`; HTTP/2 keep-alive pings close dead
//!   connections. TLS handshakes are bounded as for https (`tls`).
//!
//! The messages and the service are generated from `host/proto` by
//! `tools/proto-gen` and committed (`generated`), so the build needs no
//! `protoc` and compiles no protobuf compiler.

mod convert;
mod generated;
mod service;
mod status;
#[cfg(test)]
mod tests;

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::{Connected, TcpConnectInfo};

pub use generated::a2a as proto;
/// `google.rpc` error details (`Status`, `ErrorInfo`, `BadRequest`), as sent in
/// `grpc-status-details-bin`.
pub use generated::rpc;
pub(crate) use service::GrpcService;

use super::SHUTDOWN_GRACE;

/// How often an idle connection is pinged; an unanswered ping closes it.
const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(30);
const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(10);

/// The gRPC listener's bounds (`[grpc]`).
#[derive(Clone, Copy, Debug)]
pub struct GrpcLimits {
    /// Connections open at once.
    pub max_connections: usize,
    /// Calls in flight per connection.
    pub max_concurrent_streams: u32,
    /// The largest message accepted, in bytes.
    pub max_message_bytes: usize,
}

/// The gRPC binding, ready to serve: see [`super::bindings`].
#[derive(Clone)]
pub struct GrpcBinding {
    pub(crate) service: GrpcService,
}

/// Serves `binding` on `listener` until `shutdown` resolves, then stops accepting and
/// gives open calls and streams [`SHUTDOWN_GRACE`] to finish.
pub async fn serve<L>(
    listener: L,
    binding: GrpcBinding,
    limits: GrpcLimits,
    shutdown: impl Future<Output = ()>,
) -> Result<(), tonic::transport::Error>
where
    L: axum::serve::Listener<Addr = std::net::SocketAddr>,
    L::Io: Unpin,
{
    let server = proto::a2a_service_server::A2aServiceServer::new(binding.service)
        .max_decoding_message_size(limits.max_message_bytes);
    let (accepted, incoming) = mpsc::channel(1);
    let accepting = tokio::spawn(accept(listener, limits.max_connections, accepted));
    let (stop, stopped) = watch::channel(false);
    let serving = tonic::transport::Server::builder()
        .max_concurrent_streams(Some(limits.max_concurrent_streams))
        .http2_keepalive_interval(Some(KEEP_ALIVE_INTERVAL))
        .http2_keepalive_timeout(Some(KEEP_ALIVE_TIMEOUT))
        .add_service(server)
        .serve_with_incoming_shutdown(ReceiverStream::new(incoming), async move {
            let mut stopped = stopped;
            let _ = stopped.wait_for(|stop| *stop).await;
        });
    let mut serving = std::pin::pin!(serving);
    let result = tokio::select! {
        result = &mut serving => Some(result),
        () = shutdown => None,
    };
    let result = match result {
        Some(result) => result,
        None => {
            accepting.abort();
            let _ = stop.send(true);
            match tokio::time::timeout(SHUTDOWN_GRACE, serving).await {
                Ok(result) => result,
                Err(_) => {
                    tracing::warn!(
                        "open gRPC calls did not finish within {} s; closing them",
                        SHUTDOWN_GRACE.as_secs()
                    );
                    Ok(())
                }
            }
        }
    };
    accepting.abort();
    result
}

/// Accepts connections while fewer than `max` are open.
async fn accept<L>(
    mut listener: L,
    max: usize,
    accepted: mpsc::Sender<Result<Counted<L::Io>, io::Error>>,
) where
    L: axum::serve::Listener<Addr = std::net::SocketAddr>,
{
    let open = Arc::new(Semaphore::new(max));
    loop {
        let Ok(permit) = Arc::clone(&open).acquire_owned().await else {
            return;
        };
        let (io, peer) = listener.accept().await;
        let connection = Counted {
            io,
            peer,
            _permit: permit,
        };
        if accepted.send(Ok(connection)).await.is_err() {
            return;
        }
    }
}

/// A connection that holds one of the `max_connections` slots until it closes, and
/// knows its peer (the per-address rate limit of self-asserted callers).
struct Counted<Io> {
    io: Io,
    peer: std::net::SocketAddr,
    _permit: OwnedSemaphorePermit,
}

impl<Io> Connected for Counted<Io> {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        TcpConnectInfo {
            local_addr: None,
            remote_addr: Some(self.peer),
        }
    }
}

impl<Io: AsyncRead + Unpin> AsyncRead for Counted<Io> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(context, buffer)
    }
}

impl<Io: AsyncWrite + Unpin> AsyncWrite for Counted<Io> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(context, data)
    }

    fn poll_flush(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(context)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(context)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffers: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(context, buffers)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}
