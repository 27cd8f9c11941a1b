//! A plugin's files: a directory on disk, or the embedded built-in. Every
//! path a manifest names is resolved here, and must stay inside the root.

use std::path::{Component, Path, PathBuf};

use super::embedded;

/// Where a plugin's files live.
#[derive(Clone, Debug)]
pub(crate) enum PluginRoot {
    /// A directory, canonicalised when the plugin was found.
    Directory(PathBuf),
    Embedded,
}

impl PluginRoot {
    /// Read a manifest file; `Ok(None)` when the plugin has none.
    pub(crate) fn read_manifest(&self, file: &str) -> Result<Option<String>, String> {
        match self {
            PluginRoot::Embedded => Ok(match file {
                "plugin.json" => Some(embedded::PLUGIN_JSON.to_owned()),
                "commands.json" => Some(embedded::COMMANDS_JSON.to_owned()),
                "hooks.json" => Some(embedded::HOOKS_JSON.to_owned()),
                _ => None,
            }),
            PluginRoot::Directory(dir) => match std::fs::read_to_string(dir.join(file)) {
                Ok(text) => Ok(Some(text)),
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(err) => Err(format!("{file} cannot be read: {err}")),
            },
        }
    }

    /// Read a component file named by hooks.json. The path must be relative
    /// and stay inside the plugin root, symlinks included.
    pub(crate) fn read_component(&self, relative: &str) -> Result<Vec<u8>, String> {
        match self {
            PluginRoot::Embedded if relative == embedded::COMPONENT_FILE => {
                Ok(embedded::COMPONENT.to_vec())
            }
            PluginRoot::Embedded => Err(format!("component `{relative}` is not embedded")),
            PluginRoot::Directory(dir) => {
                let path = resolve_inside(dir, relative)?;
                std::fs::read(&path)
                    .map_err(|err| format!("component `{relative}` cannot be read: {err}"))
            }
        }
    }
}

/// `root/relative`, refusing absolute paths, `..`, and anything that
/// resolves (through symlinks) outside `root`. `root` is canonical.
pub(crate) fn resolve_inside(root: &Path, relative: &str) -> Result<PathBuf, String> {
    let escapes = || format!("component path `{relative}` leaves the plugin directory");
    let path = Path::new(relative);
    if relative.is_empty()
        || path
            .components()
            .any(|part| !matches!(part, Component::Normal(_) | Component::CurDir))
    {
        return Err(escapes());
    }
    let resolved = root.join(path).canonicalize().map_err(|err| {
        if err.kind() == std::io::ErrorKind::NotFound {
            format!("component `{relative}` does not exist")
        } else {
            format!("component `{relative}` cannot be resolved: {err}")
        }
    })?;
    if !resolved.starts_with(root) {
        return Err(escapes());
    }
    if !resolved.is_file() {
        return Err(format!("component `{relative}` is not a file"));
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_must_stay_inside_the_root() {
        let outside = tempfile::tempdir().expect("tempdir");
        std::fs::write(outside.path().join("secret.wasm"), b"x").expect("write");
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        std::fs::create_dir(root.join("sub")).expect("mkdir");
        std::fs::write(root.join("sub/ok.wasm"), b"x").expect("write");
        std::os::unix::fs::symlink(outside.path().join("secret.wasm"), root.join("link.wasm"))
            .expect("symlink");

        assert!(resolve_inside(&root, "sub/ok.wasm").is_ok());
        assert!(resolve_inside(&root, "./sub/ok.wasm").is_ok());
        for escaping in [
            "../secret.wasm",
            "sub/../../secret.wasm",
            "/etc/passwd",
            "link.wasm",
            "",
        ] {
            let err = resolve_inside(&root, escaping).unwrap_err();
            assert!(
                err.contains("leaves the plugin directory"),
                "{escaping}: {err}"
            );
        }
        assert!(
            resolve_inside(&root, "missing.wasm")
                .unwrap_err()
                .contains("does not exist")
        );
        assert!(
            resolve_inside(&root, "sub")
                .unwrap_err()
                .contains("not a file")
        );
    }
}
