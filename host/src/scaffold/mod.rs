//! `tiny-harness plugins new`: a new plugin folder that builds.
//!
//! [`create`] writes `DIR/NAME/` with everything a plugin needs and nothing
//! that ties it to this repository:
//!
//! ```text
//! NAME/
//!   plugin.json  commands.json  hooks.json   the manifests: one command, `/NAME [text]`
//!   build.sh                                 installs the toolchain when missing, builds NAME.wasm
//!   README.md                                what is where, how to build, try and serve it
//!   wit/plugin.wit                           the contract this harness checks (embedded in the binary)
//!   rust:   Cargo.toml, src/lib.rs, wit/sdk-rust/   (the guest SDK, vendored)
//!   python: app.py                                   (componentize-py, world `command-plugin`)
//!   js:     app.js, package.json                     (componentize-qjs, world `command-plugin`)
//! ```
//!
//! The command is named after the plugin when the plugin's name is a valid
//! command name that the harness does not already serve, else `hello`.
//!
//! The Rust guest SDK is not on crates.io, so a Rust scaffold always carries
//! a copy of it (`wit/sdk-rust`, the SDK's `Cargo.toml` and `src/lib.rs`
//! embedded in this binary). That is the simplest option that is always
//! right: the scaffold builds wherever it is moved, offline from this
//! repository, and its SDK matches the contract this binary checks. (A path
//! dependency on the repository the binary was built from would break as
//! soon as the binary or the checkout moves, and would drift with the
//! checkout.) The copy keeps the repository's layout, `wit/plugin.wit` next
//! to `wit/sdk-rust`, so the SDK's `path: "../plugin.wit"` holds unchanged,
//! and the scaffold's `Cargo.toml` is a workspace that provides the settings
//! the SDK's `Cargo.toml` inherits, taken from this repository's workspace.

use std::fmt;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde_json::{Value, json};

use crate::commands::is_valid_command_name;
use crate::plugins::BUILTIN;
use crate::plugins::manifest::is_valid_plugin_name;

/// The plugin contract (`tiny-harness:plugin`) this binary checks components
/// against; every scaffold gets a copy at `wit/plugin.wit`.
pub const PLUGIN_WIT: &str = include_str!("../../../wit/plugin.wit");

/// The Rust guest SDK, vendored into Rust scaffolds at `wit/sdk-rust`.
const SDK_CARGO_TOML: &str = include_str!("../../../wit/sdk-rust/Cargo.toml");
const SDK_LIB_RS: &str = include_str!("../../../wit/sdk-rust/src/lib.rs");
/// The repository's workspace manifest: the source of the settings the
/// SDK's Cargo.toml inherits (`edition.workspace = true`, ...).
const WORKSPACE_CARGO_TOML: &str = include_str!("../../../Cargo.toml");
/// The built-in plugin's commands, which a scaffold must not declare again.
const BUILTIN_COMMANDS_JSON: &str =
    include_str!(concat!(env!("BUILTIN_PLUGIN_DIR"), "/commands.json"));
/// Commands the harness registers natively in every generation.
const NATIVE_COMMANDS: &[&str] = &["plugins"];

/// The componentize-py version Python scaffolds install (the one the Python
/// examples pin in `examples/plugins/python/build.sh`).
pub const COMPONENTIZE_PY_VERSION: &str = "0.25.1";
/// The componentize-qjs version JavaScript scaffolds pin (as
/// `examples/plugins/js/package.json` does).
pub const COMPONENTIZE_QJS_VERSION: &str = "0.4.5";

/// The command a scaffold declares when its name cannot be the command's.
pub const FALLBACK_COMMAND: &str = "hello";

mod templates {
    pub(super) const README: &str = include_str!("templates/common/README.md");
    pub(super) const BUILD_HELPERS: &str = include_str!("templates/common/helpers.sh");
    pub(super) const RUST_CARGO_TOML: &str = include_str!("templates/rust/Cargo.toml");
    pub(super) const RUST_LIB_RS: &str = include_str!("templates/rust/lib.rs");
    pub(super) const RUST_BUILD_SH: &str = include_str!("templates/rust/build.sh");
    pub(super) const PYTHON_APP_PY: &str = include_str!("templates/python/app.py");
    pub(super) const PYTHON_BUILD_SH: &str = include_str!("templates/python/build.sh");
    pub(super) const JS_APP_JS: &str = include_str!("templates/js/app.js");
    pub(super) const JS_PACKAGE_JSON: &str = include_str!("templates/js/package.json");
    pub(super) const JS_BUILD_SH: &str = include_str!("templates/js/build.sh");
    pub(super) const TOOL_README: &str = include_str!("templates/tool/README.md");
    pub(super) const TOOL_LIB_RS: &str = include_str!("templates/tool/lib.rs");
    pub(super) const TOOL_APP_PY: &str = include_str!("templates/tool/app.py");
}

/// What a scaffold serves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// A command, `/NAME [text]` (commands.json, `command.invoked.in`).
    #[default]
    Command,
    /// A tool the model may call (tools.json, `tool.invoked.in`; contract
    /// 0.2.0). Rust and Python.
    Tool,
}

/// The languages a plugin can be scaffolded in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    /// Rust, with the guest SDK (cargo, target wasm32-wasip2).
    Rust,
    /// Python, with componentize-py.
    Python,
    /// JavaScript, with componentize-qjs (QuickJS).
    Js,
}

impl Lang {
    pub const ALL: [Lang; 3] = [Lang::Rust, Lang::Python, Lang::Js];

    /// The name used on the command line: `rust`, `python`, `js`.
    pub fn as_str(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::Js => "js",
        }
    }

    /// The language's name in prose.
    pub fn title(self) -> &'static str {
        match self {
            Lang::Rust => "Rust",
            Lang::Python => "Python",
            Lang::Js => "JavaScript",
        }
    }
}

impl fmt::Display for Lang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Lang {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Lang::ALL
            .into_iter()
            .find(|lang| lang.as_str() == name)
            .ok_or_else(|| format!("unknown language `{name}` (have: rust, python, js)"))
    }
}

/// Why a plugin could not be scaffolded.
#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    #[error(
        "`{0}` is not a valid plugin name: use 1-64 characters of a-z, 0-9, `.` and `-`, \
         not all of them dots"
    )]
    InvalidName(String),
    #[error(
        "`{0}` cannot be a new plugin name: it is the built-in plugin's, and a plugin \
         called that would replace the built-in commands"
    )]
    ReservedName(String),
    #[error("{} already exists; pick another name or --dir (nothing was written)", .0.display())]
    Exists(PathBuf),
    #[error("cannot write {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The templates embedded in the binary do not fit together (a bug).
    #[error("the scaffold templates are broken (a bug in tiny-harness): {0}")]
    Template(String),
    #[error("a {lang} scaffold cannot be a tool yet: use --lang rust or --lang python")]
    NoToolTemplate { lang: Lang },
}

/// One file of a scaffold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScaffoldFile {
    /// Relative to the plugin's folder.
    pub path: PathBuf,
    pub contents: String,
    /// Written with the executable bits (`build.sh`).
    pub executable: bool,
}

/// A rendered plugin, not yet written.
#[derive(Clone, Debug)]
pub struct Scaffold {
    pub name: String,
    pub lang: Lang,
    pub kind: Kind,
    /// The command it declares, without the slash (a tool scaffold: none,
    /// this is empty).
    pub command: String,
    /// Why the command is not named after the plugin, when it is not.
    pub command_note: Option<String>,
    pub files: Vec<ScaffoldFile>,
}

/// A scaffold written to disk.
#[derive(Clone, Debug)]
pub struct Created {
    /// The plugin's folder: `DIR/NAME`.
    pub root: PathBuf,
    pub scaffold: Scaffold,
}

/// Render the plugin `name` in `lang` and write it to `parent/name`, which
/// must not exist yet (`parent` is created when missing).
pub fn create(name: &str, lang: Lang, parent: &Path) -> Result<Created, ScaffoldError> {
    create_kind(name, lang, Kind::Command, parent)
}

/// [`create`] for a plugin of `kind`.
pub fn create_kind(
    name: &str,
    lang: Lang,
    kind: Kind,
    parent: &Path,
) -> Result<Created, ScaffoldError> {
    let scaffold = match kind {
        Kind::Command => Scaffold::render(name, lang)?,
        Kind::Tool => Scaffold::render_tool(name, lang)?,
    };
    let root = scaffold.write(parent)?;
    Ok(Created { root, scaffold })
}

impl Scaffold {
    /// Every file of the plugin `name` in `lang`, in memory.
    pub fn render(name: &str, lang: Lang) -> Result<Scaffold, ScaffoldError> {
        check_name(name)?;
        let (command, command_note) = command_for(name)?;
        let crate_name = crate_name(name);
        let crate_file = crate_name.replace('-', "_");
        let component = format!("{name}.wasm");
        let mut files = vec![
            json_file("plugin.json", &plugin_json(name, lang, &command))?,
            json_file("commands.json", &commands_json(&command))?,
            json_file("hooks.json", &hooks_json(&command, &component))?,
            file("wit/plugin.wit", PLUGIN_WIT.to_owned()),
        ];
        let (build_sh, source_rows, prerequisites, build_note) = match lang {
            Lang::Rust => {
                files.push(file(
                    "Cargo.toml",
                    templates::RUST_CARGO_TOML.replace("{{workspace}}", &workspace_section()?),
                ));
                files.push(file("src/lib.rs", templates::RUST_LIB_RS.to_owned()));
                files.push(file("wit/sdk-rust/Cargo.toml", SDK_CARGO_TOML.to_owned()));
                files.push(file("wit/sdk-rust/src/lib.rs", SDK_LIB_RS.to_owned()));
                files.push(file(".gitignore", "/target/\n".to_owned()));
                (
                    templates::RUST_BUILD_SH,
                    "| `src/lib.rs` | the command body: `Command::run`, exported with `export_plugin!` |\n\
                     | `Cargo.toml` | a `cdylib`, its own workspace; the SDK by path |\n\
                     | `wit/sdk-rust/` | the guest SDK (`tiny-harness-plugin`), a copy: it is not on crates.io |",
                    "Rust through rustup, at least the `rust-version` of Cargo.toml's \
                     `[workspace.package]`. `build.sh` adds the `wasm32-wasip2` target when it is \
                     missing.",
                    "It runs `cargo build --release --target wasm32-wasip2` (into `./target`, or \
                     `$CARGO_TARGET_DIR`) and copies the component to `{{name}}.wasm`. A \
                     wasm32-wasip2 cdylib built with the SDK is already a component. The first \
                     build fetches and compiles the bindings generator (under a minute); later \
                     ones take seconds.",
                )
            }
            Lang::Python => {
                files.push(file("app.py", templates::PYTHON_APP_PY.to_owned()));
                files.push(file(".gitignore", "__pycache__/\n".to_owned()));
                (
                    templates::PYTHON_BUILD_SH,
                    "| `app.py` | the command body: the class `Command` (world `command-plugin`) |",
                    "Python 3 with pip. `build.sh` installs `componentize-py=={{componentize_py}}` \
                     from PyPI when it is missing.",
                    "It runs `componentize-py -d wit -w command-plugin componentize app`, which \
                     bundles CPython and the app into an ~18 MB component (seconds). The harness \
                     compiles it on its first load (a few seconds) and caches it.\n\n\
                     componentize-py snapshots the interpreter after importing `app`: state made \
                     at import time (a seeded `random.Random`, say) is the same in every fresh \
                     instance.",
                )
            }
            Lang::Js => {
                files.push(file("app.js", templates::JS_APP_JS.to_owned()));
                files.push(file("package.json", templates::JS_PACKAGE_JSON.to_owned()));
                files.push(file(".gitignore", "node_modules/\n".to_owned()));
                (
                    templates::JS_BUILD_SH,
                    "| `app.js` | the command body: the exported `command` object (world `command-plugin`) |\n\
                     | `package.json` | pins `componentize-qjs` |",
                    "Node.js 18 or later with npm. `build.sh` runs `npm install` when \
                     `node_modules` lacks the pinned `componentize-qjs` (~40 MB, seconds).",
                    "It runs `componentize-qjs --wit wit --world command-plugin --js app.js --sync` \
                     (`--sync`: the harness does not use the component-model async ABI); ~2 s, \
                     a ~1.6 MB component.\n\n\
                     QuickJS is snapshotted at build time, seed included: `Math.random()` gives \
                     the same numbers in every fresh instance. Import `wasi:random/random` (add \
                     a world that includes it) for real randomness.",
                )
            }
        };
        files.push(executable(
            "build.sh",
            build_sh.replace("{{helpers}}", templates::BUILD_HELPERS.trim_end()),
        ));
        files.push(file(
            "README.md",
            templates::README
                .replace("{{source_rows}}", source_rows)
                .replace("{{prerequisites}}", prerequisites)
                .replace("{{build_note}}", build_note),
        ));

        let variables = [
            ("name", name),
            ("command", command.as_str()),
            ("crate", crate_name.as_str()),
            ("crate_file", crate_file.as_str()),
            ("lang", lang.as_str()),
            ("language", lang.title()),
            ("componentize_py", COMPONENTIZE_PY_VERSION),
            ("componentize_qjs", COMPONENTIZE_QJS_VERSION),
        ];
        for file in &mut files {
            // The contract and the SDK are written as they are.
            if file.path.starts_with("wit") {
                continue;
            }
            for (key, value) in variables {
                file.contents = file.contents.replace(&format!("{{{{{key}}}}}"), value);
            }
            if let Some(left) = placeholder(&file.contents) {
                return Err(ScaffoldError::Template(format!(
                    "{} keeps the placeholder {left}",
                    file.path.display()
                )));
            }
        }
        Ok(Scaffold {
            name: name.to_owned(),
            lang,
            kind: Kind::Command,
            command,
            command_note,
            files,
        })
    }

    /// Every file of the tool plugin `name` in `lang`: the command
    /// scaffold's build files and SDK, with tools.json for commands.json, a
    /// `tool.invoked.in` hook, a tool body and the `tool-plugin` world.
    pub fn render_tool(name: &str, lang: Lang) -> Result<Scaffold, ScaffoldError> {
        let (source_path, source, source_row) = match lang {
            Lang::Rust => (
                "src/lib.rs",
                templates::TOOL_LIB_RS,
                "| `src/lib.rs` | the tool body: `Tool::call`, exported with `export_plugin!` |\n\
                 | `Cargo.toml` | a `cdylib`, its own workspace; the SDK by path, serde_json |\n\
                 | `wit/sdk-rust/` | the guest SDK (`tiny-harness-plugin`), a copy: it is not on crates.io |",
            ),
            Lang::Python => (
                "app.py",
                templates::TOOL_APP_PY,
                "| `app.py` | the tool body: the class `Tool` (world `tool-plugin`) |",
            ),
            Lang::Js => return Err(ScaffoldError::NoToolTemplate { lang }),
        };
        let mut scaffold = Scaffold::render(name, lang)?;
        let tool = tool_name(name);
        let component = format!("{name}.wasm");
        let readme_parts = readme_parts(&scaffold)?;
        let mut files = Vec::new();
        for file in scaffold.files.drain(..) {
            let path = file.path.to_string_lossy().into_owned();
            match path.as_str() {
                "commands.json" | "README.md" | "app.py" | "src/lib.rs" => {}
                "plugin.json" => files.push(json_file("plugin.json", &tool_plugin_json(name, lang, &tool))?),
                "hooks.json" => files.push(json_file("hooks.json", &tool_hooks_json(&tool, &component))?),
                "build.sh" => files.push(ScaffoldFile {
                    contents: file.contents.replace("-w command-plugin", "-w tool-plugin"),
                    ..file
                }),
                "Cargo.toml" => files.push(ScaffoldFile {
                    contents: file.contents.replacen(
                        "tiny-harness-plugin = { path = \"wit/sdk-rust\" }",
                        "tiny-harness-plugin = { path = \"wit/sdk-rust\" }\n\
                         # Reads the tool's JSON arguments; `std` only, no derive.\n\
                         serde_json = { version = \"1\", default-features = false, features = [\"std\"] }",
                        1,
                    ),
                    ..file
                }),
                _ => files.push(file),
            }
        }
        files.push(json_file("tools.json", &tools_json(&tool))?);
        let (prerequisites, build_note) = readme_parts;
        let variables = [
            ("name", name),
            ("tool", tool.as_str()),
            ("lang", lang.as_str()),
            ("language", lang.title()),
        ];
        let mut fill = |path: &str, text: String| -> Result<(), ScaffoldError> {
            let mut contents = text;
            for (key, value) in variables {
                contents = contents.replace(&format!("{{{{{key}}}}}"), value);
            }
            if let Some(left) = placeholder(&contents) {
                return Err(ScaffoldError::Template(format!(
                    "{path} keeps the placeholder {left}"
                )));
            }
            files.push(file(path, contents));
            Ok(())
        };
        fill(source_path, source.to_owned())?;
        fill(
            "README.md",
            templates::TOOL_README
                .replace("{{source_rows}}", source_row)
                .replace("{{prerequisites}}", &prerequisites)
                .replace(
                    "{{build_note}}",
                    &build_note.replace("-w command-plugin", "-w tool-plugin"),
                ),
        )?;
        scaffold.files = files;
        scaffold.kind = Kind::Tool;
        scaffold.command = String::new();
        scaffold.command_note = None;
        Ok(scaffold)
    }

    /// Write the files to `parent/<name>`, which must not exist; returns that
    /// folder. On failure nothing is left behind.
    pub fn write(&self, parent: &Path) -> Result<PathBuf, ScaffoldError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| ScaffoldError::Io { path, source }
        };
        std::fs::create_dir_all(parent).map_err(io(parent))?;
        let root = parent.join(&self.name);
        match std::fs::create_dir(&root) {
            Ok(()) => {}
            Err(err) if err.kind() == ErrorKind::AlreadyExists => {
                return Err(ScaffoldError::Exists(root));
            }
            Err(err) => return Err(io(&root)(err)),
        }
        let written = self.files.iter().try_for_each(|file| {
            let path = root.join(&file.path);
            if let Some(folder) = path.parent() {
                std::fs::create_dir_all(folder).map_err(io(folder))?;
            }
            std::fs::write(&path, &file.contents).map_err(io(&path))?;
            if file.executable {
                make_executable(&path).map_err(io(&path))?;
            }
            Ok(())
        });
        if let Err(err) = written {
            // The folder is ours: it did not exist a moment ago.
            let _ = std::fs::remove_dir_all(&root);
            return Err(err);
        }
        Ok(root)
    }
}

impl fmt::Display for Created {
    /// What was made and what to do next.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Scaffold {
            name,
            lang,
            kind,
            command,
            command_note,
            ..
        } = &self.scaffold;
        let root = self.root.display();
        if *kind == Kind::Tool {
            let tool = tool_name(name);
            writeln!(
                f,
                "Created the {} plugin `{name}` in {root}: the tool `{tool}`",
                lang.title()
            )?;
            writeln!(f, "\nBuild it and check it:")?;
            writeln!(f, "  {root}/build.sh")?;
            writeln!(f, "  tiny-harness plugins check {root}")?;
            return write!(
                f,
                "\nTo serve it, copy its three JSON files and {name}.wasm into plugins/{name}/; \
                 the offline model calls it on `use tool {tool} with {{\"text\": \"hi\"}}`. \
                 See {root}/README.md."
            );
        }
        writeln!(
            f,
            "Created the {} plugin `{name}` in {root}: /{command} [text]",
            lang.title()
        )?;
        if let Some(note) = command_note {
            writeln!(f, "(the command is /{command}: {note})")?;
        }
        writeln!(f, "\nBuild it and try it:")?;
        writeln!(f, "  {root}/build.sh")?;
        writeln!(f, "  tiny-harness plugins run {root} \"/{command} hi\"")?;
        write!(
            f,
            "\nTo serve it, copy its three JSON files and {name}.wasm into plugins/{name}/: a \
             running harness loads it within a second. See {root}/README.md."
        )
    }
}

/// Plugin names as the loader takes them, minus the few that cannot be a
/// new folder or would replace the built-in plugin.
fn check_name(name: &str) -> Result<(), ScaffoldError> {
    if !is_valid_plugin_name(name) || name.chars().all(|c| c == '.') {
        return Err(ScaffoldError::InvalidName(name.to_owned()));
    }
    if name == BUILTIN {
        return Err(ScaffoldError::ReservedName(name.to_owned()));
    }
    Ok(())
}

/// The command to declare: the plugin's name when it can be one and the
/// harness does not serve it already, else [`FALLBACK_COMMAND`] and why.
fn command_for(name: &str) -> Result<(String, Option<String>), ScaffoldError> {
    if !is_valid_command_name(name) {
        let note = format!(
            "`{name}` is not a valid command name (1-32 of a-z, 0-9 and `-`, starting with a \
             letter)"
        );
        return Ok((FALLBACK_COMMAND.to_owned(), Some(note)));
    }
    if harness_commands()?.iter().any(|taken| taken == name) {
        let note = format!("the harness already serves /{name}");
        return Ok((FALLBACK_COMMAND.to_owned(), Some(note)));
    }
    Ok((name.to_owned(), None))
}

/// The commands every harness serves: the built-in plugin's and the native ones.
fn harness_commands() -> Result<Vec<String>, ScaffoldError> {
    let builtin: Value = serde_json::from_str(BUILTIN_COMMANDS_JSON)
        .map_err(|err| ScaffoldError::Template(format!("the built-in commands.json: {err}")))?;
    let mut names: Vec<String> = builtin["commands"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|command| command["name"].as_str().map(str::to_owned))
        .collect();
    names.extend(NATIVE_COMMANDS.iter().map(|name| (*name).to_owned()));
    Ok(names)
}

/// A cargo package name for the plugin: cargo wants a letter first and no
/// dots, and refuses Rust keywords, which the prefix rules out.
fn crate_name(name: &str) -> String {
    format!("plugin-{}", name.replace('.', "-"))
}

fn plugin_json(name: &str, lang: Lang, command: &str) -> Value {
    json!({
        "name": name,
        "version": "0.1.0",
        "description": format!("The {name} plugin, in {}: /{command} [text]", lang.title()),
    })
}

fn commands_json(command: &str) -> Value {
    json!({
        "commands": [{
            "name": command,
            "description": "Says hello, with the text if there is one",
            "usage": format!("/{command} [text]"),
            "arguments": [{ "name": "text", "type": "text", "required": false }],
        }]
    })
}

/// The tool a tool scaffold declares: the plugin's name, with `_` for `.`
/// (a tool name is `[A-Za-z0-9_-]`).
fn tool_name(name: &str) -> String {
    name.replace('.', "_")
}

fn tool_plugin_json(name: &str, lang: Lang, tool: &str) -> Value {
    json!({
        "name": name,
        "version": "0.1.0",
        "description": format!("The {name} plugin, in {}: the tool {tool}", lang.title()),
    })
}

fn tools_json(tool: &str) -> Value {
    json!({
        "tools": [{
            "name": tool,
            "description": "Counts the words of a text (and says it back)",
            "input_schema": {
                "type": "object",
                "properties": { "text": { "type": "string", "description": "the text" } },
                "required": ["text"],
                "additionalProperties": false,
            },
            "timeout_ms": 2000,
        }]
    })
}

fn tool_hooks_json(tool: &str, component: &str) -> Value {
    json!({
        "hooks": [{
            "name": format!("{tool}-body"),
            "point": "tool.invoked.in",
            "tool": tool,
            "component": component,
        }]
    })
}

/// The command README's prerequisites and build note, rendered, for the
/// tool README (they are the language's, not the kind's).
fn readme_parts(scaffold: &Scaffold) -> Result<(String, String), ScaffoldError> {
    let readme = scaffold
        .files
        .iter()
        .find(|file| file.path == Path::new("README.md"))
        .ok_or_else(|| ScaffoldError::Template("no README.md".into()))?;
    let section = |from: &str, to: &str| -> Result<String, ScaffoldError> {
        let start = readme
            .contents
            .find(from)
            .ok_or_else(|| ScaffoldError::Template(format!("README.md has no `{from}`")))?
            + from.len();
        let end = readme.contents[start..]
            .find(to)
            .map(|at| start + at)
            .ok_or_else(|| ScaffoldError::Template(format!("README.md has no `{to}`")))?;
        Ok(readme.contents[start..end].trim().to_owned())
    };
    Ok((
        section("## Prerequisites", "## Build")?,
        section("```sh\n./build.sh\n```", "## Try it")?,
    ))
}

fn hooks_json(command: &str, component: &str) -> Value {
    json!({
        "hooks": [{
            "name": format!("{command}-body"),
            "point": "command.invoked.in",
            "command": command,
            "component": component,
        }]
    })
}

/// The `[workspace]` of a Rust scaffold: what the vendored SDK's Cargo.toml
/// inherits (`workspace.package`, `workspace.lints`, and each dependency it
/// declares with `workspace = true`), copied from this repository's
/// workspace manifest.
fn workspace_section() -> Result<String, ScaffoldError> {
    let broken = |what: String| ScaffoldError::Template(what);
    let parse = |text: &str, file: &str| {
        text.parse::<toml::Table>()
            .map_err(|err| broken(format!("{file}: {err}")))
    };
    let root = parse(WORKSPACE_CARGO_TOML, "the workspace Cargo.toml")?;
    let sdk = parse(SDK_CARGO_TOML, "the SDK's Cargo.toml")?;
    let workspace = root
        .get("workspace")
        .and_then(toml::Value::as_table)
        .ok_or_else(|| broken("the workspace Cargo.toml has no [workspace]".into()))?;

    let mut section = toml::Table::new();
    for key in ["package", "lints"] {
        if let Some(value) = workspace.get(key) {
            section.insert(key.to_owned(), value.clone());
        }
    }
    let mut dependencies = toml::Table::new();
    let inherited = sdk
        .get("dependencies")
        .and_then(toml::Value::as_table)
        .into_iter()
        .flatten()
        .filter(|(_, spec)| spec.get("workspace").and_then(toml::Value::as_bool) == Some(true));
    for (name, _) in inherited {
        let spec = workspace
            .get("dependencies")
            .and_then(|deps| deps.get(name))
            .ok_or_else(|| broken(format!("the SDK inherits `{name}`, the workspace lacks it")))?;
        if spec.get("path").is_some() {
            return Err(broken(format!(
                "the SDK inherits `{name}`, a path dependency, which a scaffold cannot carry"
            )));
        }
        dependencies.insert(name.clone(), spec.clone());
    }
    if !dependencies.is_empty() {
        section.insert("dependencies".to_owned(), toml::Value::Table(dependencies));
    }
    let document = toml::Table::from_iter([("workspace".to_owned(), toml::Value::Table(section))]);
    let text = toml::to_string(&document)
        .map_err(|err| broken(format!("cannot write the workspace section: {err}")))?;
    // A workspace with only sub-tables is still a workspace, but say it.
    Ok(if text.starts_with("[workspace]") {
        text
    } else {
        format!("[workspace]\n\n{text}")
    })
}

/// The first `{{placeholder}}` left in `text`, if any.
fn placeholder(text: &str) -> Option<&str> {
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let name_len = after
            .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
            .unwrap_or(after.len());
        if name_len > 0 && after[name_len..].starts_with("}}") {
            return Some(&rest[start..start + 2 + name_len + 2]);
        }
        rest = after;
    }
    None
}

fn file(path: &str, contents: String) -> ScaffoldFile {
    ScaffoldFile {
        path: PathBuf::from(path),
        contents,
        executable: false,
    }
}

fn executable(path: &str, contents: String) -> ScaffoldFile {
    ScaffoldFile {
        executable: true,
        ..file(path, contents)
    }
}

fn json_file(path: &str, value: &Value) -> Result<ScaffoldFile, ScaffoldError> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|err| ScaffoldError::Template(format!("{path}: {err}")))?;
    Ok(file(path, text + "\n"))
}

#[cfg(unix)]
fn make_executable(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut permissions = std::fs::metadata(path)?.permissions();
    permissions.set_mode(permissions.mode() | 0o111);
    std::fs::set_permissions(path, permissions)
}

#[cfg(not(unix))]
fn make_executable(_: &Path) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests;
