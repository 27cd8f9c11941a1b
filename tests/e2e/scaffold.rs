//! `tiny-harness plugins new`, run as a user would: a plugin scaffolded in
//! each language, outside this repository, builds with its own build.sh and
//! loads and runs in the harness.
//!
//! The Rust scaffold builds with cargo alone (its target dir is
//! `target/scaffold-test`, kept between runs, so only the first run compiles
//! the bindings generator). The Python and JavaScript ones need the
//! toolchains the examples use: `tests/run.sh` installs them first, and these
//! tests fail with that advice when they are missing rather than install
//! anything themselves (the JavaScript one borrows the examples'
//! `node_modules`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use tiny_harness::scaffold::{COMPONENTIZE_PY_VERSION, COMPONENTIZE_QJS_VERSION};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the host package lives in the repository")
        .to_owned()
}

/// The real binary, with a compile cache private to `cache`.
fn harness(args: &[&str], cache: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
        .args(args)
        .env("TINY_HARNESS_CACHE_DIR", cache)
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn succeeded(what: &str, output: &Output) -> String {
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}{}",
        output.status,
        text(&output.stdout),
        text(&output.stderr)
    );
    text(&output.stdout)
}

/// A scaffold in a scratch folder (outside the repository).
struct Scaffolded {
    _scratch: tempfile::TempDir,
    root: PathBuf,
    cache: PathBuf,
}

impl Scaffolded {
    /// `plugins new NAME --lang LANG --dir <scratch>`; checks what every
    /// scaffold has.
    fn new(name: &str, lang: &str, command: &str) -> Self {
        let scratch = tempfile::tempdir().expect("tempdir");
        let cache = scratch.path().join("cache");
        let dir = scratch.path().join("plugins");
        let dir_arg = dir.display().to_string();
        let output = harness(
            &["plugins", "new", name, "--lang", lang, "--dir", &dir_arg],
            &cache,
        );
        let stdout = succeeded("plugins new", &output);
        let root = dir.join(name);
        assert!(
            stdout.contains(&format!("plugin `{name}` in {}", root.display())),
            "{stdout}"
        );
        assert!(stdout.contains(&format!("\"/{command} hi\"")), "{stdout}");

        let read = |file: &str| {
            std::fs::read_to_string(root.join(file))
                .unwrap_or_else(|err| panic!("{lang} scaffold: {file}: {err}"))
        };
        let json = |file: &str| -> serde_json::Value {
            serde_json::from_str(&read(file)).unwrap_or_else(|err| panic!("{file}: {err}"))
        };
        assert_eq!(json("plugin.json")["name"], name);
        let commands = json("commands.json");
        assert_eq!(commands["commands"][0]["name"], command, "{commands}");
        assert_eq!(commands["commands"][0]["arguments"][0]["name"], "text");
        let hooks = json("hooks.json");
        assert_eq!(hooks["hooks"][0]["command"], command, "{hooks}");
        assert_eq!(hooks["hooks"][0]["component"], format!("{name}.wasm"));
        let contract =
            std::fs::read_to_string(repo().join("wit/plugin.wit")).expect("the contract");
        assert_eq!(
            read("wit/plugin.wit"),
            contract,
            "the scaffold carries the contract"
        );
        assert!(read("README.md").contains(&format!("/{command} hi")));
        let build = read("build.sh");
        assert!(build.contains("set -euo pipefail"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(root.join("build.sh"))
                .expect("build.sh")
                .permissions()
                .mode();
            assert_eq!(mode & 0o111, 0o111, "build.sh is executable");
        }
        Scaffolded {
            _scratch: scratch,
            root,
            cache,
        }
    }

    fn has(&self, file: &str) -> bool {
        self.root.join(file).is_file()
    }

    /// Run the scaffold's build.sh; checks that it made `<name>.wasm`.
    fn build(&self, name: &str, configure: impl FnOnce(&mut Command)) {
        let started = Instant::now();
        let mut build = Command::new(self.root.join("build.sh"));
        build.current_dir(&self.root);
        // What cargo sets for this test's own build must not leak into a
        // build for another target (as host/build.rs does for the guests).
        for leaky in [
            "CARGO_ENCODED_RUSTFLAGS",
            "RUSTFLAGS",
            "CARGO_TARGET_DIR",
            "CARGO_BUILD_TARGET",
            "RUSTC_WORKSPACE_WRAPPER",
        ] {
            build.env_remove(leaky);
        }
        configure(&mut build);
        let output = build.output().expect("build.sh runs");
        succeeded("build.sh", &output);
        let component = self.root.join(format!("{name}.wasm"));
        assert!(
            component.is_file(),
            "build.sh made no {}",
            component.display()
        );
        eprintln!("{name}: build.sh took {:?}", started.elapsed());
    }

    /// `plugins check` loads it cleanly, and `plugins run` answers `/<command> hi`.
    fn check_and_run(&self, name: &str, command: &str) {
        let started = Instant::now();
        let root = self.root.display().to_string();
        let report = succeeded(
            "plugins check",
            &harness(&["plugins", "check", &root], &self.cache),
        );
        assert!(
            report.contains(&format!("loaded    {name} 0.1.0")),
            "{report}"
        );
        assert!(
            report.contains(&format!("/{command}; 1 hook(s)")),
            "{report}"
        );
        let message = format!("/{command} hi");
        let stdout = succeeded(
            "plugins run",
            &harness(&["plugins", "run", &root, &message], &self.cache),
        );
        assert_eq!(
            stdout,
            format!(
                "Hello from {name}: hi\ndata: {{\"plugin\":\"{name}\",\"sender\":\"you\",\"text\":\"hi\"}}\n"
            )
        );
        eprintln!("{name}: check and run took {:?}", started.elapsed());
    }
}

#[test]
fn a_rust_scaffold_builds_outside_the_repository_and_runs() {
    let scaffold = Scaffolded::new("weather", "rust", "weather");
    for file in [
        "Cargo.toml",
        "src/lib.rs",
        "wit/sdk-rust/Cargo.toml",
        "wit/sdk-rust/src/lib.rs",
    ] {
        assert!(scaffold.has(file), "no {file}");
    }
    // Kept between runs (and cleaned with `cargo clean`): the first build
    // compiles wit-bindgen's generator, later ones only the SDK and the plugin.
    let target = repo().join("target/scaffold-test");
    scaffold.build("weather", |build| {
        build.env("CARGO_TARGET_DIR", &target);
    });
    scaffold.check_and_run("weather", "weather");
}

#[test]
fn a_python_scaffold_builds_and_runs() {
    let installed = Command::new("python3")
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('componentize-py'))",
        ])
        .output()
        .map(|output| text(&output.stdout).trim().to_owned())
        .unwrap_or_default();
    assert_eq!(
        installed, COMPONENTIZE_PY_VERSION,
        "componentize-py {COMPONENTIZE_PY_VERSION} is not installed for python3: run \
         tests/run.sh, which installs the example plugins' toolchains"
    );
    // A name that cannot be a command name: the command is /hello.
    let scaffold = Scaffolded::new("py.greeter", "python", "hello");
    assert!(scaffold.has("app.py"));
    scaffold.build("py.greeter", |_| {});
    scaffold.check_and_run("py.greeter", "hello");
}

#[test]
fn a_javascript_scaffold_builds_and_runs() {
    let examples_modules = repo().join("examples/plugins/js/node_modules");
    let installed = std::fs::read_to_string(examples_modules.join("componentize-qjs/package.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|package| package["version"].as_str().map(str::to_owned));
    assert_eq!(
        installed.as_deref(),
        Some(COMPONENTIZE_QJS_VERSION),
        "componentize-qjs {COMPONENTIZE_QJS_VERSION} is not in {}: run tests/run.sh, which \
         installs the example plugins' toolchains",
        examples_modules.display()
    );
    let scaffold = Scaffolded::new("js-greeter", "js", "js-greeter");
    assert!(scaffold.has("app.js") && scaffold.has("package.json"));
    // The examples' node_modules, so the build needs no network.
    std::os::unix::fs::symlink(&examples_modules, scaffold.root.join("node_modules"))
        .expect("link node_modules");
    scaffold.build("js-greeter", |_| {});
    scaffold.check_and_run("js-greeter", "js-greeter");
}

#[test]
fn plugins_new_refuses_bad_names_and_existing_folders() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let cache = scratch.path().join("cache");
    let dir = scratch.path().display().to_string();
    let new = |name: &str| {
        harness(
            &["plugins", "new", name, "--lang", "js", "--dir", &dir],
            &cache,
        )
    };

    for bad in ["Weather", "a/b", "..", "", "builtin"] {
        let output = new(bad);
        assert_eq!(
            output.status.code(),
            Some(1),
            "`{bad}`: {}",
            text(&output.stdout)
        );
        let stderr = text(&output.stderr);
        assert!(stderr.contains("plugin name"), "`{bad}`: {stderr}");
    }
    assert_eq!(
        std::fs::read_dir(scratch.path()).expect("ls").count(),
        0,
        "nothing was written"
    );

    succeeded("plugins new", &new("taken"));
    std::fs::write(scratch.path().join("taken/app.js"), "// mine").expect("edit");
    let output = new("taken");
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("already exists"),
        "{}",
        text(&output.stderr)
    );
    let app = std::fs::read_to_string(scratch.path().join("taken/app.js")).expect("app.js");
    assert_eq!(app, "// mine", "an existing folder is never overwritten");

    let output = harness(
        &["plugins", "new", "x", "--lang", "cobol", "--dir", &dir],
        &cache,
    );
    assert_eq!(output.status.code(), Some(2), "clap refuses the language");
    assert!(
        text(&output.stderr).contains("rust, python, js"),
        "{}",
        text(&output.stderr)
    );
}

/// `plugins new NAME --lang LANG --kind tool`, built; `plugins check` lists
/// its tool, and the model calls it through a served harness.
async fn check_tool_scaffold(
    name: &str,
    lang: &str,
    tool: &str,
    configure: impl FnOnce(&mut Command),
) {
    let scratch = tempfile::tempdir().expect("tempdir");
    let cache = scratch.path().join("cache");
    let dir = scratch.path().join("plugins");
    let dir_arg = dir.display().to_string();
    let output = harness(
        &[
            "plugins", "new", name, "--lang", lang, "--kind", "tool", "--dir", &dir_arg,
        ],
        &cache,
    );
    let stdout = succeeded("plugins new --kind tool", &output);
    assert!(stdout.contains(&format!("the tool `{tool}`")), "{stdout}");
    let scaffold = Scaffolded {
        _scratch: scratch,
        root: dir.join(name),
        cache,
    };
    assert!(scaffold.has("tools.json") && !scaffold.has("commands.json"));
    scaffold.build(name, configure);
    let root = scaffold.root.display().to_string();
    let report = succeeded(
        "plugins check",
        &harness(&["plugins", "check", &root], &scaffold.cache),
    );
    assert!(
        report.contains(&format!("tools {tool}; 1 hook(s)")),
        "{report}"
    );

    // Served, the offline model calls it; the schema guards it.
    let config = scaffold
        .root
        .parent()
        .expect("parent")
        .join("../tiny-harness.toml");
    std::fs::write(&config, "[models]\ndefault = \"offline-echo\"\n").expect("config");
    let spawned = Killed(crate::support::spawn_server(&config, &dir, "warn"));
    let spawned = &spawned.0;
    let client = crate::server::support::Client {
        http: crate::support::http(),
        base: spawned.base.clone(),
        participant: "alice".into(),
        token: None,
    };
    let task = client
        .say(
            None,
            &format!("use tool {tool} with {{\"text\": \"one two three\"}}"),
        )
        .await;
    let reply = crate::server::support::status_text(&task);
    assert!(
        reply.starts_with(&format!("Tool {tool} answered: {{"))
            && reply.contains(&format!("\"tool\":\"{tool}\""))
            && reply.contains("\"words\":3"),
        "{reply}"
    );
    let task = client
        .say(None, &format!("use tool {tool} with {{\"words\": 3}}"))
        .await;
    let reply = crate::server::support::status_text(&task);
    assert!(
        reply.starts_with(&format!("Tool {tool} failed: invalid arguments")),
        "{reply}"
    );
}

/// A served harness, killed when the test ends, pass or fail.
struct Killed(crate::support::Spawned);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.child.kill();
        let _ = self.0.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rust_tool_scaffold_builds_and_the_model_calls_it() {
    let target = repo().join("target/scaffold-test");
    check_tool_scaffold("counter.tool", "rust", "counter_tool", |build| {
        build.env("CARGO_TARGET_DIR", &target);
    })
    .await;
}

#[test]
fn a_javascript_tool_scaffold_is_refused_with_the_languages_that_work() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let dir = scratch.path().display().to_string();
    let output = harness(
        &[
            "plugins", "new", "x", "--lang", "js", "--kind", "tool", "--dir", &dir,
        ],
        &scratch.path().join("cache"),
    );
    assert!(!output.status.success());
    assert!(
        text(&output.stderr).contains("use --lang rust or --lang python"),
        "{}",
        text(&output.stderr)
    );
    assert!(!scratch.path().join("x").exists(), "nothing was written");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_python_tool_scaffold_builds_and_the_model_calls_it() {
    check_tool_scaffold("py.words", "python", "py_words", |_| {}).await;
}
