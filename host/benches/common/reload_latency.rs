//! Hot-reload latency: from the moment a plugin's files are written into the
//! served plugins folder to the moment its command is available, through the
//! real watcher, debounce and reloader, with the component cache warm (a
//! restart or a reload of an unchanged component never recompiles).
//!
//! Shared by the `reload` bench and the end of the `dispatch` bench.
//! Goal (issue 4): under 500 ms for cached components.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use tiny_harness::commands::RegistryBuilder;
use tiny_harness::plugins::wasm::{RuntimeConfig, WasmRuntime};
use tiny_harness::plugins::{
    LoadReport, NativeRegistrations, PluginLoader, QUIET_PERIOD, Reloader, watch,
};

const GOAL: Duration = Duration::from_millis(500);

/// A plugin to drop in: its folder name, where its manifests are, its built
/// component, and the command it declares.
struct Subject {
    label: &'static str,
    manifests: PathBuf,
    component: PathBuf,
    command: &'static str,
}

fn subjects() -> Vec<Subject> {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/plugins");
    let mut subjects = vec![Subject {
        label: "greeter (Rust, 80 KB)",
        manifests: Path::new(env!("FIXTURES_DIR")).join("plugins/greeter"),
        component: PathBuf::from(env!("FIXTURE_GREETER_WASM")),
        command: "greet",
    }];
    for (lang, label) in [
        ("js", "example-js (QuickJS, 1.6 MB)"),
        ("python", "example-python (18 MB)"),
    ] {
        let dir = examples.join(lang);
        let component = dir.join(format!("{lang}.wasm"));
        if component.is_file() {
            subjects.push(Subject {
                label,
                manifests: dir,
                component,
                command: "dice",
            });
        } else {
            println!("({label}: not built; run examples/plugins/build.sh {lang})");
        }
    }
    subjects
}

/// Print reload latency for each subject, `iterations` drop-ins each. Must
/// run inside a Tokio runtime.
pub(crate) fn measure_reload_latency(iterations: usize) -> anyhow::Result<()> {
    let cache = tempfile::tempdir()?;
    let folder = tempfile::tempdir()?;
    let runtime = WasmRuntime::new(RuntimeConfig {
        cache_dir: Some(cache.path().to_owned()),
    })?;
    let natives: NativeRegistrations = Arc::new(|_: &mut RegistryBuilder| {});
    let report = Arc::new(RwLock::new(LoadReport::default()));
    let (reloader, _) = Reloader::start(
        PluginLoader::new(runtime),
        folder.path().to_owned(),
        natives,
        report,
    )?;
    let registries = reloader.registries();
    let _watch = watch(folder.path().to_owned(), Arc::new(Mutex::new(reloader)))?;
    let available = |command: &str| registries.current().get(command).is_some();

    println!(
        "reload latency: plugin files written -> command available ({iterations} drop-ins each, \
         warm component cache, debounce quiet period {} ms)",
        QUIET_PERIOD.as_millis()
    );
    for subject in subjects() {
        let target = folder.path().join(subject.command);
        // The first drop-in compiles and fills the cache; it is not counted.
        let first = drop_in(&subject, &target, &available)?;
        remove(&target, subject.command, &available)?;
        let mut samples = Vec::with_capacity(iterations);
        for _ in 0..iterations {
            samples.push(drop_in(&subject, &target, &available)?);
            remove(&target, subject.command, &available)?;
        }
        samples.sort();
        let p50 = samples[samples.len() / 2];
        let p99 = samples[((samples.len() - 1) as f64 * 0.99) as usize];
        println!(
            "{:<32} p50 {:>6.0} ms   p99 {:>6.0} ms   first (compiling) {:>6.0} ms   goal <= {} ms: {}",
            subject.label,
            millis(p50),
            millis(p99),
            millis(first),
            GOAL.as_millis(),
            if p50 <= GOAL { "met" } else { "NOT met" }
        );
    }
    Ok(())
}

/// Write the plugin in (component first, manifests last, as a copy would)
/// and time until its command is served.
fn drop_in(
    subject: &Subject,
    target: &Path,
    available: &dyn Fn(&str) -> bool,
) -> anyhow::Result<Duration> {
    std::fs::create_dir_all(target)?;
    let file_name = subject
        .component
        .file_name()
        .ok_or_else(|| anyhow::anyhow!("no file name"))?;
    std::fs::copy(&subject.component, target.join(file_name))?;
    for manifest in ["plugin.json", "commands.json", "hooks.json"] {
        std::fs::copy(subject.manifests.join(manifest), target.join(manifest))?;
    }
    let written = Instant::now();
    wait_until(|| available(subject.command))?;
    Ok(written.elapsed())
}

fn remove(target: &Path, command: &str, available: &dyn Fn(&str) -> bool) -> anyhow::Result<()> {
    std::fs::remove_dir_all(target)?;
    wait_until(|| !available(command))
}

fn wait_until(done: impl Fn() -> bool) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        anyhow::ensure!(Instant::now() < deadline, "no reload within 60 s");
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}
