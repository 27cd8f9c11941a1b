//! Compiled components cached on disk, keyed by the component's content hash
//! and the engine's compatibility hash, so a restart (or reloading an
//! unchanged file) deserializes in about a millisecond instead of compiling
//! for seconds.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

#[derive(Clone, Debug)]
pub(crate) struct ComponentCache {
    dir: Option<PathBuf>,
}

impl ComponentCache {
    pub(crate) fn new(dir: Option<PathBuf>) -> Self {
        ComponentCache { dir }
    }

    /// The compiled form of `bytes`, from the cache when it holds a
    /// compatible artifact, compiled (and stored) otherwise.
    pub(crate) fn load(&self, engine: &Engine, bytes: &[u8]) -> wasmtime::Result<Component> {
        let Some(dir) = &self.dir else {
            return Component::new(engine, bytes);
        };
        let path = dir.join(format!("{}.cwasm", cache_key(engine, bytes)));
        if path.is_file() {
            match deserialize(engine, &path) {
                Ok(component) => return Ok(component),
                Err(err) => {
                    tracing::warn!(path = %path.display(), %err, "discarding unusable cached component");
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        let component = Component::new(engine, bytes)?;
        if let Err(err) = store(&component, dir, &path) {
            // A cache that cannot be written costs a recompile next time,
            // nothing more.
            tracing::warn!(dir = %dir.display(), %err, "cannot write the component cache");
        }
        Ok(component)
    }
}

/// Content hash of the component plus everything about the engine that makes
/// a compiled artifact loadable (version, target, settings such as epoch
/// interruption).
fn cache_key(engine: &Engine, bytes: &[u8]) -> String {
    let content = Sha256::digest(bytes);
    let mut hasher = DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    let content: String = content.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("{content}-{:016x}", hasher.finish())
}

#[allow(unsafe_code)]
fn deserialize(engine: &Engine, path: &Path) -> wasmtime::Result<Component> {
    // SAFETY: `deserialize_file` trusts the file to be a compiled artifact
    // from a compatible engine. Only this cache writes into its directory
    // (created private to the user), under a name keyed by the engine's
    // compatibility hash; wasmtime still checks the header and version.
    unsafe { Component::deserialize_file(engine, path) }
}

fn store(component: &Component, dir: &Path, path: &Path) -> anyhow::Result<()> {
    create_private_dir(dir)?;
    let artifact = component
        .serialize()
        .map_err(|err| anyhow::anyhow!("{err}"))?;
    // Write then rename, so a concurrent reader never sees half a file.
    let partial = path.with_extension(format!("partial-{}", std::process::id()));
    std::fs::write(&partial, artifact)?;
    std::fs::rename(&partial, path)?;
    Ok(())
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}
