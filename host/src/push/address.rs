//! Where a webhook may point (A2A 13.2: webhook URLs are an SSRF risk).
//!
//! Unless the operator sets `[push] allow_private = true`, a webhook must
//! resolve only to public addresses: not loopback, private, link-local,
//! carrier-grade NAT, multicast, documentation or otherwise reserved ranges.
//! The check runs when a configuration is created (a clear refusal) and
//! again on every delivery, through the HTTP client's resolver, because a
//! name can resolve elsewhere later (DNS rebinding). Redirects are not
//! followed, so a webhook cannot bounce a delivery somewhere unchecked.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Check a webhook URL: http or https, a host, no credentials in it, and (unless
/// `allow_private`) public addresses only. Returns the parsed URL or what
/// is wrong, for the client.
pub(crate) async fn check_url(url: &str, allow_private: bool) -> Result<Url, String> {
    let parsed = Url::parse(url).map_err(|error| format!("`{url}` is not a URL: {error}"))?;
    match parsed.scheme() {
        "http" | "https" => {}
        other => {
            return Err(format!(
                "`{url}`: a webhook must be http or https, not {other}"
            ));
        }
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(
            "a webhook URL cannot carry credentials; put them in `authentication`".to_owned(),
        );
    }
    let host = parsed
        .host_str()
        .ok_or_else(|| format!("`{url}` has no host"))?;
    let port = parsed.port_or_known_default().unwrap_or(80);
    let addresses = resolve(host, port).await?;
    if !allow_private {
        refuse_private(host, &addresses)?;
    }
    Ok(parsed)
}

/// The addresses `host` stands for: itself when it is an IP literal.
async fn resolve(host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
    let literal = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = literal.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let addresses: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|error| format!("cannot resolve the webhook host `{host}`: {error}"))?
        .collect();
    if addresses.is_empty() {
        return Err(format!("the webhook host `{host}` has no addresses"));
    }
    Ok(addresses)
}

fn refuse_private(host: &str, addresses: &[SocketAddr]) -> Result<(), String> {
    match addresses.iter().find(|address| !is_public(address.ip())) {
        Some(address) => Err(format!(
            "the webhook host `{host}` is {}, a private, loopback or otherwise non-public \
             address; push notifications reach such addresses only when the operator sets \
             `[push] allow_private = true`",
            address.ip()
        )),
        None => Ok(()),
    }
}

/// Whether `ip` is an ordinary public unicast address.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => is_public_v4(ip),
        IpAddr::V6(ip) => match ip.to_ipv4_mapped() {
            Some(mapped) => is_public_v4(mapped),
            None => is_public_v6(ip),
        },
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    let reserved = a == 0                          // "this network"
        || (a == 100 && (64..128).contains(&b))    // carrier-grade NAT
        || (a == 198 && (b == 18 || b == 19))      // benchmarking
        || a >= 240; // reserved, broadcast
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_multicast()
        || ip.is_documentation()
        || reserved)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let documentation = ip.segments()[0] == 0x2001 && ip.segments()[1] == 0xdb8;
    let site_local = ip.segments()[0] & 0xffc0 == 0xfec0;
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || ip.is_unique_local()
        || ip.is_unicast_link_local()
        || documentation
        || site_local)
}

/// The delivery client's resolver: the system's, refusing non-public
/// addresses unless they are allowed.
pub(crate) struct GuardedResolver {
    pub(crate) allow_private: bool,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_private = self.allow_private;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addresses = resolve(&host, 0).await?;
            if !allow_private {
                refuse_private(&host, &addresses)?;
            }
            let addresses: Addrs = Box::new(addresses.into_iter());
            Ok(addresses)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_addresses_are_public() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "2001:db8::1",
        ] {
            let ip: IpAddr = private.parse().expect("ip");
            assert!(!is_public(ip), "{private}");
        }
        for public in ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"] {
            let ip: IpAddr = public.parse().expect("ip");
            assert!(is_public(ip), "{public}");
        }
    }

    #[tokio::test]
    async fn webhooks_are_checked_before_they_are_accepted() {
        let refused = check_url("http://127.0.0.1:9/hook", false)
            .await
            .expect_err("loopback refused");
        assert!(refused.contains("allow_private"), "{refused}");
        assert!(check_url("http://127.0.0.1:9/hook", true).await.is_ok());
        let refused = check_url("http://[::1]/hook", false)
            .await
            .expect_err("loopback refused");
        assert!(refused.contains("::1"), "{refused}");
        for bad in [
            "ftp://example.com/x",
            "not a url",
            "http://u:p@example.com/x",
        ] {
            assert!(check_url(bad, true).await.is_err(), "{bad}");
        }
        check_url("https://127.0.0.1/x", true)
            .await
            .expect("https is a webhook too");
    }
}
