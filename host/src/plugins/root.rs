//! A plugin's files: a directory on disk, or the embedded built-in.
//!
//! Every file the loader reads (the four manifests and each component)
//! comes through [`read_inside`], the one safe read path:
//!
//! * the path is relative and has no `..`; resolved through symlinks, it
//!   must still be inside the plugin's directory;
//! * only regular files are read: a FIFO, a device, a socket or a directory
//!   is refused, and the file is opened non-blocking, so opening a FIFO
//!   never waits for a writer;
//! * each kind of file has a size cap (`[plugins.files]`): a bigger file is
//!   refused before it is read, and a file that grows while it is read is
//!   read no further than the cap.
//!
//! So a reload cannot hang or balloon on what a plugin folder holds.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

use super::embedded;
use super::settings::FileLimits;

/// The kinds of plugin file, each with its own size cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FileKind {
    PluginJson,
    CommandsJson,
    ToolsJson,
    HooksJson,
    Component,
}

impl FileKind {
    /// The manifest file of this kind, if it is one.
    fn manifest_name(self) -> Option<&'static str> {
        match self {
            FileKind::PluginJson => Some("plugin.json"),
            FileKind::CommandsJson => Some("commands.json"),
            FileKind::ToolsJson => Some("tools.json"),
            FileKind::HooksJson => Some("hooks.json"),
            FileKind::Component => None,
        }
    }

    fn cap(self, limits: &FileLimits) -> (u64, &'static str) {
        match self {
            FileKind::PluginJson => (limits.plugin_json_bytes, "plugin_json_bytes"),
            FileKind::CommandsJson => (limits.commands_json_bytes, "commands_json_bytes"),
            FileKind::ToolsJson => (limits.tools_json_bytes, "tools_json_bytes"),
            FileKind::HooksJson => (limits.hooks_json_bytes, "hooks_json_bytes"),
            FileKind::Component => (limits.component_bytes, "component_bytes"),
        }
    }
}

/// Where a plugin's files live.
#[derive(Clone, Debug)]
pub(crate) enum PluginRoot {
    /// A directory, canonicalised when the plugin was found.
    Directory(PathBuf),
    Embedded,
}

impl PluginRoot {
    /// Read a manifest file; `Ok(None)` when the plugin has none.
    pub(crate) fn read_manifest(
        &self,
        kind: FileKind,
        limits: &FileLimits,
    ) -> Result<Option<String>, String> {
        let Some(file) = kind.manifest_name() else {
            return Err(format!("{kind:?} is not a manifest"));
        };
        match self {
            PluginRoot::Embedded => Ok(match kind {
                FileKind::PluginJson => Some(embedded::PLUGIN_JSON.to_owned()),
                FileKind::CommandsJson => Some(embedded::COMMANDS_JSON.to_owned()),
                FileKind::HooksJson => Some(embedded::HOOKS_JSON.to_owned()),
                // The built-in plugin declares no tools.
                FileKind::ToolsJson | FileKind::Component => None,
            }),
            PluginRoot::Directory(dir) => match read_inside(dir, file, kind, limits)? {
                None => Ok(None),
                Some(bytes) => String::from_utf8(bytes)
                    .map(Some)
                    .map_err(|_| format!("{file} is not UTF-8 text")),
            },
        }
    }

    /// Read a component file named by hooks.json.
    pub(crate) fn read_component(
        &self,
        relative: &str,
        limits: &FileLimits,
    ) -> Result<Vec<u8>, String> {
        match self {
            PluginRoot::Embedded if relative == embedded::COMPONENT_FILE => {
                Ok(embedded::COMPONENT.to_vec())
            }
            PluginRoot::Embedded => Err(format!("component `{relative}` is not embedded")),
            PluginRoot::Directory(dir) => {
                match read_inside(dir, relative, FileKind::Component, limits) {
                    Ok(Some(bytes)) => Ok(bytes),
                    Ok(None) => Err(format!("component `{relative}` does not exist")),
                    Err(reason) => Err(format!("component `{relative}` cannot be read: {reason}")),
                }
            }
        }
    }
}

/// The bytes of `root/relative`, read by the rules of the module
/// documentation; `Ok(None)` when there is no such file. `root` is
/// canonical.
pub(crate) fn read_inside(
    root: &Path,
    relative: &str,
    kind: FileKind,
    limits: &FileLimits,
) -> Result<Option<Vec<u8>>, String> {
    let path = resolve_inside(root, relative)?;
    let Some(path) = path else {
        return Ok(None);
    };
    let file = open_regular(&path)?;
    let (cap, key) = kind.cap(limits);
    let len = file
        .metadata()
        .map_err(|err| format!("cannot be examined: {err}"))?
        .len();
    let too_big = |len: u64| {
        format!("it is {len} bytes, more than the {cap} allowed ([plugins.files] {key})")
    };
    if len > cap {
        return Err(too_big(len));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|err| format!("{err}"))?;
    if bytes.len() as u64 > cap {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(Some(bytes))
}

/// Copy the regular file `from` to `to` (for the reloader's staged copies)
/// by the same rules: never blocking on a FIFO swapped in, never more than
/// `cap` bytes. What is not a regular file within the cap is not copied
/// (`Ok(false)`): the loader would refuse it anyway.
pub(crate) fn copy_regular(from: &Path, to: &Path, cap: u64) -> std::io::Result<bool> {
    let Ok(file) = open_regular(from) else {
        return Ok(false);
    };
    if file.metadata()?.len() > cap {
        return Ok(false);
    }
    let mut target = File::create(to)?;
    let copied = std::io::copy(&mut file.take(cap.saturating_add(1)), &mut target)?;
    if copied > cap {
        drop(target);
        std::fs::remove_file(to)?;
        return Ok(false);
    }
    Ok(true)
}

/// `root/relative` with symlinks resolved, refusing absolute paths, `..`,
/// and anything that resolves outside `root`; `Ok(None)` when nothing is
/// there.
fn resolve_inside(root: &Path, relative: &str) -> Result<Option<PathBuf>, String> {
    let path = Path::new(relative);
    if relative.is_empty()
        || path
            .components()
            .any(|part| !matches!(part, Component::Normal(_) | Component::CurDir))
    {
        return Err("the path leaves the plugin directory".into());
    }
    let resolved = match root.join(path).canonicalize() {
        Ok(resolved) => resolved,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(format!("cannot be resolved: {err}")),
    };
    if !resolved.starts_with(root) {
        return Err(format!(
            "it resolves to {}, which leaves the plugin directory",
            resolved.display()
        ));
    }
    Ok(Some(resolved))
}

/// Open `path` for reading if it is a regular file. Non-blocking, so a FIFO
/// swapped in after the path was resolved does not block the open, and not
/// following a final symlink swapped in likewise.
fn open_regular(path: &Path) -> Result<File, String> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
        .map_err(|err| format!("cannot be opened: {err}"))?;
    let kind = file
        .metadata()
        .map_err(|err| format!("cannot be examined: {err}"))?
        .file_type();
    if kind.is_file() {
        return Ok(file);
    }
    let what = if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a file"
    };
    Err(format!("it is {what}, not a regular file"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> FileLimits {
        FileLimits::default()
    }

    fn read(root: &Path, relative: &str) -> Result<Option<Vec<u8>>, String> {
        read_inside(root, relative, FileKind::Component, &limits())
    }

    #[test]
    fn paths_must_stay_inside_the_root() {
        let outside = tempfile::tempdir().expect("tempdir");
        std::fs::write(outside.path().join("secret.wasm"), b"x").expect("write");
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        std::fs::create_dir(root.join("sub")).expect("mkdir");
        std::fs::write(root.join("sub/ok.wasm"), b"ok").expect("write");
        std::os::unix::fs::symlink(outside.path().join("secret.wasm"), root.join("link.wasm"))
            .expect("symlink");
        std::os::unix::fs::symlink(root.join("sub/ok.wasm"), root.join("inner.wasm"))
            .expect("symlink");

        assert_eq!(read(&root, "sub/ok.wasm"), Ok(Some(b"ok".to_vec())));
        assert_eq!(read(&root, "./sub/ok.wasm"), Ok(Some(b"ok".to_vec())));
        assert_eq!(
            read(&root, "inner.wasm"),
            Ok(Some(b"ok".to_vec())),
            "a symlink that stays inside is followed"
        );
        for escaping in [
            "../secret.wasm",
            "sub/../../secret.wasm",
            "/etc/passwd",
            "link.wasm",
            "",
        ] {
            let err = read(&root, escaping).unwrap_err();
            assert!(
                err.contains("leaves the plugin directory"),
                "{escaping}: {err}"
            );
        }
        assert_eq!(read(&root, "missing.wasm"), Ok(None));
        assert!(read(&root, "sub").unwrap_err().contains("a directory"));
    }

    #[test]
    fn only_regular_files_within_their_cap_are_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        std::os::unix::fs::symlink("/dev/zero", root.join("zero.wasm")).expect("symlink");
        let err = read(&root, "zero.wasm").unwrap_err();
        assert!(err.contains("resolves to /dev/zero"), "{err}");

        let fifo = root.join("fifo.wasm");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo runs");
        assert!(status.success());
        // Would block forever if the open waited for a writer.
        let err = read(&root, "fifo.wasm").unwrap_err();
        assert_eq!(err, "it is a FIFO, not a regular file");

        std::fs::write(root.join("plugin.json"), vec![b' '; 100]).expect("write");
        let small = FileLimits {
            plugin_json_bytes: 99,
            ..limits()
        };
        let err = read_inside(&root, "plugin.json", FileKind::PluginJson, &small).unwrap_err();
        assert_eq!(
            err,
            "it is 100 bytes, more than the 99 allowed ([plugins.files] plugin_json_bytes)"
        );
        let exact = FileLimits {
            plugin_json_bytes: 100,
            ..limits()
        };
        assert!(read_inside(&root, "plugin.json", FileKind::PluginJson, &exact).is_ok());
    }
}
