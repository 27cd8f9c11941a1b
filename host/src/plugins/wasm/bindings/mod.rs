//! Host bindings for every version of the plugin contract this harness
//! speaks, one module per version (Zed's `since_v0_x_y` pattern):
//!
//! * [`since_v0_2_0`], the latest (`wit/plugin.wit`): its types are the ones
//!   the rest of the runtime converts to and from the harness's own;
//! * [`since_v0_1_0`], frozen (`wit/v0.1.0/plugin.wit`): its host imports
//!   delegate to the latest's, and its exports' values are converted to the
//!   latest's types, so nothing outside this folder knows it exists.
//!
//! A component's version is read from the names of its imports and exports
//! before anything links it ([`ContractVersion::of`]); [`Exports`] then
//! dispatches each call to that version's bindings. Adding 0.3.0 is a new
//! module, a variant here, and the previous latest's conversions turned
//! into delegations.

pub(crate) mod since_v0_1_0;
pub(crate) mod since_v0_2_0;

use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, Instance, InstancePre};
use wasmtime::{Engine, Store};

use super::store::StoreState;
pub(crate) use since_v0_2_0 as latest;

/// The WIT package every component must be built against.
pub(crate) const PACKAGE: &str = "tiny-harness:plugin";

/// A version of the contract this harness speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ContractVersion {
    V0_1_0,
    V0_2_0,
}

impl ContractVersion {
    /// Every version spoken, oldest first.
    pub(crate) const ALL: [ContractVersion; 2] = [ContractVersion::V0_1_0, ContractVersion::V0_2_0];

    pub(crate) const LATEST: ContractVersion = ContractVersion::V0_2_0;

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ContractVersion::V0_1_0 => "0.1.0",
            ContractVersion::V0_2_0 => "0.2.0",
        }
    }

    /// The spoken versions as the refusal names them:
    /// `tiny-harness:plugin@0.1.0 or @0.2.0`.
    pub(crate) fn spoken() -> String {
        let versions: Vec<String> = Self::ALL
            .iter()
            .map(|version| format!("@{}", version.as_str()))
            .collect();
        format!("{PACKAGE}{}", versions.join(" or "))
    }

    /// The version `component` was built against, from the names of its
    /// `tiny-harness:plugin/...@x.y.z` imports and exports. Every one must
    /// name the same version, and it must be one spoken here (within 0.x,
    /// the same minor; the component model links patch versions of one
    /// minor to each other). A component naming none is taken for the
    /// latest: it exports nothing the harness can call, which the caller
    /// reports.
    pub(crate) fn of(component: &Component, engine: &Engine) -> Result<Self, VersionError> {
        let ty = component.component_type();
        let mut found: Option<(ContractVersion, String)> = None;
        for (name, item) in ty.imports(engine).chain(ty.exports(engine)) {
            if !matches!(item.ty, ComponentItem::ComponentInstance(_)) {
                continue;
            }
            let Some(rest) = name.strip_prefix(PACKAGE).and_then(|r| r.strip_prefix('/')) else {
                continue;
            };
            let named = rest.split_once('@').map_or("", |(_, version)| version);
            let version = Self::matching(named).ok_or_else(|| VersionError::Unspoken {
                found: if named.is_empty() {
                    "(unversioned)".to_owned()
                } else {
                    named.to_owned()
                },
            })?;
            match &found {
                Some((first, first_named)) if *first != version => {
                    return Err(VersionError::Mixed {
                        first: first_named.clone(),
                        second: named.to_owned(),
                    });
                }
                Some(_) => {}
                None => found = Some((version, named.to_owned())),
            }
        }
        Ok(found.map_or(Self::LATEST, |(version, _)| version))
    }

    /// The spoken version a component's `named` version links to.
    fn matching(named: &str) -> Option<Self> {
        let named = semver::Version::parse(named).ok()?;
        Self::ALL.into_iter().find(|spoken| {
            semver::Version::parse(spoken.as_str())
                .is_ok_and(|spoken| is_compatible(&spoken, &named))
        })
    }
}

/// Why a component's contract version cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum VersionError {
    Unspoken { found: String },
    Mixed { first: String, second: String },
}

/// Semver compatibility as the component model applies it: same major, and
/// for 0.x the same minor.
fn is_compatible(expected: &semver::Version, found: &semver::Version) -> bool {
    expected.major == found.major && (expected.major != 0 || expected.minor == found.minor)
}

/// Which of its contract's interfaces a component exports, in the bindings
/// of the version it was built against.
pub(crate) enum Exports {
    V0_1(since_v0_1_0::ExportIndices),
    V0_2(since_v0_2_0::ExportIndices),
}

impl Exports {
    /// The exports `pre` offers, read with `version`'s bindings.
    pub(crate) fn new(version: ContractVersion, pre: &InstancePre<StoreState>) -> Self {
        match version {
            ContractVersion::V0_1_0 => Exports::V0_1(since_v0_1_0::ExportIndices::new(pre)),
            ContractVersion::V0_2_0 => Exports::V0_2(since_v0_2_0::ExportIndices::new(pre)),
        }
    }

    pub(crate) fn version(&self) -> ContractVersion {
        match self {
            Exports::V0_1(_) => ContractVersion::V0_1_0,
            Exports::V0_2(_) => ContractVersion::V0_2_0,
        }
    }

    pub(crate) fn command(&self) -> bool {
        match self {
            Exports::V0_1(indices) => indices.command.is_some(),
            Exports::V0_2(indices) => indices.command.is_some(),
        }
    }

    pub(crate) fn hook(&self) -> bool {
        match self {
            Exports::V0_1(indices) => indices.hook.is_some(),
            Exports::V0_2(indices) => indices.hook.is_some(),
        }
    }

    pub(crate) fn completion(&self) -> bool {
        match self {
            Exports::V0_1(indices) => indices.completion.is_some(),
            Exports::V0_2(indices) => indices.completion.is_some(),
        }
    }

    /// Tools came with 0.2.0.
    pub(crate) fn tool(&self) -> bool {
        match self {
            Exports::V0_1(_) => false,
            Exports::V0_2(indices) => indices.tool.is_some(),
        }
    }

    pub(crate) fn any(&self) -> bool {
        self.command() || self.hook() || self.completion() || self.tool()
    }

    pub(crate) async fn run_command(
        &self,
        store: &mut Store<StoreState>,
        instance: &Instance,
        invocation: &latest::wit::Invocation,
    ) -> wasmtime::Result<Result<latest::wit::Outcome, latest::wit::CommandError>> {
        match self {
            Exports::V0_1(indices) => indices.run_command(store, instance, invocation).await,
            Exports::V0_2(indices) => indices.run_command(store, instance, invocation).await,
        }
    }

    pub(crate) async fn handle_hook(
        &self,
        store: &mut Store<StoreState>,
        instance: &Instance,
        point: &str,
        context: &str,
    ) -> wasmtime::Result<latest::wit::Decision> {
        match self {
            Exports::V0_1(indices) => indices.handle_hook(store, instance, point, context).await,
            Exports::V0_2(indices) => indices.handle_hook(store, instance, point, context).await,
        }
    }

    pub(crate) async fn complete(
        &self,
        store: &mut Store<StoreState>,
        instance: &Instance,
        command: &str,
        partial_arguments: &str,
    ) -> wasmtime::Result<Vec<latest::wit::Suggestion>> {
        match self {
            Exports::V0_1(indices) => {
                indices
                    .complete(store, instance, command, partial_arguments)
                    .await
            }
            Exports::V0_2(indices) => {
                indices
                    .complete(store, instance, command, partial_arguments)
                    .await
            }
        }
    }

    pub(crate) async fn call_tool(
        &self,
        store: &mut Store<StoreState>,
        instance: &Instance,
        call: &latest::wit::ToolCall,
    ) -> wasmtime::Result<Result<String, latest::wit::ToolError>> {
        match self {
            Exports::V0_1(_) => Err(wasmtime::format_err!(
                "a component built against {PACKAGE}@0.1.0 has no tool export"
            )),
            Exports::V0_2(indices) => indices.call_tool(store, instance, call).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_link_within_their_minor() {
        for (named, spoken) in [
            ("0.1.0", Some(ContractVersion::V0_1_0)),
            ("0.1.7", Some(ContractVersion::V0_1_0)),
            ("0.2.0", Some(ContractVersion::V0_2_0)),
            ("0.2.3", Some(ContractVersion::V0_2_0)),
            ("0.0.9", None),
            ("0.3.0", None),
            ("1.0.0", None),
            ("", None),
            ("two", None),
        ] {
            assert_eq!(ContractVersion::matching(named), spoken, "{named}");
        }
        assert_eq!(
            ContractVersion::spoken(),
            "tiny-harness:plugin@0.1.0 or @0.2.0"
        );
    }
}
