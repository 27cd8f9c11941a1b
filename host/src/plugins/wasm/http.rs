//! `wasi:http` outgoing requests for plugins granted network rules, and
//! nothing for the others.
//!
//! A plugin with no network grant is linked without `wasi:http` at all
//! (`engine.rs`), so a component importing it does not load. A granted
//! plugin's every request passes [`HttpGate`] on its way out:
//!
//! * it must match one of the plugin's effective rules (`network.rs`:
//!   method, scheme, host, port, of what it asked for and was granted);
//!   otherwise the guest gets `HTTP-request-denied` and the log a warning
//!   naming the plugin and the request (never its path or query);
//! * a host name resolves to public addresses only ([`PublicOnly`], the
//!   rules of `push/address.rs`): a granted name that resolves to a
//!   loopback, private or link-local address (DNS rebinding, or a name
//!   pointed at the metadata service) gets `destination-IP-prohibited`.
//!   The addresses checked are the ones connected to: the resolver that
//!   checks them is the client's, so no second lookup can differ. An IP
//!   address in a rule is the operator's explicit choice and is reached as
//!   it is, whatever kind of address it is;
//! * each request has a time and size budget (`[plugins.network]`), and a
//!   call makes at most `requests_per_call`;
//! * redirects are not followed (the guest sees the 3xx and may ask again,
//!   through the same gate), no proxy from the environment is used, no
//!   cookies are kept.
//!
//! The request is sent by the harness's own HTTP client (reqwest, rustls,
//! the system's roots and `[tls] extra_ca_files`), not wasmtime-wasi-http's
//! default sender, which would resolve names itself.

use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use crate::outbound::{self, ExtraRoots};
use crate::plugins::network::{NetworkRule, RequestTarget};
use crate::plugins::settings::NetworkLimits;
use crate::push::address::judge;

/// What one granted plugin may reach, and the client that reaches it.
pub struct NetworkAccess {
    plugin: String,
    rules: Vec<NetworkRule>,
    client: reqwest::Client,
    limits: NetworkLimits,
}

impl fmt::Debug for NetworkAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NetworkAccess")
            .field("plugin", &self.plugin)
            .field("rules", &self.rules)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl NetworkAccess {
    /// `plugin` may make the requests `rules` allow, through `client` (see
    /// [`plugin_client`]) within `limits`.
    pub fn new(
        plugin: &str,
        rules: Vec<NetworkRule>,
        client: reqwest::Client,
        limits: NetworkLimits,
    ) -> Self {
        NetworkAccess {
            plugin: plugin.to_owned(),
            rules,
            client,
            limits,
        }
    }

    fn allows(&self, target: &RequestTarget) -> bool {
        self.rules.iter().any(|rule| rule.matches(target))
    }
}

/// The HTTP client plugins' requests go out through: the harness's trust
/// roots, no proxy, no redirects, public addresses only for names. Without
/// one (its TLS cannot be set up), no plugin is granted the network.
pub fn plugin_client(extra_roots: &ExtraRoots) -> Result<reqwest::Client, String> {
    outbound::client_builder(extra_roots)
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .dns_resolver(PublicOnly)
        .build()
        .map_err(outbound::describe)
}

/// The `wasi:http` hooks of one store: every request is checked here.
pub(crate) struct HttpGate {
    /// `None`: the plugin was granted nothing. Its components are linked
    /// without wasi:http, so this is only a second line of defence.
    access: Option<Arc<NetworkAccess>>,
    /// Requests the current call has made.
    requests: u32,
}

impl HttpGate {
    pub(crate) fn new(access: Option<Arc<NetworkAccess>>) -> Self {
        HttpGate {
            access,
            requests: 0,
        }
    }

    /// A new call begins: its own request budget.
    pub(crate) fn begin_call(&mut self) {
        self.requests = 0;
    }
}

/// What `send_request` hands back to wasmtime-wasi-http.
type Sent = Result<(
    http::Response<WasiBody>,
    Box<dyn Future<Output = Result<(), Error>> + Send>,
)>;
type Result<T, E = Error> = std::result::Result<T, E>;

impl WasiHttpHooks for HttpGate {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _response_done: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> Box<dyn Future<Output = Sent> + Send> {
        let refused = |error: Error| -> Box<dyn Future<Output = Sent> + Send> {
            Box::new(std::future::ready(Err(error)))
        };
        let Some(access) = self.access.clone() else {
            return refused(Error::HttpRequestDenied);
        };
        let Some(target) = RequestTarget::of(request.method().as_str(), request.uri()) else {
            return refused(Error::HttpRequestUriInvalid);
        };
        if !access.allows(&target) {
            tracing::warn!(
                plugin = %access.plugin,
                request = %target,
                "a plugin's HTTP request was refused: no network rule granted to it matches"
            );
            return refused(Error::HttpRequestDenied);
        }
        self.requests += 1;
        if self.requests > access.limits.requests_per_call {
            tracing::warn!(
                plugin = %access.plugin,
                request = %target,
                limit = access.limits.requests_per_call,
                "a plugin's HTTP request was refused: the call made all the requests it may ([plugins.network] requests_per_call)"
            );
            return refused(Error::ConnectionLimitReached);
        }
        Box::new(async move { access.send(request, options, target).await })
    }
}

impl NetworkAccess {
    /// Send an allowed request and hand its response back with a body
    /// bounded in size (and, through the request's timeout, in time).
    async fn send(
        self: Arc<Self>,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        target: RequestTarget,
    ) -> Sent {
        let timeout = self.timeout(options);
        let (parts, body) = request.into_parts();
        let body = tokio::time::timeout(timeout, self.read_body(body))
            .await
            .map_err(|_| Error::ConnectionWriteTimeout)??;
        let url = reqwest::Url::parse(&parts.uri.to_string())
            .map_err(|_| Error::HttpRequestUriInvalid)?;
        let mut headers = parts.headers;
        // The client writes Host from the URL the rules were checked on.
        headers.remove(http::header::HOST);
        let response = self
            .client
            .request(parts.method, url)
            .headers(headers)
            .body(body)
            .timeout(timeout)
            .send()
            .await
            .map_err(|error| self.failure(&target, error))?;
        let limit = self.limits.max_response_bytes;
        if response
            .content_length()
            .is_some_and(|length| length > limit)
        {
            return Err(Error::HttpResponseBodySize(response.content_length()));
        }
        let response = http::Response::<reqwest::Body>::from(response);
        let response = response.map(|body| {
            Limited::new(body, usize::try_from(limit).unwrap_or(usize::MAX))
                .map_err(move |error| response_body_error(&*error, limit))
                .boxed_unsync()
        });
        let done: Box<dyn Future<Output = Result<(), Error>> + Send> =
            Box::new(std::future::ready(Ok(())));
        Ok((response, done))
    }

    /// The budget of one request, or less if the guest asked for less.
    fn timeout(&self, options: Option<RequestOptions>) -> Duration {
        let budget = self.limits.request_timeout();
        let asked = options.and_then(|options| {
            [options.connect_timeout, options.first_byte_timeout]
                .into_iter()
                .flatten()
                .reduce(|a, b| a + b)
        });
        asked.map_or(budget, |asked| asked.min(budget))
    }

    /// The guest's request body, whole, within `max_request_bytes`.
    async fn read_body(&self, body: WasiBody) -> Result<Bytes> {
        let limit = self.limits.max_request_bytes;
        match Limited::new(body, usize::try_from(limit).unwrap_or(usize::MAX))
            .collect()
            .await
        {
            Ok(collected) => Ok(collected.to_bytes()),
            Err(error) if error.is::<http_body_util::LengthLimitError>() => {
                Err(Error::HttpRequestBodySize(Some(limit)))
            }
            Err(error) => match error.downcast::<Error>() {
                Ok(error) => Err(*error),
                Err(error) => Err(Error::InternalError(Some(error.to_string()))),
            },
        }
    }

    /// What the guest is told for a request that did not get an answer.
    fn failure(&self, target: &RequestTarget, error: reqwest::Error) -> Error {
        if let Some(refused) = find_cause::<NotPublic>(&error) {
            tracing::warn!(
                plugin = %self.plugin,
                request = %target,
                "a plugin's HTTP request was refused: {refused}"
            );
            return Error::DestinationIpProhibited;
        }
        let code = if error.is_timeout() {
            Error::ConnectionTimeout
        } else if error.is_connect() {
            Error::ConnectionRefused
        } else {
            Error::HttpProtocolError
        };
        tracing::debug!(
            plugin = %self.plugin,
            request = %target,
            error = %outbound::describe(error),
            "a plugin's HTTP request failed"
        );
        code
    }
}

/// A response body that broke off: too big, too slow, or cut.
fn response_body_error(error: &(dyn StdError + Send + Sync + 'static), limit: u64) -> Error {
    if error.is::<http_body_util::LengthLimitError>() {
        return Error::HttpResponseBodySize(Some(limit));
    }
    match error.downcast_ref::<reqwest::Error>() {
        Some(error) if error.is_timeout() => Error::HttpResponseTimeout,
        _ => Error::HttpResponseIncomplete,
    }
}

/// The first cause of `error` of type `T`.
fn find_cause<'e, T: StdError + 'static>(error: &'e (dyn StdError + 'static)) -> Option<&'e T> {
    let mut cause: Option<&(dyn StdError + 'static)> = Some(error);
    while let Some(current) = cause {
        if let Some(found) = current.downcast_ref::<T>() {
            return Some(found);
        }
        cause = current.source();
    }
    None
}

/// The plugins' resolver: the system's, refusing a name any of whose
/// addresses is not public.
#[derive(Clone, Copy, Debug)]
struct PublicOnly;

/// A granted name that resolves to an address that is not public.
#[derive(Debug)]
struct NotPublic {
    host: String,
    why: String,
}

impl fmt::Display for NotPublic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` resolves to {}, not a public address (a rule that names the address itself reaches it)",
            self.host, self.why
        )
    }
}

impl StdError for NotPublic {}

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addresses: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if let Some(not_public) = addresses
                .iter()
                .find_map(|address| judge(address.ip()).err())
            {
                return Err(Box::new(NotPublic {
                    host,
                    why: not_public.to_string(),
                }) as Box<dyn StdError + Send + Sync>);
            }
            let addresses: Addrs = Box::new(addresses.into_iter());
            Ok(addresses)
        })
    }
}
