//! Capabilities: what a plugin asks for, what the operator grants, and what
//! it gets, which is only what both sides agree on.
//!
//! A component starts with nothing real to observe: a fixed wall clock, a
//! virtual monotonic clock, deterministic randomness, and instances that
//! never cross conversations (see `wasm/clock.rs`, `wasm/random.rs`). Each
//! real capability needs a request in plugin.json (`"capabilities":
//! {"clocks": true, "random": true}`; `"instances": {"reuse": "stateless"}`
//! requests reuse across tasks) and a grant in the operator's configuration
//! (`[plugins.grants.<name>]`, or `[plugins] grant_all = true`). A grant
//! without a request gives nothing: a plugin never holds more than it says
//! it needs, so its manifest tells a reviewer everything it can reach.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;

/// One thing a plugin may be given beyond the sandbox's defaults.
///
/// New capabilities (a later `network` list of hosts, say) are new
/// variants; a grant or request names them one by one, so an old
/// configuration never grants a capability it did not know about, except
/// through an explicit `grant_all`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Capability {
    /// The host's real wall and monotonic clocks.
    Clocks,
    /// The host's secure random source (and a random insecure seed).
    Random,
    /// One instance serving calls of different tasks (`stateless` reuse).
    ReuseAcrossTasks,
}

impl Capability {
    /// Every capability, in the order reports list them.
    pub const ALL: [Capability; 3] = [
        Capability::Clocks,
        Capability::Random,
        Capability::ReuseAcrossTasks,
    ];

    /// The key that names it, in plugin.json and in `[plugins.grants.<name>]`.
    pub fn key(self) -> &'static str {
        match self {
            Capability::Clocks => "clocks",
            Capability::Random => "random",
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CapabilityRequest {
    pub clocks: bool,
    pub random: bool,
}

/// `[plugins.grants.<name>]`: what the operator gives one plugin, if it asks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Grant {
    pub clocks: bool,
    pub random: bool,
    pub reuse_across_tasks: bool,
}

impl Grant {
    fn allows(&self, capability: Capability) -> bool {
        match capability {
            Capability::Clocks => self.clocks,
            Capability::Random => self.random,
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

    /// What `plugin`, asking for `asked`, gets.
    pub fn decide(&self, plugin: &str, asked: &[Capability]) -> Decision {
        let grant = self.per_plugin.get(plugin);
        let (granted, denied) = asked
            .iter()
            .partition(|capability| self.all || grant.is_some_and(|g| g.allows(**capability)));
        Decision {
            asked: asked.to_vec(),
            granted,
            denied,
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
}

impl Decision {
    pub fn has(&self, capability: Capability) -> bool {
        self.granted.contains(&capability)
    }

    /// One line for reports and logs, e.g. `asked clocks, random; granted
    /// clocks; not granted random`.
    pub fn summary(&self) -> String {
        let list = |capabilities: &[Capability]| {
            if capabilities.is_empty() {
                "nothing".to_owned()
            } else {
                capabilities
                    .iter()
                    .map(|capability| capability.key())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        let mut line = format!(
            "asked {}; granted {}",
            list(&self.asked),
            list(&self.granted)
        );
        if !self.denied.is_empty() {
            line.push_str(&format!("; not granted {}", list(&self.denied)));
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
                .map(|(name, grant)| ((*name).to_owned(), *grant))
                .collect(),
        }
    }

    const CLOCKS_ONLY: Grant = Grant {
        clocks: true,
        random: false,
        reuse_across_tasks: false,
    };
    const EVERYTHING: Grant = Grant {
        clocks: true,
        random: true,
        reuse_across_tasks: true,
    };

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
            let decision = grants.decide(plugin, asked);
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
        let request = CapabilityRequest {
            clocks: true,
            random: false,
        };
        assert_eq!(requested(&request, false), [Clocks]);
        assert_eq!(requested(&request, true), [Clocks, ReuseAcrossTasks]);
        assert!(requested(&CapabilityRequest::default(), false).is_empty());
    }

    #[test]
    fn the_summary_names_what_was_asked_granted_and_refused() {
        let decision = grants(false, &[("p", CLOCKS_ONLY)]).decide("p", &[Clocks, Random]);
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
