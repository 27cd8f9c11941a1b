//! Where a webhook may point (A2A 13.2: webhook URLs are an SSRF risk).
//!
//! Unless the operator sets `[push] allow_private = true`, a webhook must
//! resolve only to public addresses. What is public is decided by category,
//! not by pattern:
//!
//! * the IANA special-purpose registries, IPv4 and IPv6, every entry with its
//!   "Globally Reachable" column (`registry`, one table row per entry), plus
//!   multicast and, for IPv6, anything outside 2000::/3;
//! * an IPv6 address that embeds or translates an IPv4 address (IPv4-mapped,
//!   IPv4-compatible, IPv4-translated, NAT64 `64:ff9b::/96` and
//!   `64:ff9b:1::/48`, 6to4 `2002::/16`, Teredo `2001::/32`) is judged by the
//!   IPv4 address inside (for Teredo, both the server's and the client's), so
//!   `[64:ff9b::169.254.169.254]` is the cloud metadata address it stands for.
//!
//! The check runs when a configuration is created (a clear refusal) and
//! again on every delivery: host names through the HTTP client's resolver,
//! because a name can resolve elsewhere later (DNS rebinding), IP literals
//! before the request is made. Redirects are not followed, so a webhook
//! cannot bounce a delivery somewhere unchecked.

mod registry;

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use registry::{Embedding, Reach};

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
    if let Some(ip) = ip_literal(host) {
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
    match addresses
        .iter()
        .find_map(|address| judge(address.ip()).err())
    {
        Some(not_public) => Err(format!(
            "the webhook host `{host}` is {not_public}: not a public address; push \
             notifications reach such addresses only when the operator sets \
             `[push] allow_private = true`"
        )),
        None => Ok(()),
    }
}

/// The address `host` names when it is an IP literal (`[...]` for IPv6).
fn ip_literal(host: &str) -> Option<IpAddr> {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()
}

/// Refuse, at delivery, a webhook whose host is an IP literal that is not
/// public. A host name is checked by [`GuardedResolver`] as it is resolved,
/// but an IP literal never reaches a resolver, so a configuration stored
/// under a looser `allow_private` (or by an older version) is caught here.
pub(crate) fn check_literal_at_delivery(url: &str, allow_private: bool) -> Result<(), String> {
    if allow_private {
        return Ok(());
    }
    let parsed = Url::parse(url).map_err(|error| format!("`{url}` is not a URL: {error}"))?;
    let host = parsed.host_str().unwrap_or_default();
    match ip_literal(host) {
        Some(ip) => refuse_private(host, &[SocketAddr::new(ip, 0)]),
        None => Ok(()),
    }
}

/// Why an address is not public: the block it is in, and for an IPv6
/// address that carries an IPv4 address, that IPv4 address and its block.
#[derive(Debug)]
pub(crate) struct NotPublic {
    address: IpAddr,
    block: &'static str,
    /// The embedded IPv4 address that decided, and its block.
    inner: Option<(Ipv4Addr, &'static str)>,
}

impl fmt::Display for NotPublic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.inner {
            None => write!(f, "{} ({})", self.address, self.block),
            Some((inner, inner_block)) => write!(
                f,
                "{}, which carries the IPv4 address {inner} ({}), and {inner} is {inner_block}",
                self.address, self.block
            ),
        }
    }
}

/// Public, or why not: the IANA special-purpose registries decide
/// (`registry`); an IPv6 address that embeds or translates an IPv4 address
/// is judged by the IPv4 address inside.
pub(crate) fn judge(ip: IpAddr) -> Result<(), NotPublic> {
    match ip {
        IpAddr::V4(ip) => judge_v4(ip).map_err(|block| NotPublic {
            address: IpAddr::V4(ip),
            block,
            inner: None,
        }),
        IpAddr::V6(ip) => judge_v6(ip),
    }
}

/// `Err(block)` when `ip` is in a block that is not globally reachable.
fn judge_v4(ip: Ipv4Addr) -> Result<(), &'static str> {
    match registry::lookup(registry::IPV4, ip.to_bits()) {
        Some(block) if block.reach != Reach::Global => Err(block.name),
        _ => Ok(()),
    }
}

fn judge_v6(ip: Ipv6Addr) -> Result<(), NotPublic> {
    let refuse = |block, inner| NotPublic {
        address: IpAddr::V6(ip),
        block,
        inner,
    };
    let Some(block) = registry::lookup(registry::IPV6, ip.to_bits()) else {
        // 2000::/3 is the only block IANA allocates as global unicast.
        let global_unicast = ip.segments()[0] & 0xe000 == 0x2000;
        return if global_unicast {
            Ok(())
        } else {
            Err(refuse(
                "outside 2000::/3, the global unicast space (IANA IPv6 Address Space)",
                None,
            ))
        };
    };
    match block.reach {
        Reach::Global => Ok(()),
        Reach::Local => Err(refuse(block.name, None)),
        Reach::Embeds(embedding) => {
            for inner in embedded(ip, embedding) {
                if let Err(inner_block) = judge_v4(inner) {
                    return Err(refuse(block.name, Some((inner, inner_block))));
                }
            }
            Ok(())
        }
    }
}

/// The IPv4 addresses `ip` carries in the form `embedding`.
fn embedded(ip: Ipv6Addr, embedding: Embedding) -> Vec<Ipv4Addr> {
    let b = ip.octets();
    let at = |i: [usize; 4]| Ipv4Addr::new(b[i[0]], b[i[1]], b[i[2]], b[i[3]]);
    let last32 = at([12, 13, 14, 15]);
    match embedding {
        Embedding::Last32 => vec![last32],
        // RFC 6052 section 2.2: bits 64 to 71 are always skipped.
        // The /96 form first: it is the one the refusal names when several are private.
        Embedding::LocalUseNat64 => vec![
            last32,
            at([9, 10, 11, 12]),
            at([7, 9, 10, 11]),
            at([6, 7, 9, 10]),
        ],
        Embedding::SixToFour => vec![at([2, 3, 4, 5])],
        Embedding::Teredo => vec![at([4, 5, 6, 7]), Ipv4Addr::from_bits(!last32.to_bits())],
    }
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

    /// One row per registry entry (and per extra block), with an address in
    /// it, whether that address is public, and a word of the block's name
    /// the refusal carries. `every_block_has_a_row` checks nothing is left
    /// out.
    const TABLE: &[(&str, bool, &str)] = &[
        // IPv4 special-purpose registry.
        ("0.1.2.3", false, "This network"),
        ("0.0.0.0", false, "This host"),
        ("10.1.2.3", false, "Private-Use"),
        ("100.64.0.1", false, "Shared Address Space"),
        ("100.127.255.254", false, "Shared Address Space"),
        ("127.0.0.1", false, "Loopback"),
        ("127.255.255.254", false, "Loopback"),
        ("169.254.169.254", false, "Link Local"),
        ("172.16.0.1", false, "Private-Use"),
        ("172.31.255.255", false, "Private-Use"),
        ("192.0.0.100", false, "IETF Protocol Assignments"),
        ("192.0.0.1", false, "Service Continuity"),
        ("192.0.0.8", false, "dummy"),
        ("192.0.0.9", true, ""),
        ("192.0.0.10", true, ""),
        ("192.0.0.170", false, "NAT64/DNS64"),
        ("192.0.0.171", false, "NAT64/DNS64"),
        ("192.0.2.1", false, "TEST-NET-1"),
        ("192.31.196.1", true, ""),
        ("192.52.193.1", true, ""),
        ("192.88.99.1", false, "6to4 Relay"),
        ("192.168.0.1", false, "Private-Use"),
        ("192.175.48.1", true, ""),
        ("198.18.0.1", false, "Benchmarking"),
        ("198.19.255.255", false, "Benchmarking"),
        ("198.51.100.1", false, "TEST-NET-2"),
        ("203.0.113.1", false, "TEST-NET-3"),
        ("240.0.0.1", false, "Reserved"),
        ("255.255.255.255", false, "Broadcast"),
        ("224.0.0.1", false, "Multicast"),
        ("239.255.255.255", false, "Multicast"),
        // Public IPv4, including the neighbours of private blocks.
        ("8.8.8.8", true, ""),
        ("1.1.1.1", true, ""),
        ("192.0.1.1", true, ""),
        ("100.128.0.1", true, ""),
        ("172.32.0.1", true, ""),
        ("198.20.0.1", true, ""),
        // IPv6 special-purpose registry.
        ("::1", false, "Loopback"),
        ("::", false, "Unspecified"),
        ("::ffff:10.0.0.1", false, "IPv4-mapped"),
        ("::ffff:127.0.0.1", false, "IPv4-mapped"),
        ("::ffff:8.8.8.8", true, ""),
        ("64:ff9b::169.254.169.254", false, "well-known prefix"),
        ("64:ff9b::8.8.8.8", true, ""),
        ("64:ff9b:1::192.168.0.1", false, "local-use prefix"),
        // 8.8.8.8 at every RFC 6052 position a local-use prefix may use.
        ("64:ff9b:1:808:8:808:808:808", true, ""),
        ("64:ff9b:1:a00:1:808:808:808", false, "local-use prefix"),
        ("100::1", false, "Discard-Only"),
        ("100:0:0:1::1", false, "Dummy IPv6 Prefix"),
        ("2001:100::1", false, "IETF Protocol Assignments"),
        // RFC 4380's example: server 65.54.227.120, client 192.0.2.45.
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", false, "TEREDO"),
        ("2001:0:4136:e378:8000:63bf:f7f7:f7f7", true, ""),
        ("2001:0:a00:1::f7f7:f7f7", false, "TEREDO"),
        ("2001:1::1", true, ""),
        ("2001:1::2", true, ""),
        ("2001:1::3", true, ""),
        ("2001:2::1", false, "Benchmarking"),
        ("2001:3::1", true, ""),
        ("2001:4:112::1", true, ""),
        ("2001:10::1", false, "ORCHID"),
        ("2001:20::1", true, ""),
        ("2001:30::1", true, ""),
        ("2001:db8::1", false, "Documentation"),
        ("2002:a9fe:a9fe::1", false, "6to4"),
        ("2002:808:808::1", true, ""),
        ("2620:4f:8000::1", true, ""),
        ("3fff::1", false, "Documentation"),
        ("5f00::1", false, "Segment Routing"),
        ("fc00::1", false, "Unique-Local"),
        ("fd00::1", false, "Unique-Local"),
        ("fe80::1", false, "Link-Local"),
        // Outside the registry.
        ("::10.0.0.1", false, "IPv4-compatible"),
        ("::8.8.8.8", true, ""),
        ("::ffff:0:10.0.0.1", false, "IPv4-translated"),
        ("::ffff:0:8.8.8.8", true, ""),
        ("fec0::1", false, "Site-Local"),
        ("ff02::1", false, "Multicast"),
        ("4000::1", false, "global unicast"),
        ("2606:4700:4700::1111", true, ""),
    ];

    #[test]
    fn the_registries_decide_what_is_public() {
        for (address, public, block) in TABLE {
            let ip: IpAddr = address.parse().expect("ip");
            match judge(ip) {
                Ok(()) => assert!(public, "{address} was judged public"),
                Err(not_public) => {
                    assert!(!public, "{address} was refused: {not_public}");
                    let said = not_public.to_string();
                    assert!(said.contains(block), "{address}: {said}");
                }
            }
        }
    }

    #[test]
    fn every_block_has_a_row() {
        let rows: Vec<IpAddr> = TABLE
            .iter()
            .map(|(address, ..)| address.parse().expect("ip"))
            .collect();
        for block in registry::IPV4 {
            let hit = rows.iter().any(|ip| match ip {
                IpAddr::V4(ip) => registry::lookup(registry::IPV4, ip.to_bits())
                    .is_some_and(|found| std::ptr::eq(found, block)),
                IpAddr::V6(_) => false,
            });
            assert!(hit, "no row for {}", block.name);
        }
        for block in registry::IPV6 {
            let hit = rows.iter().any(|ip| match ip {
                IpAddr::V6(ip) => registry::lookup(registry::IPV6, ip.to_bits())
                    .is_some_and(|found| std::ptr::eq(found, block)),
                IpAddr::V4(_) => false,
            });
            assert!(hit, "no row for {}", block.name);
        }
    }

    #[test]
    fn an_embedded_address_is_named_in_the_refusal() {
        let ip: IpAddr = "64:ff9b::a9fe:a9fe".parse().expect("ip");
        let said = judge(ip).expect_err("the metadata address").to_string();
        assert!(said.contains("169.254.169.254"), "{said}");
        assert!(said.contains("Link Local"), "{said}");
    }

    #[test]
    fn literals_are_checked_again_at_delivery() {
        // Every example of issue 8 item 7, and IPv4-mapped loopback.
        for url in [
            "http://[64:ff9b::169.254.169.254]/latest/meta-data",
            "http://[64:ff9b:1::192.168.0.1]/x",
            "http://[2002:a9fe:a9fe::1]/x",
            "http://[::10.0.0.1]/x",
            "http://[::ffff:0:10.0.0.1]/x",
            "http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/x",
            "http://192.0.0.1/x",
            "http://[::ffff:127.0.0.1]:9/hook",
        ] {
            let refused = check_literal_at_delivery(url, false).expect_err(url);
            assert!(refused.contains("allow_private"), "{refused}");
            check_literal_at_delivery(url, true).expect("allowed");
        }
        // Names are the resolver's business.
        check_literal_at_delivery("http://localhost:9/x", false).expect("a name");
        check_literal_at_delivery("http://8.8.8.8/x", false).expect("public");
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
