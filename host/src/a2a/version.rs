//! The `A2A-Version` service parameter (spec 3.6 and 14.2.1).
//!
//! Every A2A request names the protocol version it speaks, in the `A2A-Version` header or,
//! as spec 3.6.1 allows, an `A2A-Version` query parameter. A missing or empty value means
//! 0.3 (spec 3.6.2: 0.3 clients send none). This server speaks 1.0 only, so:
//!
//! * `1.0` is accepted, and so is `1.0.<patch>` (patch numbers "MUST not be considered" in
//!   negotiation, spec 3.6);
//! * a missing or empty value is 0.3 and gets `VersionNotSupported`;
//! * anything else gets `VersionNotSupported` naming the version asked for and the one
//!   supported.
//!
//! The check belongs to the A2A endpoints, not to agent-card discovery: a client reads the
//! card to learn which versions an agent speaks before it can send the header.

use axum::http::HeaderMap;

use super::error::A2aError;
use super::types::PROTOCOL_VERSION;

/// The service parameter's name (header and query parameter; matched case-insensitively).
pub(crate) const A2A_VERSION_HEADER: &str = "A2A-Version";

/// The version a request without `A2A-Version` speaks.
pub(crate) const DEFAULT_VERSION: &str = "0.3";

/// Checks a version value, `None` meaning the parameter was absent.
pub(crate) fn check_version(value: Option<&str>) -> Result<(), A2aError> {
    let requested = value.map(str::trim).filter(|v| !v.is_empty());
    match requested {
        Some(version) if is_supported(version) => Ok(()),
        Some(version) => Err(A2aError::VersionNotSupported {
            requested: printable(version),
        }),
        None => Err(A2aError::VersionNotSupported {
            requested: DEFAULT_VERSION.to_owned(),
        }),
    }
}

/// Checks a request's version: the `A2A-Version` header if present, otherwise the
/// `A2A-Version` query parameter of `query` (the raw query string, without `?`), otherwise
/// the 0.3 default. A header that is not valid text is refused like any unsupported version.
pub(crate) fn check_request(headers: &HeaderMap, query: Option<&str>) -> Result<(), A2aError> {
    if let Some(header) = headers.get(A2A_VERSION_HEADER) {
        return match header.to_str() {
            Ok(value) => check_version(Some(value)),
            Err(_) => Err(A2aError::VersionNotSupported {
                requested: printable(&String::from_utf8_lossy(header.as_bytes())),
            }),
        };
    }
    let from_query = query.and_then(version_from_query);
    check_version(from_query.as_deref())
}

/// `1.0`, or `1.0.` followed by a numeric patch version.
fn is_supported(version: &str) -> bool {
    match version.strip_prefix(PROTOCOL_VERSION) {
        Some("") => true,
        Some(rest) => rest
            .strip_prefix('.')
            .is_some_and(|patch| !patch.is_empty() && patch.bytes().all(|b| b.is_ascii_digit())),
        None => false,
    }
}

/// The value of the first `A2A-Version` parameter of a query string. Version strings need no
/// escaping, so only `%2E` (`.`) and `+`/`%20` (space, trimmed later) are decoded; any other
/// escape stays as is and is then refused as an unsupported version.
fn version_from_query(query: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        key.eq_ignore_ascii_case(A2A_VERSION_HEADER).then(|| {
            value
                .replace('+', " ")
                .replace("%20", " ")
                .replace("%2E", ".")
                .replace("%2e", ".")
        })
    })
}

/// The requested version as it will appear in an error message: at most 32 characters, no
/// control characters, so a client cannot inject lines into logs or responses.
fn printable(version: &str) -> String {
    let mut out: String = version
        .chars()
        .filter(|c| !c.is_control())
        .take(32)
        .collect();
    if version.chars().filter(|c| !c.is_control()).count() > 32 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn requested(result: Result<(), A2aError>) -> String {
        match result {
            Err(A2aError::VersionNotSupported { requested }) => requested,
            other => panic!("expected VersionNotSupported, got {other:?}"),
        }
    }

    #[test]
    fn accepts_1_0_and_its_patch_versions() {
        for version in ["1.0", "1.0.0", "1.0.1", "1.0.12", " 1.0 "] {
            assert_eq!(check_version(Some(version)), Ok(()), "{version}");
        }
    }

    #[test]
    fn missing_or_empty_means_0_3() {
        for value in [None, Some(""), Some("   ")] {
            let error = check_version(value).expect_err("0.3 is not supported");
            assert_eq!(error.code(), -32009);
            assert_eq!(requested(Err(error)), "0.3");
        }
    }

    #[test]
    fn other_versions_are_refused_by_name() {
        for version in [
            "0.3", "0.3.0", "0.5", "1", "1.1", "1.01", "10.0", "2.0", "1.0.", "1.0.x", "1.0.1a",
            "1.0-rc1", "v1.0", "1.0,0.3", "latest",
        ] {
            assert_eq!(
                requested(check_version(Some(version))),
                version,
                "{version}"
            );
        }
        let error = check_version(Some("0.5")).expect_err("refused");
        assert!(
            error
                .to_string()
                .contains("this agent supports version 1.0"),
            "{error}"
        );
    }

    #[test]
    fn requested_version_is_sanitised() {
        let long = "9".repeat(100);
        let shown = requested(check_version(Some(&long)));
        assert_eq!(shown.chars().count(), 33);
        assert!(shown.ends_with('…'));
        assert_eq!(requested(check_version(Some("0.\u{7}3"))), "0.3");
    }

    #[test]
    fn header_takes_precedence_over_query() {
        let mut headers = HeaderMap::new();
        assert_eq!(requested(check_request(&headers, None)), "0.3");
        assert_eq!(check_request(&headers, Some("A2A-Version=1.0")), Ok(()));
        assert_eq!(
            check_request(&headers, Some("historyLength=3&a2a-version=1.0.2")),
            Ok(())
        );
        assert_eq!(check_request(&headers, Some("A2A-Version=1%2E0")), Ok(()));
        assert_eq!(
            requested(check_request(&headers, Some("A2A-Version=0.3"))),
            "0.3"
        );
        assert_eq!(
            requested(check_request(&headers, Some("A2A-Version="))),
            "0.3"
        );
        assert_eq!(requested(check_request(&headers, Some("other=1.0"))), "0.3");

        headers.insert("a2a-version", HeaderValue::from_static("1.0"));
        assert_eq!(check_request(&headers, Some("A2A-Version=0.3")), Ok(()));
        headers.insert("A2A-Version", HeaderValue::from_static("0.3"));
        assert_eq!(
            requested(check_request(&headers, Some("A2A-Version=1.0"))),
            "0.3"
        );
        headers.insert("A2A-Version", HeaderValue::from_static(""));
        assert_eq!(requested(check_request(&headers, None)), "0.3");
    }

    #[test]
    fn non_text_header_is_refused() {
        let mut headers = HeaderMap::new();
        let value = HeaderValue::from_bytes(b"1.0\xff").expect("obs-text is a valid header value");
        headers.insert(A2A_VERSION_HEADER, value);
        let shown = requested(check_request(&headers, None));
        assert!(shown.starts_with("1.0"), "{shown}");
    }
}
