//! Builds the guest crates (the built-in plugin and the test fixture plugins)
//! for `wasm32-wasip2`, so the host can embed the built-in plugin and tests
//! can load real components.
//!
//! Why a nested cargo: a build script cannot depend on a crate built for
//! another target (artifact dependencies are unstable), so this script runs
//! one `cargo build --release --target wasm32-wasip2 -p builtin -p fixture-..`
//! itself. It uses its own target dir, `target/guests`: the outer cargo holds
//! the lock on its own target dir for the whole build, so sharing it would
//! deadlock. Flags meant for the host (RUSTFLAGS, --target, ...) are removed
//! from the nested cargo's environment.
//!
//! Outputs (`cargo:rustc-env`):
//! - `BUILTIN_PLUGIN_WASM`: the built-in component, copied into OUT_DIR, for
//!   `include_bytes!`; it is also copied to `plugins/builtin/builtin.wasm` so
//!   that the repository's `plugins/` is a ready plugins directory.
//! - `BUILTIN_PLUGIN_DIR`: `plugins/builtin` (its `plugin.json`,
//!   `commands.json`, `hooks.json`).
//! - `FIXTURE_<NAME>_WASM`: each fixture under `tests/fixtures/plugins/<name>`
//!   (package `fixture-<name>`), copied into OUT_DIR as `<name>.wasm`, the
//!   file name its `hooks.json` uses. `<NAME>` is upper snake case.
//! - `FIXTURES_DIR`: `tests/fixtures`.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const GUEST_TARGET: &str = "wasm32-wasip2";
const BUILTIN_PACKAGE: &str = "builtin";
/// Environment the outer cargo sets (or passes through) that would make the
/// nested build target the host or fight over the outer build's files.
const LEAKY_ENV: [&str; 5] = [
    "CARGO_ENCODED_RUSTFLAGS",
    "RUSTFLAGS",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET",
    // Set by `cargo clippy`: it would lint the guests with the host's flags.
    "RUSTC_WORKSPACE_WRAPPER",
];

fn main() {
    let root = workspace_root();
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let guest_target_dir = root.join("target").join("guests");
    if out_dir.starts_with(&guest_target_dir) {
        panic!(
            "build the host with a target dir other than {}: the guests are built there",
            guest_target_dir.display()
        );
    }

    let fixtures = fixture_names(&root.join("tests/fixtures/plugins"));
    emit_rerun_triggers(&root);
    build_guests(&root, &guest_target_dir, &fixtures);

    let wasm_dir = guest_target_dir.join(GUEST_TARGET).join("release");
    install_builtin(&root, &wasm_dir, &out_dir);
    install_fixtures(&wasm_dir, &out_dir, &fixtures);
    println!(
        "cargo:rustc-env=FIXTURES_DIR={}",
        root.join("tests/fixtures").display()
    );
}

/// The workspace root: the parent of this package.
fn workspace_root() -> PathBuf {
    let manifest_dir = env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    Path::new(&manifest_dir)
        .parent()
        .expect("the host package lives inside the workspace")
        .to_path_buf()
}

/// Every folder under `tests/fixtures/plugins` with a Cargo.toml, sorted.
fn fixture_names(fixtures_dir: &Path) -> Vec<String> {
    let entries = fs::read_dir(fixtures_dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", fixtures_dir.display()));
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.path().join("Cargo.toml").is_file())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Rerun when a guest's sources, manifests or the contract change. Not on
/// `plugins/builtin/builtin.wasm`, which this script writes.
fn emit_rerun_triggers(root: &Path) {
    let builtin = root.join("plugins/builtin");
    let paths = [
        root.join("Cargo.toml"),
        root.join("Cargo.lock"),
        root.join("wit"),
        root.join("wit/sdk-rust"),
        builtin.join("src"),
        builtin.join("Cargo.toml"),
        builtin.join("plugin.json"),
        builtin.join("commands.json"),
        builtin.join("hooks.json"),
        root.join("tests/fixtures/plugins"),
    ];
    for path in paths {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

/// One nested `cargo build` for the built-in plugin and every fixture.
fn build_guests(root: &Path, target_dir: &Path, fixtures: &[String]) {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(root)
        .arg("build")
        .arg("--release")
        .args(["--target", GUEST_TARGET])
        .arg("--manifest-path")
        .arg(root.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir)
        .args(["-p", BUILTIN_PACKAGE]);
    for name in fixtures {
        command.args(["-p", &format!("fixture-{name}")]);
    }
    for var in LEAKY_ENV {
        command.env_remove(var);
    }
    // Guests need no DWARF (std's alone is ~3 MB per component); the name
    // section stays, so traps still show function names.
    command
        .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
        .env("CARGO_PROFILE_RELEASE_STRIP", "debuginfo");
    if denies_warnings() {
        command.env("RUSTFLAGS", "-D warnings");
    }

    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run the nested cargo ({command:?}): {e}"));
    if !output.status.success() {
        panic!(
            "building the guest plugins for {GUEST_TARGET} failed:\n{command:?}\n\n{}\n\
             hint: install the target with `rustup target add {GUEST_TARGET}`",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// Whether the host is being built with warnings denied (as CI does); the
/// guests then are too.
fn denies_warnings() -> bool {
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let flags: Vec<&str> = flags.split('\x1f').collect();
    flags.contains(&"-Dwarnings") || flags.windows(2).any(|w| w == ["-D", "warnings"])
}

/// Copies the built-in component to OUT_DIR (for `include_bytes!`) and to
/// `plugins/builtin/builtin.wasm` (the repository's plugins directory).
fn install_builtin(root: &Path, wasm_dir: &Path, out_dir: &Path) {
    let built = wasm_dir.join(format!("{BUILTIN_PACKAGE}.wasm"));
    let embedded = out_dir.join("builtin.wasm");
    let builtin_dir = root.join("plugins/builtin");
    copy_if_changed(&built, &embedded);
    copy_if_changed(&built, &builtin_dir.join("builtin.wasm"));
    println!("cargo:rustc-env=BUILTIN_PLUGIN_WASM={}", embedded.display());
    println!(
        "cargo:rustc-env=BUILTIN_PLUGIN_DIR={}",
        builtin_dir.display()
    );
}

/// Copies each fixture component to `OUT_DIR/fixtures/<name>.wasm` and
/// emits `FIXTURE_<NAME>_WASM` for it.
fn install_fixtures(wasm_dir: &Path, out_dir: &Path, fixtures: &[String]) {
    let fixtures_out = out_dir.join("fixtures");
    fs::create_dir_all(&fixtures_out)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", fixtures_out.display()));
    for name in fixtures {
        let snake = name.replace('-', "_");
        let built = wasm_dir.join(format!("fixture_{snake}.wasm"));
        let installed = fixtures_out.join(format!("{name}.wasm"));
        copy_if_changed(&built, &installed);
        println!(
            "cargo:rustc-env=FIXTURE_{}_WASM={}",
            snake.to_uppercase(),
            installed.display()
        );
    }
}

/// Copies `from` to `to` unless `to` already has the same bytes, so that
/// watchers of the destination (a plugins directory) see no spurious change.
fn copy_if_changed(from: &Path, to: &Path) {
    let bytes = fs::read(from).unwrap_or_else(|e| panic!("cannot read {}: {e}", from.display()));
    if fs::read(to).is_ok_and(|existing| existing == bytes) {
        return;
    }
    fs::write(to, &bytes).unwrap_or_else(|e| panic!("cannot write {}: {e}", to.display()));
}
