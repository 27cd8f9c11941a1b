//! Who is calling: bearer tokens when configured, otherwise a self-asserted participant id.
//!
//! * **Tokens configured** (any address): every A2A request needs
//!   `Authorization: Bearer <token>`; the token maps to the participant id. A missing,
//!   malformed or unknown token is refused with HTTP 401 and `WWW-Authenticate: Bearer`
//!   (RFC 6750). Self-asserted ids are ignored: a token holder cannot act as someone else.
//! * **No tokens** (the server refuses to start like this beyond loopback): the caller is
//!   whoever the request says, in this order: the `X-Participant-Id` header; for a message
//!   send, the message's `metadata["participantId"]`; else `local`. Such an id is a claim,
//!   not a credential, so it is never an admin: the configuration refuses `admins` without
//!   tokens, and an id that names a configured admin is refused here as well
//!   (`ROLE_REFUSED`), in case an embedding program wires the two together. The rate
//!   limiter charges such callers by their IP address too (`rate_limit`).
//!
//! Participant ids are checked by one rule wherever they enter
//! ([`check_participant_id`](crate::domain::check_participant_id)): here for the header and
//! the metadata, in the configuration for the token map and `admins`.
//!
//! The 401 in each binding. A2A defines no authentication error code (spec 3.3.2 says
//! "JSON-RPC custom error"), so the JSON-RPC body uses -31401, the code the official Go SDK
//! (a2a-go) gives `ErrUnauthenticated`, with an ErrorInfo whose reason is `UNAUTHENTICATED`.
//! The HTTP+JSON body is a `google.rpc.Status` with `UNAUTHENTICATED`, as gRPC would say.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue};
use sha2::{Digest, Sha256};

use super::AppState;
use super::rate_limit::Sender;
use crate::a2a::error::{
    A2aError, ERROR_DOMAIN, ErrorDetail, ErrorInfo, JsonRpcErrorObject, RestError, RestErrorBody,
};
use crate::a2a::types::Message;
use crate::domain::check_participant_id;
use crate::task::Caller;

/// The header a loopback client names itself with when no tokens are configured.
pub const PARTICIPANT_HEADER: &str = "x-participant-id";

/// The `Message.metadata` key a loopback client may name itself with instead of the header.
pub const PARTICIPANT_METADATA_KEY: &str = "participantId";

/// The caller of a loopback request that names nobody.
pub const DEFAULT_PARTICIPANT: &str = "local";

/// The JSON-RPC error code of a refused authentication (a2a-go's `ErrUnauthenticated`).
pub(crate) const UNAUTHENTICATED_CODE: i32 = -31401;

/// How requests are authenticated.
pub(crate) enum Authenticator {
    /// No tokens configured: callers name themselves, but never as one of `admins`.
    SelfAsserted { admins: BTreeSet<String> },
    /// Bearer tokens, stored as SHA-256 digests.
    Tokens(Vec<TokenEntry>),
}

pub(crate) struct TokenEntry {
    digest: [u8; 32],
    participant: String,
}

/// The authenticated side of a request, before the caller is resolved.
#[derive(Debug, Clone)]
pub(crate) enum Identity {
    /// A valid bearer token's participant.
    Token(Caller),
    /// No tokens configured: what the request claims.
    SelfAsserted(Claim),
}

/// A self-asserted request: the `X-Participant-Id` header as sent, if any, where it came
/// from, and the ids it may not claim.
#[derive(Debug, Clone)]
pub(crate) struct Claim {
    header: Option<HeaderValue>,
    peer: Option<IpAddr>,
    admins: BTreeSet<String>,
}

/// Why a request was not authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AuthError {
    #[error("Authentication required: send the header `Authorization: Bearer <token>`")]
    Missing,
    #[error("Authentication failed: the Authorization header must be `Bearer <token>`")]
    Malformed,
    #[error("Authentication failed: the bearer token is not valid")]
    UnknownToken,
}

impl Authenticator {
    /// Tokens if any are configured, self-asserted otherwise (never as one of `admins`).
    pub(crate) fn new(tokens: &BTreeMap<String, String>, admins: &[String]) -> Self {
        if tokens.is_empty() {
            return Authenticator::SelfAsserted {
                admins: admins.iter().cloned().collect(),
            };
        }
        let entries = tokens
            .iter()
            .map(|(token, participant)| TokenEntry {
                digest: digest(token),
                participant: participant.clone(),
            })
            .collect();
        Authenticator::Tokens(entries)
    }

    /// Whether requests need a bearer token (the card then declares the scheme).
    pub(crate) fn requires_token(&self) -> bool {
        matches!(self, Authenticator::Tokens(_))
    }

    /// Authenticates a request by its headers; `peer` is where it came from.
    pub(crate) fn authenticate(
        &self,
        headers: &HeaderMap,
        peer: Option<IpAddr>,
    ) -> Result<Identity, AuthError> {
        match self {
            Authenticator::SelfAsserted { admins } => Ok(Identity::SelfAsserted(Claim {
                header: headers.get(PARTICIPANT_HEADER).cloned(),
                peer,
                admins: admins.clone(),
            })),
            Authenticator::Tokens(entries) => {
                let token = bearer_token(headers)?;
                let participant = lookup(entries, token).ok_or(AuthError::UnknownToken)?;
                Ok(Identity::Token(Caller {
                    id: participant.to_owned(),
                }))
            }
        }
    }
}

impl FromRequestParts<AppState> for Identity {
    type Rejection = AuthError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(address)| address.ip().to_canonical());
        state.auth.authenticate(&parts.headers, peer)
    }
}

impl Identity {
    /// The caller of a request; `message` is the message it sends, if it sends one.
    pub(crate) fn caller(&self, message: Option<&Message>) -> Result<Caller, A2aError> {
        match self {
            Identity::Token(caller) => Ok(caller.clone()),
            Identity::SelfAsserted(claim) => {
                let caller = match (&claim.header, message) {
                    (Some(header), _) => from_header(header)?,
                    (None, Some(message)) => from_metadata(message)?,
                    (None, None) => default_caller(),
                };
                if claim.admins.contains(&caller.id) {
                    return Err(admin_needs_a_token(&caller.id));
                }
                Ok(caller)
            }
        }
    }

    /// Whom a send by `caller` is charged to by the rate limiter.
    pub(crate) fn sender<'a>(&self, caller: &'a Caller) -> Sender<'a> {
        match self {
            Identity::Token(_) => Sender::Authenticated(&caller.id),
            Identity::SelfAsserted(claim) => Sender::SelfAsserted {
                id: &caller.id,
                address: claim.peer,
            },
        }
    }
}

fn admin_needs_a_token(id: &str) -> A2aError {
    A2aError::RoleRefused {
        role: "admin".to_owned(),
        message: format!(
            "`{id}` is an admin, and admin rights need a bearer token: an id a request names \
             itself by (X-Participant-Id or metadata.participantId) is never an admin"
        ),
    }
}

fn from_header(header: &HeaderValue) -> Result<Caller, A2aError> {
    let problem = |problem: &str| {
        A2aError::InvalidRequest(format!("the X-Participant-Id header is invalid: {problem}"))
    };
    let id = header.to_str().map_err(|_| problem("it must be text"))?;
    check_participant_id(id).map_err(|reason| problem(&reason))?;
    Ok(Caller { id: id.to_owned() })
}

fn from_metadata(message: &Message) -> Result<Caller, A2aError> {
    let Some(value) = message.metadata.get(PARTICIPANT_METADATA_KEY) else {
        return Ok(default_caller());
    };
    let field = format!("message.metadata.{PARTICIPANT_METADATA_KEY}");
    let id = value
        .as_str()
        .ok_or_else(|| A2aError::invalid_field(&field, format!("{field} must be a string")))?;
    check_participant_id(id)
        .map_err(|reason| A2aError::invalid_field(&field, format!("{field}: {reason}")))?;
    Ok(Caller { id: id.to_owned() })
}

fn default_caller() -> Caller {
    Caller {
        id: DEFAULT_PARTICIPANT.to_owned(),
    }
}

/// The token of `Authorization: Bearer <token>` (scheme case-insensitive, RFC 6750).
fn bearer_token(headers: &HeaderMap) -> Result<&str, AuthError> {
    let value = headers.get(AUTHORIZATION).ok_or(AuthError::Missing)?;
    let value = value.to_str().map_err(|_| AuthError::Malformed)?;
    let (scheme, token) = value.trim().split_once(' ').ok_or(AuthError::Malformed)?;
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return Err(AuthError::Malformed);
    }
    Ok(token)
}

/// The participant of `token`. Compares digests, every entry and every byte, so the time
/// taken says nothing about how close a guess was.
fn lookup<'a>(entries: &'a [TokenEntry], token: &str) -> Option<&'a str> {
    let presented = digest(token);
    let mut found = None;
    for entry in entries {
        let difference = entry
            .digest
            .iter()
            .zip(&presented)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if difference == 0 {
            found = Some(entry.participant.as_str());
        }
    }
    found
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl AuthError {
    /// The `WWW-Authenticate` challenge (RFC 6750 section 3).
    pub(crate) fn challenge(self) -> HeaderValue {
        HeaderValue::from_static(match self {
            AuthError::Missing => r#"Bearer realm="tiny-harness""#,
            AuthError::Malformed => r#"Bearer realm="tiny-harness", error="invalid_request""#,
            AuthError::UnknownToken => r#"Bearer realm="tiny-harness", error="invalid_token""#,
        })
    }

    fn details(self) -> Vec<ErrorDetail> {
        vec![ErrorDetail::ErrorInfo(ErrorInfo {
            reason: "UNAUTHENTICATED".to_owned(),
            domain: ERROR_DOMAIN.to_owned(),
            metadata: BTreeMap::from([("scheme".to_owned(), "Bearer".to_owned())]),
        })]
    }

    /// The JSON-RPC `error` object.
    pub(crate) fn to_jsonrpc(self) -> JsonRpcErrorObject {
        JsonRpcErrorObject {
            code: UNAUTHENTICATED_CODE,
            message: self.to_string(),
            data: self.details(),
        }
    }

    /// The HTTP+JSON error body.
    pub(crate) fn to_rest(self) -> RestErrorBody {
        RestErrorBody {
            error: RestError {
                code: 401,
                status: "UNAUTHENTICATED".to_owned(),
                message: self.to_string(),
                details: self.details(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tokens() -> Authenticator {
        Authenticator::new(
            &BTreeMap::from([
                ("tok-alice".to_owned(), "alice".to_owned()),
                ("tok-bob".to_owned(), "bob".to_owned()),
            ]),
            &["bob".to_owned()],
        )
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.insert(*name, HeaderValue::from_static(value));
        }
        headers
    }

    fn caller_of(identity: Identity, message: Option<&Message>) -> Result<String, A2aError> {
        identity.caller(message).map(|caller| caller.id)
    }

    #[test]
    fn tokens_map_to_participants() {
        let auth = tokens();
        assert!(auth.requires_token());
        for (value, expected) in [
            ("Bearer tok-alice", "alice"),
            ("bearer tok-bob", "bob"),
            ("BEARER   tok-bob  ", "bob"),
        ] {
            let identity = auth
                .authenticate(&headers(&[("authorization", value)]), None)
                .expect(value);
            assert_eq!(caller_of(identity, None).expect("caller"), expected);
        }
    }

    #[test]
    fn a_token_holder_cannot_assert_another_id() {
        let identity = tokens()
            .authenticate(
                &headers(&[
                    ("authorization", "Bearer tok-alice"),
                    ("x-participant-id", "bob"),
                ]),
                None,
            )
            .expect("valid");
        let mut message = Message::default();
        message
            .metadata
            .insert(PARTICIPANT_METADATA_KEY.into(), json!("bob"));
        assert_eq!(
            caller_of(identity, Some(&message)).expect("caller"),
            "alice"
        );
    }

    #[test]
    fn bad_credentials_are_refused() {
        let auth = tokens();
        let cases = [
            (headers(&[]), AuthError::Missing),
            (
                headers(&[("authorization", "Basic dG9rOg==")]),
                AuthError::Malformed,
            ),
            (
                headers(&[("authorization", "Bearer")]),
                AuthError::Malformed,
            ),
            (
                headers(&[("authorization", "Bearer  ")]),
                AuthError::Malformed,
            ),
            (
                headers(&[("authorization", "tok-alice")]),
                AuthError::Malformed,
            ),
            (
                headers(&[("authorization", "Bearer tok-alic")]),
                AuthError::UnknownToken,
            ),
            (
                headers(&[("authorization", "Bearer tok-alicee")]),
                AuthError::UnknownToken,
            ),
            (
                headers(&[("x-participant-id", "alice")]),
                AuthError::Missing,
            ),
        ];
        for (headers, expected) in cases {
            let error = auth.authenticate(&headers, None).expect_err("refused");
            assert_eq!(error, expected, "{headers:?}");
        }
    }

    #[test]
    fn self_asserted_header_then_metadata_then_local() {
        let auth = Authenticator::new(&BTreeMap::new(), &[]);
        assert!(!auth.requires_token());
        let mut message = Message::default();
        message
            .metadata
            .insert(PARTICIPANT_METADATA_KEY.into(), json!("meta"));

        let with_header = auth
            .authenticate(&headers(&[("x-participant-id", "carol")]), None)
            .expect("always");
        assert_eq!(caller_of(with_header, Some(&message)).expect("ok"), "carol");
        let without = auth.authenticate(&headers(&[]), None).expect("always");
        assert_eq!(
            caller_of(without.clone(), Some(&message)).expect("ok"),
            "meta"
        );
        assert_eq!(caller_of(without.clone(), None).expect("ok"), "local");
        assert_eq!(
            caller_of(without, Some(&Message::default())).expect("ok"),
            "local"
        );
    }

    #[test]
    fn invalid_self_asserted_ids_are_refused() {
        let auth = Authenticator::new(&BTreeMap::new(), &[]);
        let long = "x".repeat(200);
        let mut headers = HeaderMap::new();
        headers.insert(
            PARTICIPANT_HEADER,
            HeaderValue::from_str(&long).expect("header"),
        );
        let error = caller_of(auth.authenticate(&headers, None).expect("always"), None)
            .expect_err("too long");
        assert_eq!(error.code(), -32600);
        assert!(error.to_string().contains("X-Participant-Id"), "{error}");

        let mut message = Message::default();
        message
            .metadata
            .insert(PARTICIPANT_METADATA_KEY.into(), json!(42));
        let identity = auth.authenticate(&HeaderMap::new(), None).expect("always");
        let error = caller_of(identity, Some(&message)).expect_err("not a string");
        assert_eq!(error.code(), -32602);
        assert!(
            error.to_string().contains("message.metadata.participantId"),
            "{error}"
        );
    }

    #[test]
    fn a_self_asserted_id_is_never_an_admin() {
        let auth = Authenticator::new(&BTreeMap::new(), &["root".to_owned()]);
        let by_header = auth
            .authenticate(&headers(&[("x-participant-id", "root")]), None)
            .expect("always");
        let error = caller_of(by_header, None).expect_err("root needs a token");
        assert_eq!(error.reason(), "ROLE_REFUSED");
        assert!(error.to_string().contains("bearer token"), "{error}");
        let mut message = Message::default();
        message
            .metadata
            .insert(PARTICIPANT_METADATA_KEY.into(), json!("root"));
        let by_metadata = auth.authenticate(&HeaderMap::new(), None).expect("always");
        assert!(caller_of(by_metadata, Some(&message)).is_err());
        // With tokens, the token's participant is whoever the token says, admins included.
        let tokens = tokens();
        let bob = tokens
            .authenticate(&headers(&[("authorization", "Bearer tok-bob")]), None)
            .expect("valid");
        assert_eq!(caller_of(bob, None).expect("bob"), "bob");
    }

    #[test]
    fn wire_forms_of_a_refusal() {
        let rpc = serde_json::to_value(AuthError::UnknownToken.to_jsonrpc()).expect("json");
        assert_eq!(rpc["code"], json!(-31401));
        assert_eq!(rpc["data"][0]["reason"], json!("UNAUTHENTICATED"));
        assert_eq!(rpc["data"][0]["domain"], json!("a2a-protocol.org"));
        let rest = serde_json::to_value(AuthError::Missing.to_rest()).expect("json");
        assert_eq!(rest["error"]["code"], json!(401));
        assert_eq!(rest["error"]["status"], json!("UNAUTHENTICATED"));
        assert!(
            AuthError::UnknownToken
                .challenge()
                .to_str()
                .is_ok_and(|c| c.contains("invalid_token"))
        );
    }
}
