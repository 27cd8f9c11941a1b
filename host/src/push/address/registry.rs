//! The IANA special-purpose address registries, as tables: which address
//! blocks are not globally reachable, and so never a webhook's destination
//! unless the operator allows private addresses.
//!
//! Sources, as of 2025: "IANA IPv4 Special-Purpose Address Registry"
//! (<https://www.iana.org/assignments/iana-ipv4-special-registry>) and "IANA
//! IPv6 Special-Purpose Address Registry"
//! (<https://www.iana.org/assignments/iana-ipv6-special-registry>), one row
//! per registry entry with its "Globally Reachable" column. Where that
//! column says N/A (a deprecated block, or one whose reachability depends on
//! an embedded address), the entry says how it is judged instead.
//!
//! Blocks outside the special-purpose registries that are still not unicast
//! destinations on the Internet are listed after them, with their source:
//! IPv4 multicast, and for IPv6 multicast, the deprecated site-local block,
//! the deprecated IPv4-compatible and the IPv4-translated forms, and
//! everything outside 2000::/3, the only block IANA allocates as global
//! unicast.

use std::net::{Ipv4Addr, Ipv6Addr};

/// How an address in a block is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reach {
    /// Globally reachable: a webhook may point here.
    Global,
    /// Not globally reachable.
    Local,
    /// Judged by the IPv4 address(es) the IPv6 address embeds or translates.
    Embeds(Embedding),
}

/// Where an IPv6 address carries an IPv4 address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Embedding {
    /// The last 32 bits (IPv4-mapped, IPv4-compatible, IPv4-translated,
    /// NAT64 well-known prefix: RFC 4291, RFC 2765, RFC 6052 with a /96).
    Last32,
    /// NAT64 local-use prefix (RFC 8215): the operator chooses the prefix
    /// length, so the IPv4 address may sit at any RFC 6052 position inside
    /// a /48; every one of them is judged.
    LocalUseNat64,
    /// 6to4 (RFC 3056): bits 16 to 47.
    SixToFour,
    /// Teredo (RFC 4380): the server's IPv4 in bits 32 to 63 and the
    /// client's, inverted, in the last 32 bits; both are judged.
    Teredo,
}

/// One block.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Block<A> {
    /// The first address.
    pub(crate) network: A,
    /// The prefix length.
    pub(crate) len: u8,
    /// The registry's name for it, with its RFC.
    pub(crate) name: &'static str,
    pub(crate) reach: Reach,
}

const fn v4(a: u8, b: u8, c: u8, d: u8, len: u8, name: &'static str, reach: Reach) -> Block<u32> {
    Block {
        network: Ipv4Addr::new(a, b, c, d).to_bits(),
        len,
        name,
        reach,
    }
}

const fn v6(segments: [u16; 8], len: u8, name: &'static str, reach: Reach) -> Block<u128> {
    let [a, b, c, d, e, f, g, h] = segments;
    Block {
        network: Ipv6Addr::new(a, b, c, d, e, f, g, h).to_bits(),
        len,
        name,
        reach,
    }
}

use Reach::{Embeds, Global, Local};

/// The IPv4 special-purpose registry, every entry, then IPv4 multicast.
pub(crate) static IPV4: &[Block<u32>] = &[
    v4(0, 0, 0, 0, 8, "\"This network\" (RFC 791)", Local),
    v4(
        0,
        0,
        0,
        0,
        32,
        "\"This host on this network\" (RFC 1122)",
        Local,
    ),
    v4(10, 0, 0, 0, 8, "Private-Use (RFC 1918)", Local),
    v4(100, 64, 0, 0, 10, "Shared Address Space (RFC 6598)", Local),
    v4(127, 0, 0, 0, 8, "Loopback (RFC 1122)", Local),
    v4(169, 254, 0, 0, 16, "Link Local (RFC 3927)", Local),
    v4(172, 16, 0, 0, 12, "Private-Use (RFC 1918)", Local),
    v4(
        192,
        0,
        0,
        0,
        24,
        "IETF Protocol Assignments (RFC 6890)",
        Local,
    ),
    v4(
        192,
        0,
        0,
        0,
        29,
        "IPv4 Service Continuity Prefix (RFC 7335)",
        Local,
    ),
    v4(192, 0, 0, 8, 32, "IPv4 dummy address (RFC 7600)", Local),
    v4(
        192,
        0,
        0,
        9,
        32,
        "Port Control Protocol Anycast (RFC 7723)",
        Global,
    ),
    v4(
        192,
        0,
        0,
        10,
        32,
        "Traversal Using Relays around NAT Anycast (RFC 8155)",
        Global,
    ),
    v4(
        192,
        0,
        0,
        170,
        32,
        "NAT64/DNS64 Discovery (RFC 8880)",
        Local,
    ),
    v4(
        192,
        0,
        0,
        171,
        32,
        "NAT64/DNS64 Discovery (RFC 8880)",
        Local,
    ),
    v4(
        192,
        0,
        2,
        0,
        24,
        "Documentation (TEST-NET-1, RFC 5737)",
        Local,
    ),
    v4(192, 31, 196, 0, 24, "AS112-v4 (RFC 7535)", Global),
    v4(192, 52, 193, 0, 24, "AMT (RFC 7450)", Global),
    // N/A in the registry: deprecated, an anycast relay no webhook has any business with.
    v4(
        192,
        88,
        99,
        0,
        24,
        "Deprecated (6to4 Relay Anycast, RFC 7526)",
        Local,
    ),
    v4(192, 168, 0, 0, 16, "Private-Use (RFC 1918)", Local),
    v4(
        192,
        175,
        48,
        0,
        24,
        "Direct Delegation AS112 Service (RFC 7534)",
        Global,
    ),
    v4(198, 18, 0, 0, 15, "Benchmarking (RFC 2544)", Local),
    v4(
        198,
        51,
        100,
        0,
        24,
        "Documentation (TEST-NET-2, RFC 5737)",
        Local,
    ),
    v4(
        203,
        0,
        113,
        0,
        24,
        "Documentation (TEST-NET-3, RFC 5737)",
        Local,
    ),
    v4(240, 0, 0, 0, 4, "Reserved (RFC 1112)", Local),
    v4(255, 255, 255, 255, 32, "Limited Broadcast (RFC 919)", Local),
    // Not in the special-purpose registry: the multicast address space registry.
    v4(224, 0, 0, 0, 4, "Multicast (RFC 5771)", Local),
];

/// The IPv6 special-purpose registry, every entry, then the other blocks
/// that are not global unicast destinations.
pub(crate) static IPV6: &[Block<u128>] = &[
    v6(
        [0, 0, 0, 0, 0, 0, 0, 1],
        128,
        "Loopback Address (RFC 4291)",
        Local,
    ),
    v6([0; 8], 128, "Unspecified Address (RFC 4291)", Local),
    v6(
        [0, 0, 0, 0, 0, 0xffff, 0, 0],
        96,
        "IPv4-mapped Address (RFC 4291)",
        Embeds(Embedding::Last32),
    ),
    v6(
        [0x64, 0xff9b, 0, 0, 0, 0, 0, 0],
        96,
        "IPv4-IPv6 Translation, well-known prefix (RFC 6052)",
        Embeds(Embedding::Last32),
    ),
    v6(
        [0x64, 0xff9b, 1, 0, 0, 0, 0, 0],
        48,
        "IPv4-IPv6 Translation, local-use prefix (RFC 8215)",
        Embeds(Embedding::LocalUseNat64),
    ),
    v6(
        [0x100, 0, 0, 0, 0, 0, 0, 0],
        64,
        "Discard-Only Address Block (RFC 6666)",
        Local,
    ),
    v6(
        [0x100, 0, 0, 1, 0, 0, 0, 0],
        64,
        "Dummy IPv6 Prefix (RFC 9780)",
        Local,
    ),
    v6(
        [0x2001, 0, 0, 0, 0, 0, 0, 0],
        23,
        "IETF Protocol Assignments (RFC 2928)",
        Local,
    ),
    v6(
        [0x2001, 0, 0, 0, 0, 0, 0, 0],
        32,
        "TEREDO (RFC 4380)",
        Embeds(Embedding::Teredo),
    ),
    v6(
        [0x2001, 1, 0, 0, 0, 0, 0, 1],
        128,
        "Port Control Protocol Anycast (RFC 7723)",
        Global,
    ),
    v6(
        [0x2001, 1, 0, 0, 0, 0, 0, 2],
        128,
        "Traversal Using Relays around NAT Anycast (RFC 8155)",
        Global,
    ),
    v6(
        [0x2001, 1, 0, 0, 0, 0, 0, 3],
        128,
        "DNS-SD Service Registration Protocol Anycast (RFC 9665)",
        Global,
    ),
    v6(
        [0x2001, 2, 0, 0, 0, 0, 0, 0],
        48,
        "Benchmarking (RFC 5180)",
        Local,
    ),
    v6([0x2001, 3, 0, 0, 0, 0, 0, 0], 32, "AMT (RFC 7450)", Global),
    v6(
        [0x2001, 4, 0x112, 0, 0, 0, 0, 0],
        48,
        "AS112-v6 (RFC 7535)",
        Global,
    ),
    // N/A in the registry: deprecated.
    v6(
        [0x2001, 0x10, 0, 0, 0, 0, 0, 0],
        28,
        "Deprecated (previously ORCHID, RFC 4843)",
        Local,
    ),
    v6(
        [0x2001, 0x20, 0, 0, 0, 0, 0, 0],
        28,
        "ORCHIDv2 (RFC 7343)",
        Global,
    ),
    v6(
        [0x2001, 0x30, 0, 0, 0, 0, 0, 0],
        28,
        "Drone Remote ID Protocol Entity Tags (RFC 9374)",
        Global,
    ),
    v6(
        [0x2001, 0xdb8, 0, 0, 0, 0, 0, 0],
        32,
        "Documentation (RFC 3849)",
        Local,
    ),
    v6(
        [0x2002, 0, 0, 0, 0, 0, 0, 0],
        16,
        "6to4 (RFC 3056)",
        Embeds(Embedding::SixToFour),
    ),
    v6(
        [0x2620, 0x4f, 0x8000, 0, 0, 0, 0, 0],
        48,
        "Direct Delegation AS112 Service (RFC 7534)",
        Global,
    ),
    v6(
        [0x3fff, 0, 0, 0, 0, 0, 0, 0],
        20,
        "Documentation (RFC 9637)",
        Local,
    ),
    v6(
        [0x5f00, 0, 0, 0, 0, 0, 0, 0],
        16,
        "Segment Routing (SRv6) SIDs (RFC 9602)",
        Local,
    ),
    v6(
        [0xfc00, 0, 0, 0, 0, 0, 0, 0],
        7,
        "Unique-Local (RFC 4193)",
        Local,
    ),
    v6(
        [0xfe80, 0, 0, 0, 0, 0, 0, 0],
        10,
        "Link-Local Unicast (RFC 4291)",
        Local,
    ),
    // Not in the special-purpose registry.
    v6(
        [0; 8],
        96,
        "IPv4-compatible Address (deprecated, RFC 4291)",
        Embeds(Embedding::Last32),
    ),
    v6(
        [0, 0, 0, 0, 0xffff, 0, 0, 0],
        96,
        "IPv4-translated Address (RFC 2765)",
        Embeds(Embedding::Last32),
    ),
    v6(
        [0xfec0, 0, 0, 0, 0, 0, 0, 0],
        10,
        "Site-Local (deprecated, RFC 3879)",
        Local,
    ),
    v6(
        [0xff00, 0, 0, 0, 0, 0, 0, 0],
        8,
        "Multicast (RFC 4291)",
        Local,
    ),
];

/// The most specific block of `table` holding `address`, if any.
pub(crate) fn lookup<A>(table: &'static [Block<A>], address: A) -> Option<&'static Block<A>>
where
    A: Prefix,
{
    table
        .iter()
        .filter(|block| A::contains(block.network, block.len, address))
        .max_by_key(|block| block.len)
}

/// Prefix matching on an address's bits.
pub(crate) trait Prefix: Copy {
    fn contains(network: Self, len: u8, address: Self) -> bool;
}

impl Prefix for u32 {
    fn contains(network: u32, len: u8, address: u32) -> bool {
        let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
        address & mask == network & mask
    }
}

impl Prefix for u128 {
    fn contains(network: u128, len: u8, address: u128) -> bool {
        let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
        address & mask == network & mask
    }
}
