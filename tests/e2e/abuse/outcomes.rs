//! Issue 9, items 3 and 6: a command's outcome is bounded by what it costs
//! the harness, not by what it costs the plugin. A hostile plugin
//! (`amplifier`, built from source) asks for 10,000 sub-tasks or replies
//! with 120 MiB; both are refused with the limit named, nothing of them is
//! kept, and the server's memory stays near where it was.

use serde_json::Value;

use crate::server::support::{Server, status_text};
use crate::support::{PluginsFolder, resident_kib};

const CONFIG: &str = r#"
[models]
default = "offline-echo"

[models.offline-echo]
provider = "offline"
"#;

#[tokio::test(flavor = "multi_thread")]
async fn ten_thousand_spawn_effects_and_a_huge_reply_are_refused_and_cost_nothing() {
    let folder = PluginsFolder::new().with_fixture("amplifier");
    let server = Server::start(CONFIG, Some(folder.path()));
    let alice = server.client("alice");
    let task = alice.say(None, "hello").await;
    let id = task["id"].as_str().expect("an id").to_owned();
    // Warm up the plugin once, so its compiled component and first instance
    // are part of the baseline.
    let warm = alice.say(Some(&id), "/spawn 1").await;
    assert!(
        status_text(&warm).starts_with("Spawning 1 sub-tasks."),
        "{warm}"
    );
    let baseline = resident_kib(server.pid());

    let refused = alice.say(Some(&id), "/spawn 10000").await;
    let text = status_text(&refused);
    assert!(
        text.starts_with("/spawn asked for 10000 effects, over the limit of 16"),
        "{text}"
    );
    assert!(text.contains("max_effects"), "{text}");
    let after_spawns = resident_kib(server.pid());

    let shouted = alice.say(Some(&id), "/shout 120").await;
    let text = status_text(&shouted);
    assert!(
        text.starts_with("/shout replied with 125829120 bytes"),
        "{text}"
    );
    assert!(text.contains("max_reply_bytes"), "{text}");

    // Nothing of either was kept: one sub-task (the warm-up's), and a task
    // that reads back small.
    let task = alice.get_task(&id).await;
    let subtasks = task["metadata"]["subtasks"].as_array().map_or(0, Vec::len);
    assert_eq!(subtasks, 1, "{}", task["metadata"]);
    let size = serde_json::to_string(&task).expect("serializes").len();
    assert!(size < 64 << 10, "the task reads back as {size} bytes");
    // 10,000 effects used to cost hundreds of MB; refused, they cost the
    // decoding of one small answer.
    let grown = after_spawns.saturating_sub(baseline);
    assert!(
        grown < 64 << 10,
        "10,000 spawn effects grew the server by {grown} KiB"
    );
    assert!(
        matches!(task["status"]["state"], Value::String(ref s) if s == "TASK_STATE_INPUT_REQUIRED")
    );
}
