//! Network rules: which HTTP requests a plugin may make.
//!
//! A plugin lists the requests it makes in plugin.json
//! (`"capabilities": {"network": ["GET https://api.example.com"]}`) and the
//! operator grants rules of the same form (`[plugins.grants.<name>] network
//! = [...]`). A request goes out only if it matches a rule of both lists:
//! the plugin gets the intersection ([`effective`]), never more than it
//! asked for, never more than was granted.
//!
//! A rule is `[METHODS ]SCHEME://HOST[:PORT]`:
//!
//! * `METHODS`: `GET`, or several joined by commas (`GET,POST`); none means
//!   every method;
//! * `SCHEME`: `http` or `https`;
//! * `HOST`: a DNS name (`api.example.com`), `*.` and a name for its
//!   subdomains (`*.example.com` matches `a.example.com` and
//!   `a.b.example.com`, not `example.com`), or an IP address (`127.0.0.1`,
//!   `[::1]`);
//! * `PORT`: the scheme's (80, 443) when left out.
//!
//! No path, query or credentials: a rule names where requests go, not what
//! they ask. Where a DNS name may lead is checked when the request is made
//! (`wasm/http.rs`): only to public addresses.

use std::collections::BTreeSet;
use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use serde::Deserialize;

/// One rule.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(try_from = "String")]
pub struct NetworkRule {
    /// `None`: every method.
    methods: Option<BTreeSet<String>>,
    scheme: Scheme,
    host: Host,
    port: u16,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Scheme {
    Http,
    Https,
}

impl Scheme {
    fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }

    fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Host {
    /// A DNS name, lower case, without a trailing dot.
    Name(String),
    /// `*.suffix`: every name below `suffix` (stored without the `*.`).
    Below(String),
    Ip(IpAddr),
}

impl Host {
    /// Whether a request to `host` (a name in lower case, or an address)
    /// falls under this one.
    fn matches(&self, host: &RequestHost) -> bool {
        match (self, host) {
            (Host::Name(name), RequestHost::Name(asked)) => name == asked,
            (Host::Below(suffix), RequestHost::Name(asked)) => is_below(asked, suffix),
            (Host::Ip(ip), RequestHost::Ip(asked)) => ip == asked,
            _ => false,
        }
    }

    /// The hosts both cover, when that is one host pattern.
    fn intersect(&self, other: &Host) -> Option<Host> {
        match (self, other) {
            (Host::Name(a), Host::Name(b)) if a == b => Some(self.clone()),
            (Host::Ip(a), Host::Ip(b)) if a == b => Some(self.clone()),
            (Host::Name(name), Host::Below(suffix)) | (Host::Below(suffix), Host::Name(name))
                if is_below(name, suffix) =>
            {
                Some(Host::Name(name.clone()))
            }
            (Host::Below(a), Host::Below(b)) if a == b || is_below(a, b) => Some(self.clone()),
            (Host::Below(a), Host::Below(b)) if is_below(b, a) => Some(other.clone()),
            _ => None,
        }
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(name) => f.write_str(name),
            Host::Below(suffix) => write!(f, "*.{suffix}"),
            Host::Ip(IpAddr::V4(ip)) => write!(f, "{ip}"),
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
        }
    }
}

/// `name` is a subdomain of `suffix` (not `suffix` itself).
fn is_below(name: &str, suffix: &str) -> bool {
    name.strip_suffix(suffix)
        .is_some_and(|rest| rest.len() > 1 && rest.ends_with('.'))
}

/// Why a rule is not one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "network rule `{rule}`: {problem} (a rule is `[METHODS ]http[s]://HOST[:PORT]`, e.g. `GET https://api.example.com`)"
)]
pub struct InvalidRule {
    rule: String,
    problem: String,
}

impl FromStr for NetworkRule {
    type Err = InvalidRule;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = |problem: &str| InvalidRule {
            rule: text.to_owned(),
            problem: problem.to_owned(),
        };
        // Methods come first, if any: a first word that is already a URL
        // (`https://exa mple.com`) is a bad host, not bad methods.
        let (methods, target) = match text.trim().split_once(char::is_whitespace) {
            Some((methods, target)) if !methods.contains("://") => (Some(methods), target.trim()),
            _ => (None, text.trim()),
        };
        let methods = methods
            .map(|list| {
                list.split(',')
                    .map(|method| {
                        let method = method.trim();
                        let valid = !method.is_empty()
                            && method.bytes().all(|byte| byte.is_ascii_uppercase());
                        valid
                            .then(|| method.to_owned())
                            .ok_or_else(|| invalid("methods are upper-case words joined by commas"))
                    })
                    .collect::<Result<BTreeSet<String>, _>>()
            })
            .transpose()?;
        let (scheme, rest) = target
            .split_once("://")
            .ok_or_else(|| invalid("it needs a scheme, http:// or https://"))?;
        let scheme = match scheme {
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            _ => return Err(invalid("the scheme is http or https")),
        };
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        if authority.contains(['/', '?', '#']) {
            return Err(invalid("a rule has no path or query: it names a host"));
        }
        if authority.contains('@') {
            return Err(invalid("a rule has no credentials"));
        }
        let (host, port) = split_port(authority).map_err(|problem| invalid(&problem))?;
        let host = parse_host(host).map_err(|problem| invalid(&problem))?;
        Ok(NetworkRule {
            methods,
            scheme,
            host,
            port: port.unwrap_or(scheme.default_port()),
        })
    }
}

impl TryFrom<String> for NetworkRule {
    type Error = InvalidRule;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse()
    }
}

/// `host[:port]`, IPv6 in brackets.
fn split_port(authority: &str) -> Result<(&str, Option<u16>), String> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let end = rest
            .find(']')
            .ok_or_else(|| "an IPv6 address ends with `]`".to_owned())?;
        let port = rest[end + 1..].strip_prefix(':');
        if port.is_none() && end + 1 != rest.len() {
            return Err("`]` is followed by `:PORT` or nothing".to_owned());
        }
        (&authority[..end + 2], port)
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let port = port
        .map(|port| {
            port.parse::<u16>()
                .ok()
                .filter(|port| *port != 0)
                .ok_or_else(|| format!("`{port}` is not a port (1 to 65535)"))
        })
        .transpose()?;
    Ok((host, port))
}

fn parse_host(host: &str) -> Result<Host, String> {
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return inner
            .parse::<std::net::Ipv6Addr>()
            .map(|ip| Host::Ip(IpAddr::V6(ip)))
            .map_err(|_| format!("`{host}` is not an IPv6 address"));
    }
    if let Ok(ip) = host.parse::<std::net::Ipv4Addr>() {
        return Ok(Host::Ip(IpAddr::V4(ip)));
    }
    let (below, name) = match host.strip_prefix("*.") {
        Some(name) => (true, name),
        None => (false, host),
    };
    let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    let labels_ok = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            (1..=63).contains(&label.len())
                && label
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        });
    if !labels_ok {
        return Err(format!(
            "`{host}` is not a host name (letters, digits and `-` in dot-separated labels), \
             `*.` and one, or an IP address"
        ));
    }
    if below && !name.contains('.') {
        return Err(format!(
            "`{host}` would cover a whole top-level domain; name at least two labels after `*.`"
        ));
    }
    Ok(if below {
        Host::Below(name)
    } else {
        Host::Name(name)
    })
}

impl fmt::Display for NetworkRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(methods) = &self.methods {
            let methods: Vec<&str> = methods.iter().map(String::as_str).collect();
            write!(f, "{} ", methods.join(","))?;
        }
        write!(f, "{}://{}", self.scheme.as_str(), self.host)?;
        if self.port != self.scheme.default_port() {
            write!(f, ":{}", self.port)?;
        }
        Ok(())
    }
}

/// Where one request goes, as the rules see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestTarget {
    pub method: String,
    /// `http` or `https` (anything else matches no rule).
    pub scheme: String,
    host: RequestHost,
    pub port: u16,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum RequestHost {
    Name(String),
    Ip(IpAddr),
}

impl RequestTarget {
    /// The target of a request `method` to `uri`; `None` when the URI has no
    /// scheme or host.
    pub fn of(method: &str, uri: &http::Uri) -> Option<Self> {
        let scheme = uri.scheme_str()?.to_ascii_lowercase();
        let host = uri.host()?;
        let default_port = match scheme.as_str() {
            "http" => 80,
            "https" => 443,
            _ => 0,
        };
        let host = match host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
        {
            Ok(ip) => RequestHost::Ip(ip),
            Err(_) => {
                let name = host.strip_suffix('.').unwrap_or(host);
                RequestHost::Name(name.to_ascii_lowercase())
            }
        };
        Some(RequestTarget {
            method: method.to_owned(),
            port: uri.port_u16().unwrap_or(default_port),
            scheme,
            host,
        })
    }

    /// Whether the host is an IP address (which no resolver sees).
    pub fn ip(&self) -> Option<IpAddr> {
        match self.host {
            RequestHost::Ip(ip) => Some(ip),
            RequestHost::Name(_) => None,
        }
    }
}

impl fmt::Display for RequestTarget {
    /// `GET https://api.example.com:443`: what is logged of a request (never
    /// its path or query, which may hold secrets).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = match &self.host {
            RequestHost::Name(name) => name.clone(),
            RequestHost::Ip(IpAddr::V4(ip)) => ip.to_string(),
            RequestHost::Ip(IpAddr::V6(ip)) => format!("[{ip}]"),
        };
        write!(f, "{} {}://{host}:{}", self.method, self.scheme, self.port)
    }
}

impl NetworkRule {
    /// Whether `target` falls under this rule: its method, scheme, host and
    /// port.
    pub fn matches(&self, target: &RequestTarget) -> bool {
        self.methods
            .as_ref()
            .is_none_or(|methods| methods.contains(&target.method))
            && self.scheme.as_str() == target.scheme
            && self.port == target.port
            && self.host.matches(&target.host)
    }

    /// The requests both rules allow, when there are any.
    fn intersect(&self, other: &NetworkRule) -> Option<NetworkRule> {
        if self.scheme != other.scheme || self.port != other.port {
            return None;
        }
        let methods = match (&self.methods, &other.methods) {
            (None, None) => None,
            (Some(methods), None) | (None, Some(methods)) => Some(methods.clone()),
            (Some(a), Some(b)) => {
                let both: BTreeSet<String> = a.intersection(b).cloned().collect();
                if both.is_empty() {
                    return None;
                }
                Some(both)
            }
        };
        Some(NetworkRule {
            methods,
            scheme: self.scheme,
            host: self.host.intersect(&other.host)?,
            port: self.port,
        })
    }
}

/// What a plugin that asked for `asked` and was granted `granted` may reach:
/// every request matching an asked rule and a granted one, as rules.
pub fn effective(asked: &[NetworkRule], granted: &[NetworkRule]) -> Vec<NetworkRule> {
    let rules: BTreeSet<NetworkRule> = asked
        .iter()
        .flat_map(|asked| {
            granted
                .iter()
                .filter_map(|granted| asked.intersect(granted))
        })
        .collect();
    rules.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(text: &str) -> NetworkRule {
        text.parse().unwrap_or_else(|err| panic!("{text}: {err}"))
    }

    fn target(method: &str, url: &str) -> RequestTarget {
        RequestTarget::of(method, &url.parse().expect("a URI")).expect("a target")
    }

    #[test]
    fn rules_parse_to_one_canonical_form() {
        for (text, canonical) in [
            ("https://api.example.com", "https://api.example.com"),
            ("https://API.Example.com.", "https://api.example.com"),
            ("https://api.example.com:443/", "https://api.example.com"),
            ("http://api.example.com:8080", "http://api.example.com:8080"),
            ("GET https://x.example", "GET https://x.example"),
            ("POST,GET https://x.example", "GET,POST https://x.example"),
            ("https://*.example.com", "https://*.example.com"),
            ("http://127.0.0.1:9000", "http://127.0.0.1:9000"),
            ("http://[::1]:9000", "http://[::1]:9000"),
            ("https://[2001:db8::1]", "https://[2001:db8::1]"),
        ] {
            assert_eq!(rule(text).to_string(), canonical, "{text}");
        }
    }

    #[test]
    fn bad_rules_say_what_is_wrong() {
        for (text, problem) in [
            ("api.example.com", "needs a scheme"),
            ("ftp://x.example", "http or https"),
            ("https://x.example/path", "no path"),
            ("https://x.example?q=1", "no path"),
            ("https://user:pw@x.example", "no credentials"),
            ("https://x.example:0", "not a port"),
            ("https://x.example:99999", "not a port"),
            ("https://x.example:http", "not a port"),
            ("get https://x.example", "upper-case"),
            ("GET,,POST https://x.example", "upper-case"),
            ("https://exa mple.com", "not a host name"),
            ("https://-x.example", "not a host name"),
            ("https://*.com", "top-level domain"),
            ("https://*", "not a host name"),
            ("https://a.*.example", "not a host name"),
            ("https://[::1", "ends with `]`"),
            ("https://[::1]x", "followed by"),
            ("https://[zz::1]", "not an IPv6 address"),
            ("https://", "not a host name"),
        ] {
            let error = text.parse::<NetworkRule>().expect_err(text).to_string();
            assert!(error.contains(problem), "{text}: {error}");
            assert!(error.contains(text.trim()), "{text}: {error}");
        }
    }

    #[test]
    fn a_request_matches_by_method_scheme_host_and_port() {
        // (rule, method, url, matches)
        let cases = [
            (
                "https://api.example.com",
                "GET",
                "https://api.example.com/v1?q=1",
                true,
            ),
            (
                "https://api.example.com",
                "DELETE",
                "https://api.example.com/",
                true,
            ),
            (
                "https://api.example.com",
                "GET",
                "https://API.example.com./x",
                true,
            ),
            (
                "https://api.example.com",
                "GET",
                "https://api.example.com:443/",
                true,
            ),
            (
                "https://api.example.com",
                "GET",
                "http://api.example.com/",
                false,
            ),
            (
                "https://api.example.com",
                "GET",
                "https://api.example.com:8443/",
                false,
            ),
            (
                "https://api.example.com",
                "GET",
                "https://evil.example.com/",
                false,
            ),
            (
                "https://api.example.com",
                "GET",
                "https://api.example.com.evil.net/",
                false,
            ),
            (
                "https://api.example.com",
                "GET",
                "https://xapi.example.com/",
                false,
            ),
            (
                "GET https://api.example.com",
                "GET",
                "https://api.example.com/",
                true,
            ),
            (
                "GET https://api.example.com",
                "POST",
                "https://api.example.com/",
                false,
            ),
            (
                "GET,POST https://api.example.com",
                "POST",
                "https://api.example.com/",
                true,
            ),
            (
                "https://*.example.com",
                "GET",
                "https://a.example.com/",
                true,
            ),
            (
                "https://*.example.com",
                "GET",
                "https://a.b.example.com/",
                true,
            ),
            (
                "https://*.example.com",
                "GET",
                "https://example.com/",
                false,
            ),
            (
                "https://*.example.com",
                "GET",
                "https://badexample.com/",
                false,
            ),
            (
                "http://127.0.0.1:9000",
                "GET",
                "http://127.0.0.1:9000/x",
                true,
            ),
            (
                "http://127.0.0.1:9000",
                "GET",
                "http://127.0.0.2:9000/x",
                false,
            ),
            (
                "http://127.0.0.1:9000",
                "GET",
                "http://localhost:9000/x",
                false,
            ),
            (
                "http://localhost:9000",
                "GET",
                "http://127.0.0.1:9000/x",
                false,
            ),
            ("http://[::1]:9000", "GET", "http://[::1]:9000/", true),
            (
                "http://[::1]:9000",
                "GET",
                "http://[0:0:0:0:0:0:0:1]:9000/",
                true,
            ),
            ("http://[::1]:9000", "GET", "http://127.0.0.1:9000/", false),
        ];
        for (text, method, url, expected) in cases {
            assert_eq!(
                rule(text).matches(&target(method, url)),
                expected,
                "{text} vs {method} {url}"
            );
        }
    }

    #[test]
    fn a_plugin_gets_what_it_asked_for_and_was_granted() {
        let rules = |texts: &[&str]| texts.iter().map(|t| rule(t)).collect::<Vec<_>>();
        let shown =
            |rules: Vec<NetworkRule>| rules.iter().map(|r| r.to_string()).collect::<Vec<_>>();
        // (asked, granted, effective)
        let cases: [(&[&str], &[&str], &[&str]); 10] = [
            (&["https://a.example"], &[], &[]),
            (&[], &["https://a.example"], &[]),
            (
                &["https://a.example"],
                &["https://a.example"],
                &["https://a.example"],
            ),
            (&["https://a.example"], &["https://b.example"], &[]),
            (&["https://a.example"], &["http://a.example"], &[]),
            (&["https://a.example"], &["https://a.example:8443"], &[]),
            (
                &["GET https://a.example"],
                &["https://a.example"],
                &["GET https://a.example"],
            ),
            (
                &["GET,POST https://a.example"],
                &["POST,PUT https://a.example"],
                &["POST https://a.example"],
            ),
            (&["GET https://a.example"], &["POST https://a.example"], &[]),
            (
                &["https://*.example.com", "https://api.other.org"],
                &[
                    "https://api.example.com",
                    "https://*.other.org",
                    "https://*.b.example.com",
                ],
                &[
                    "https://api.example.com",
                    "https://api.other.org",
                    "https://*.b.example.com",
                ],
            ),
        ];
        for (asked, granted, expected) in cases {
            assert_eq!(
                shown(effective(&rules(asked), &rules(granted))),
                expected,
                "{asked:?} / {granted:?}"
            );
        }
    }
}
