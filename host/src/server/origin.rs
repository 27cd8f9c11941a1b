//! Which requests the server answers at all, by where they say they come from: the first
//! check of every request, before authentication.
//!
//! * **`Host`.** A web page whose name the attacker controls can make that name resolve to
//!   127.0.0.1 (DNS rebinding) and then talk to a local server as if it were its own origin;
//!   the one thing it cannot change is the `Host` its requests carry. So a request must name
//!   the server: a loopback name (`localhost`, `127.0.0.1`, `[::1]`, any port: a tunnel may
//!   change the port, and the port is no defence against rebinding), the address the server
//!   is bound to, or one of `[http] public_names`. Anything else, a missing `Host` included,
//!   is refused with the allowed names in the message.
//! * **`Origin`.** Browsers send it on every cross-origin request and every POST. A request
//!   from the server's own origin (the `Host` it was sent to; the web UI at `/ui` is such a
//!   page) or from one of `[http] allowed_origins` passes; any other, `null` included, is
//!   refused. Listed origins get CORS answers (`Access-Control-Allow-Origin` with their own
//!   origin, never `*`, and preflights); no other origin does, so no other page can read a
//!   response either.
//! * **No "simple" state changes.** A page can send a cross-site POST without asking first
//!   (a CORS "simple" request) as long as it has no custom header and a `text/plain`, form or
//!   empty body. Older browsers send such requests without `Origin`. So a POST must carry
//!   `Content-Type: application/json` (or `application/a2a+json`) or one of the headers
//!   `A2A-Version`, `Authorization`, `X-Participant-Id`, `A2A-Extensions`, none of which a
//!   page can set without a preflight that the server refuses. `DELETE` (push configurations)
//!   is never simple; GETs change nothing.
//!
//! A refusal is HTTP 403 with the reason `HOST_NOT_ALLOWED`, `ORIGIN_NOT_ALLOWED` or
//! `SIMPLE_REQUEST_REFUSED`, in the JSON-RPC shape (code -32600) on `POST /` and in the
//! HTTP+JSON shape elsewhere.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::Json;
use axum::extract::{Request, State};
use axum::http::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN,
    ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE, ACCESS_CONTROL_REQUEST_METHOD,
    CONTENT_TYPE, HOST, ORIGIN, VARY,
};
use axum::http::uri::Authority;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::auth::PARTICIPANT_HEADER;
use crate::a2a::error::{
    ERROR_DOMAIN, ErrorDetail, ErrorInfo, JsonRpcErrorObject, RestError, RestErrorBody, code,
};

/// The names every server answers to, whatever its configuration.
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// Headers a page cannot send cross-site without a preflight; any one of them on a POST
/// shows it is not a CORS "simple" request.
const NON_SIMPLE_HEADERS: [&str; 4] = [
    "a2a-version",
    "authorization",
    PARTICIPANT_HEADER,
    "a2a-extensions",
];

/// What a listed origin's preflight may ask for.
const CORS_METHODS: &str = "GET, POST, DELETE";
const CORS_HEADERS: &str =
    "authorization, content-type, a2a-version, a2a-extensions, x-participant-id, if-none-match";
const CORS_EXPOSED: &str = "retry-after, www-authenticate, a2a-extensions, etag";
/// How long a browser may reuse a preflight's answer, in seconds.
const CORS_MAX_AGE: &str = "600";

/// The names and origins requests may come with.
#[derive(Clone, Debug)]
pub(crate) struct Origins {
    /// The address the server is bound to: its IP is a name of the server too, unless it is
    /// unspecified (`0.0.0.0`).
    bound: SocketAddr,
    /// `[http] public_names`, lowercase, each with its port if it names one.
    public_names: Vec<(String, Option<u16>)>,
    /// `[http] allowed_origins`, as browsers serialize them.
    allowed_origins: Vec<String>,
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    Host(String),
    Origin(String),
    Simple(String),
}

impl Origins {
    pub(crate) fn new(bound: SocketAddr, public_names: &[String], allowed: &[String]) -> Self {
        let public_names = public_names
            .iter()
            .filter_map(|name| name.parse::<Authority>().ok())
            .map(|authority| (authority.host().to_ascii_lowercase(), authority.port_u16()))
            .collect();
        let allowed_origins = allowed
            .iter()
            .filter_map(|origin| serialize_origin(origin))
            .collect();
        Origins {
            bound,
            public_names,
            allowed_origins,
        }
    }

    /// Whether `headers` (of a request with `method`) may be answered; for a listed foreign
    /// origin, that origin (it gets CORS headers).
    pub(crate) fn check(
        &self,
        method: &Method,
        headers: &HeaderMap,
    ) -> Result<Option<HeaderValue>, Refusal> {
        let host = self.check_host(headers)?;
        let listed = self.check_origin(headers, &host)?;
        if method == Method::POST && is_simple(headers) {
            return Err(Refusal::Simple(
                "a POST must carry Content-Type: application/json or the A2A-Version header, \
                 so that a web page elsewhere cannot send it without asking first"
                    .to_owned(),
            ));
        }
        Ok(listed)
    }

    fn check_host(&self, headers: &HeaderMap) -> Result<Authority, Refusal> {
        let refuse = |what: String| {
            Refusal::Host(format!(
                "{what}; this server answers to {}",
                self.allowed_names()
            ))
        };
        let Some(value) = headers.get(HOST) else {
            return Err(refuse("the request has no Host header".to_owned()));
        };
        let shown = String::from_utf8_lossy(value.as_bytes()).into_owned();
        let authority: Authority = value
            .to_str()
            .ok()
            .and_then(|text| text.parse().ok())
            .ok_or_else(|| refuse(format!("Host `{shown}` is not a host name")))?;
        if self.is_own_name(&authority) {
            Ok(authority)
        } else {
            Err(refuse(format!(
                "Host `{shown}` is not a name of this server"
            )))
        }
    }

    fn is_own_name(&self, authority: &Authority) -> bool {
        let host = authority.host().to_ascii_lowercase();
        if LOOPBACK_NAMES.contains(&host.as_str()) {
            return true;
        }
        let literal = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = literal.parse::<IpAddr>() {
            let ip = ip.to_canonical();
            let bound = self.bound.ip().to_canonical();
            if ip.is_loopback() || (ip == bound && !bound.is_unspecified()) {
                return true;
            }
        }
        self.public_names.iter().any(|(name, port)| {
            *name == host && port.is_none_or(|port| Some(port) == authority.port_u16())
        })
    }

    fn allowed_names(&self) -> String {
        let mut names: Vec<String> = LOOPBACK_NAMES.iter().map(|n| (*n).to_owned()).collect();
        if let Some(last) = names.last_mut() {
            last.push_str(" (any port)");
        }
        if !self.bound.ip().is_unspecified() && !self.bound.ip().to_canonical().is_loopback() {
            names.push(self.bound.to_string());
        }
        for (name, port) in &self.public_names {
            names.push(match port {
                Some(port) => format!("{name}:{port}"),
                None => name.clone(),
            });
        }
        format!(
            "{}; add a name of your own to `[http] public_names`",
            names.join(", ")
        )
    }

    /// `Ok(None)`: no `Origin`, or the server's own; `Ok(Some)`: a listed foreign origin.
    fn check_origin(
        &self,
        headers: &HeaderMap,
        host: &Authority,
    ) -> Result<Option<HeaderValue>, Refusal> {
        let Some(value) = headers.get(ORIGIN) else {
            return Ok(None);
        };
        let origin = String::from_utf8_lossy(value.as_bytes()).into_owned();
        if let Some(serialized) = serialize_origin(&origin) {
            if self.allowed_origins.contains(&serialized) {
                return Ok(Some(value.clone()));
            }
            if same_origin(&origin, host) {
                return Ok(None);
            }
        }
        Err(Refusal::Origin(format!(
            "requests from a page at `{origin}` are not allowed: the server answers pages of \
             its own origin and those in `[http] allowed_origins`{}",
            if self.allowed_origins.is_empty() {
                " (none configured)".to_owned()
            } else {
                format!(" ({})", self.allowed_origins.join(", "))
            }
        )))
    }
}

/// An origin as a browser serializes it (`https://app.example.com`), or `None` for `null`
/// or anything that is not a tuple origin.
fn serialize_origin(origin: &str) -> Option<String> {
    let url = reqwest::Url::parse(origin).ok()?;
    let serialized = url.origin().ascii_serialization();
    (serialized != "null").then_some(serialized)
}

/// Whether `origin` is the origin of a page served from `host`. The scheme is not compared
/// (behind a TLS-terminating proxy a page at https://name talks to a plain-http server);
/// the host and the effective port are.
fn same_origin(origin: &str, host: &Authority) -> bool {
    let Ok(url) = reqwest::Url::parse(origin) else {
        return false;
    };
    let (Some(origin_host), Some(origin_port)) = (url.host_str(), url.port_or_known_default())
    else {
        return false;
    };
    let host_port = host.port_u16().or_else(|| match url.scheme() {
        "https" => Some(443),
        _ => Some(80),
    });
    origin_host.eq_ignore_ascii_case(host.host()) && Some(origin_port) == host_port
}

/// A POST a page could send cross-site without a preflight: no non-simple header and a
/// CORS-safelisted content type (or none).
fn is_simple(headers: &HeaderMap) -> bool {
    if NON_SIMPLE_HEADERS
        .iter()
        .any(|name| headers.contains_key(*name))
    {
        return false;
    }
    let Some(content_type) = headers.get(CONTENT_TYPE) else {
        return true;
    };
    let essence = content_type
        .to_str()
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    matches!(
        essence.as_str(),
        "text/plain" | "multipart/form-data" | "application/x-www-form-urlencoded"
    )
}

/// The guard as middleware: refusals answered here, listed origins' preflights answered
/// here, every other request passed on (with CORS headers for a listed origin).
pub(crate) async fn guard(
    State(origins): State<Arc<Origins>>,
    request: Request,
    next: Next,
) -> Response {
    let listed = match origins.check(request.method(), request.headers()) {
        Ok(listed) => listed,
        Err(refusal) => {
            tracing::debug!(?refusal, "request refused");
            let jsonrpc = request.method() == Method::POST && request.uri().path() == "/";
            return refusal.into_response_for(jsonrpc);
        }
    };
    let Some(origin) = listed else {
        return next.run(request).await;
    };
    let preflight = request.method() == Method::OPTIONS
        && request
            .headers()
            .contains_key(ACCESS_CONTROL_REQUEST_METHOD);
    let mut response = if preflight {
        let mut response = StatusCode::NO_CONTENT.into_response();
        let headers = response.headers_mut();
        headers.insert(
            ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static(CORS_METHODS),
        );
        headers.insert(
            ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static(CORS_HEADERS),
        );
        headers.insert(
            ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static(CORS_MAX_AGE),
        );
        response
    } else {
        next.run(request).await
    };
    let headers = response.headers_mut();
    headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    headers.insert(
        ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(CORS_EXPOSED),
    );
    headers.append(VARY, HeaderValue::from_static("Origin"));
    response
}

impl Refusal {
    fn reason(&self) -> &'static str {
        match self {
            Refusal::Host(_) => "HOST_NOT_ALLOWED",
            Refusal::Origin(_) => "ORIGIN_NOT_ALLOWED",
            Refusal::Simple(_) => "SIMPLE_REQUEST_REFUSED",
        }
    }

    fn message(&self) -> &str {
        match self {
            Refusal::Host(message) | Refusal::Origin(message) | Refusal::Simple(message) => message,
        }
    }

    fn details(&self) -> Vec<ErrorDetail> {
        vec![ErrorDetail::ErrorInfo(ErrorInfo {
            reason: self.reason().to_owned(),
            domain: ERROR_DOMAIN.to_owned(),
            metadata: BTreeMap::new(),
        })]
    }

    fn into_response_for(self, jsonrpc: bool) -> Response {
        if jsonrpc {
            let error = JsonRpcErrorObject {
                code: code::INVALID_REQUEST,
                message: self.message().to_owned(),
                data: self.details(),
            };
            let body = json!({"jsonrpc": "2.0", "id": null, "error": error});
            return (StatusCode::FORBIDDEN, Json(body)).into_response();
        }
        let body = RestErrorBody {
            error: RestError {
                code: StatusCode::FORBIDDEN.as_u16(),
                status: "PERMISSION_DENIED".to_owned(),
                message: self.message().to_owned(),
                details: self.details(),
            },
        };
        let json = [(
            CONTENT_TYPE,
            HeaderValue::from_static(super::body::A2A_JSON),
        )];
        (StatusCode::FORBIDDEN, json, Json(body)).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origins() -> Origins {
        Origins::new(
            "127.0.0.1:8080".parse().expect("address"),
            &[
                "harness.example.com".to_owned(),
                "edge.example:9443".to_owned(),
            ],
            &["https://app.example.com".to_owned()],
        )
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.insert(*name, HeaderValue::from_static(value));
        }
        headers
    }

    fn get(pairs: &[(&'static str, &'static str)]) -> Result<Option<HeaderValue>, Refusal> {
        origins().check(&Method::GET, &headers(pairs))
    }

    #[test]
    fn loopback_names_the_bound_address_and_public_names_pass() {
        for host in [
            "localhost:8080",
            "LOCALHOST:1234",
            "127.0.0.1:8080",
            "127.0.0.1",
            "[::1]:8080",
            "127.1.2.3:8080",
            "harness.example.com",
            "harness.example.com:443",
            "edge.example:9443",
        ] {
            let leaked: &'static str = Box::leak(host.to_owned().into_boxed_str());
            assert_eq!(get(&[("host", leaked)]), Ok(None), "{host}");
        }
    }

    #[test]
    fn any_other_host_is_refused_with_the_allowed_names() {
        for host in [
            "rebind.attacker.example:8080",
            "localhost.attacker.example",
            "edge.example:9444",
            "10.0.0.1:8080",
            "",
        ] {
            let leaked: &'static str = Box::leak(host.to_owned().into_boxed_str());
            let Err(Refusal::Host(message)) = get(&[("host", leaked)]) else {
                panic!("{host} passed");
            };
            assert!(message.contains("localhost"), "{message}");
            assert!(message.contains("harness.example.com"), "{message}");
            assert!(message.contains("public_names"), "{message}");
        }
        assert!(matches!(get(&[]), Err(Refusal::Host(_))));
    }

    #[test]
    fn own_and_listed_origins_pass_and_others_are_refused() {
        assert_eq!(
            get(&[
                ("host", "localhost:8080"),
                ("origin", "http://localhost:8080")
            ]),
            Ok(None)
        );
        assert_eq!(
            get(&[
                ("host", "harness.example.com"),
                ("origin", "https://harness.example.com")
            ]),
            Ok(None),
            "behind a TLS-terminating proxy"
        );
        assert_eq!(
            get(&[
                ("host", "localhost:8080"),
                ("origin", "https://app.example.com")
            ]),
            Ok(Some(HeaderValue::from_static("https://app.example.com")))
        );
        for origin in [
            "https://evil.example",
            "http://localhost:8081",
            "http://127.0.0.1:8080",
            "null",
            "https://app.example.com:444",
        ] {
            let leaked: &'static str = Box::leak(origin.to_owned().into_boxed_str());
            let result = get(&[("host", "localhost:8080"), ("origin", leaked)]);
            let Err(Refusal::Origin(message)) = result else {
                panic!("{origin} passed: {result:?}");
            };
            assert!(message.contains("allowed_origins"), "{message}");
        }
    }

    #[test]
    fn a_post_that_a_page_could_send_unasked_is_refused() {
        let post = |pairs: &[(&'static str, &'static str)]| {
            let mut all = vec![("host", "localhost:8080")];
            all.extend_from_slice(pairs);
            origins().check(&Method::POST, &headers(&all))
        };
        for simple in [
            &[][..],
            &[("content-type", "text/plain")][..],
            &[("content-type", "application/x-www-form-urlencoded")][..],
            &[("content-type", "multipart/form-data; boundary=x")][..],
        ] {
            assert!(
                matches!(post(simple), Err(Refusal::Simple(_))),
                "{simple:?}"
            );
        }
        for preflighted in [
            &[("content-type", "application/json")][..],
            &[("content-type", "application/a2a+json; charset=utf-8")][..],
            &[("a2a-version", "1.0")][..],
            &[("authorization", "Bearer t")][..],
            &[("x-participant-id", "alice")][..],
        ] {
            assert_eq!(post(preflighted), Ok(None), "{preflighted:?}");
        }
        // Reads and deletions are never simple state changes.
        assert_eq!(
            origins().check(&Method::DELETE, &headers(&[("host", "localhost")])),
            Ok(None)
        );
    }
}
