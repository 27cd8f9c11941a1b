//! Capabilities: what a plugin asks for, what the operator grants, and what
//! it gets, which is only what both sides agree on.
//!
//! A component starts with nothing real to observe: a fixed wall clock, a
//! virtual monotonic clock, deterministic randomness, no network, and
//! instances that never cross conversations (see `wasm/clock.rs`,
//! `wasm/random.rs`). Each real capability needs a request in plugin.json
//! (`"capabilities": {"clocks": true, "random": true, "network": [rules]}`;
//! `"instances": {"reuse": "stateless"}` requests reuse across tasks) and a
//! grant in the operator's configuration (`[plugins.grants.<name>]`, or
//! `[plugins] grant_all = true`). A grant without a request gives nothing: a
//! plugin never holds more than it says it needs, so its manifest tells a
//! reviewer everything it can reach. Network rules (`network.rs`) are
//! granted rule by rule: the plugin may make the requests that match both
//! a rule it asked for and a rule it was granted.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;

use super::network::{self, NetworkRule};

/// One thing a plugin may be given beyond the sandbox's defaults.
///
/// New capabilities are new variants; a grant or request names them one by
/// one, so an old configuration never grants a capability it did not know
/// about, except through an explicit `grant_all`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Capability {
    /// The host's real wall and monotonic clocks.
    Clocks,
    /// The host's secure random source (and a random insecure seed).
    Random,
    /// `wasi:http` outgoing requests, to the hosts its rules name.
    Network,
    /// One instance serving calls of different tasks (`stateless` reuse).
    ReuseAcrossTasks,
}

impl Capability {
    /// Every capability, in the order reports list them.
    pub const ALL: [Capability; 4] = [
        Capability::Clocks,
        Capability::Random,
        Capability::Network,
        Capability::ReuseAcrossTasks,
    ];

    /// The key that names it, in plugin.json and in `[plugins.grants.<name>]`.
    pub fn key(self) -> &'static str {
        match self {
            Capability::Clocks => "clocks",
            Capability::Random => "random",
            Capability::Network => "network",
            Capability::ReuseAcrossTasks => "reuse_across_tasks",
        }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// plugin.json `capabilities`: what the plugin asks for. Reuse across tasks
/// is asked for by `instances.reuse = "stateless"`, where the reuse mode is
/// declared, so it has no key here.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CapabilityRequest {
    pub clocks: bool,
    pub random: bool,
    /// The HTTP requests it makes (`network.rs`), e.g.
    /// `["GET https://api.example.com"]`.
    pub network: Vec<NetworkRule>,
}

/// `[plugins.grants.<name>]`: what the operator gives one plugin, if it asks.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Grant {
    pub clocks: bool,
    pub random: bool,
    pub reuse_across_tasks: bool,
    /// The HTTP requests it may make, of those it asks for.
    pub network: Vec<NetworkRule>,
}

impl Grant {
    /// Whether the grant gives `capability` at all (for network: some rule).
    pub(crate) fn gives(&self, capability: Capability) -> bool {
        match capability {
            Capability::Clocks => self.clocks,
            Capability::Random => self.random,
            Capability::Network => !self.network.is_empty(),
            Capability::ReuseAcrossTasks => self.reuse_across_tasks,
        }
    }
}

/// The operator's grants: per plugin, or everything to everyone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Grants {
    /// `[plugins] grant_all`: every plugin gets whatever it asks for.
    pub all: bool,
    /// `[plugins.grants.<name>]`, by plugin name.
    pub per_plugin: BTreeMap<String, Grant>,
}

impl Grants {
    /// Every plugin gets whatever it asks for (tests and benches, or an
    /// operator who trusts every plugin in the folder).
    pub fn all() -> Self {
        Grants {
            all: true,
            per_plugin: BTreeMap::new(),
        }
    }

    /// What `plugin`, asking for `asked` (and for network, the requests
    /// `asked_network`), gets.
    pub fn decide(
        &self,
        plugin: &str,
        asked: &[Capability],
        asked_network: &[NetworkRule],
    ) -> Decision {
        let grant = self.per_plugin.get(plugin);
        let network = if self.all {
            asked_network.to_vec()
        } else {
            grant.map_or_else(Vec::new, |grant| {
                network::effective(asked_network, &grant.network)
            })
        };
        let (granted, denied) = asked.iter().partition(|capability| match **capability {
            Capability::Network => !network.is_empty(),
            other => self.all || grant.is_some_and(|g| g.gives(other)),
        });
        Decision {
            asked: asked.to_vec(),
            granted,
            denied,
            asked_network: asked_network.to_vec(),
            network,
        }
    }
}

/// The outcome for one plugin: every capability it asked for is either
/// granted or denied.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    pub asked: Vec<Capability>,
    pub granted: Vec<Capability>,
    pub denied: Vec<Capability>,
    /// The network rules it asked for.
    pub asked_network: Vec<NetworkRule>,
    /// The requests it may make: what it asked for and was granted.
    pub network: Vec<NetworkRule>,
}

impl Decision {
    pub fn has(&self, capability: Capability) -> bool {
        self.granted.contains(&capability)
    }

    /// One line for reports and logs, e.g. `asked clocks, random; granted
    /// clocks; not granted random`; network with its rules: `asked network
    /// (GET https://a.example, https://b.example); granted network (GET
    /// https://a.example)`.
    pub fn summary(&self) -> String {
        let rules = |rules: &[NetworkRule]| {
            rules
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let list = |capabilities: &[Capability], network: &[NetworkRule]| {
            if capabilities.is_empty() {
                "nothing".to_owned()
            } else {
                capabilities
                    .iter()
                    .map(|capability| match capability {
                        Capability::Network => format!("network ({})", rules(network)),
                        other => other.key().to_owned(),
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        let mut line = format!(
            "asked {}; granted {}",
            list(&self.asked, &self.asked_network),
            list(&self.granted, &self.network)
        );
        if !self.denied.is_empty() {
            let denied: Vec<&str> = self.denied.iter().map(|c| c.key()).collect();
            line.push_str(&format!("; not granted {}", denied.join(", ")));
        }
        line
    }
}

/// What a plugin asks for: its `capabilities` plus `stateless` reuse.
pub(crate) fn requested(request: &CapabilityRequest, stateless: bool) -> Vec<Capability> {
    Capability::ALL
        .into_iter()
        .filter(|capability| match capability {
            Capability::Clocks => request.clocks,
            Capability::Random => request.random,
            Capability::Network => !request.network.is_empty(),
            Capability::ReuseAcrossTasks => stateless,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use Capability::*;

    fn grants(all: bool, per_plugin: &[(&str, Grant)]) -> Grants {
        Grants {
            all,
            per_plugin: per_plugin
                .iter()
                .map(|(name, grant)| ((*name).to_owned(), grant.clone()))
                .collect(),
        }
    }

    const CLOCKS_ONLY: Grant = Grant {
        clocks: true,
        random: false,
        reuse_across_tasks: false,
        network: Vec::new(),
    };
    const EVERYTHING: Grant = Grant {
        clocks: true,
        random: true,
        reuse_across_tasks: true,
        network: Vec::new(),
    };

    fn rules(texts: &[&str]) -> Vec<NetworkRule> {
        texts
            .iter()
            .map(|text| text.parse().expect("a rule"))
            .collect()
    }

    #[test]
    fn a_capability_needs_both_the_request_and_the_grant() {
        // (grants, plugin, asked, granted)
        let cases: [(Grants, &str, &[Capability], &[Capability]); 9] = [
            (grants(false, &[]), "p", &[Clocks, Random], &[]),
            (
                grants(false, &[("p", CLOCKS_ONLY)]),
                "p",
                &[Clocks, Random],
                &[Clocks],
            ),
            (grants(false, &[("p", CLOCKS_ONLY)]), "p", &[Random], &[]),
            // A grant to another plugin gives this one nothing.
            (grants(false, &[("q", EVERYTHING)]), "p", &[Clocks], &[]),
            // A grant without a request gives nothing.
            (grants(false, &[("p", EVERYTHING)]), "p", &[], &[]),
            (
                grants(false, &[("p", EVERYTHING)]),
                "p",
                &[ReuseAcrossTasks],
                &[ReuseAcrossTasks],
            ),
            (
                grants(true, &[]),
                "p",
                &[Clocks, Random, ReuseAcrossTasks],
                &[Clocks, Random, ReuseAcrossTasks],
            ),
            (grants(true, &[]), "p", &[], &[]),
            // grant_all wins over a narrower per-plugin grant.
            (
                grants(true, &[("p", Grant::default())]),
                "p",
                &[Random],
                &[Random],
            ),
        ];
        for (grants, plugin, asked, granted) in cases {
            let decision = grants.decide(plugin, asked, &[]);
            assert_eq!(decision.granted, granted, "{grants:?} {asked:?}");
            let denied: Vec<_> = asked
                .iter()
                .filter(|c| !granted.contains(c))
                .copied()
                .collect();
            assert_eq!(decision.denied, denied, "{grants:?} {asked:?}");
            assert_eq!(decision.asked, asked);
        }
    }

    #[test]
    fn requests_come_from_capabilities_and_the_reuse_mode() {
        let mut request = CapabilityRequest {
            clocks: true,
            random: false,
            network: Vec::new(),
        };
        assert_eq!(requested(&request, false), [Clocks]);
        assert_eq!(requested(&request, true), [Clocks, ReuseAcrossTasks]);
        assert!(requested(&CapabilityRequest::default(), false).is_empty());
        request.network = rules(&["https://a.example"]);
        assert_eq!(requested(&request, false), [Clocks, Network]);
    }

    #[test]
    fn network_is_granted_rule_by_rule() {
        let asked = rules(&["GET https://a.example", "https://b.example"]);
        let narrow = Grant {
            network: rules(&["https://a.example", "https://c.example"]),
            ..Grant::default()
        };
        let decision = grants(false, &[("p", narrow.clone())]).decide("p", &[Network], &asked);
        assert_eq!(decision.granted, [Network]);
        assert_eq!(decision.network, rules(&["GET https://a.example"]));
        assert_eq!(
            decision.summary(),
            "asked network (GET https://a.example, https://b.example); \
             granted network (GET https://a.example)"
        );
        // Nothing in common: not granted.
        let elsewhere = Grant {
            network: rules(&["https://c.example"]),
            ..Grant::default()
        };
        let decision = grants(false, &[("p", elsewhere)]).decide("p", &[Network], &asked);
        assert_eq!(decision.denied, [Network]);
        assert!(decision.network.is_empty());
        // grant_all gives what was asked, nothing more.
        let decision = grants(true, &[]).decide("p", &[Network], &asked);
        assert_eq!(decision.network, asked);
        // Another plugin's grant gives nothing.
        let decision = grants(false, &[("q", narrow)]).decide("p", &[Network], &asked);
        assert_eq!(decision.denied, [Network]);
    }

    #[test]
    fn the_summary_names_what_was_asked_granted_and_refused() {
        let decision = grants(false, &[("p", CLOCKS_ONLY)]).decide("p", &[Clocks, Random], &[]);
        assert_eq!(
            decision.summary(),
            "asked clocks, random; granted clocks; not granted random"
        );
        assert_eq!(
            Decision::default().summary(),
            "asked nothing; granted nothing"
        );
    }
}
