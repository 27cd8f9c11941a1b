//! The agent loop: tool rounds with parallel calls, the intrinsic tools,
//! `llm.invoked` and `tool.invoked` around every step, the turn's trace and
//! usage, the round limit, and tool calls cut off by a restart.

use std::sync::Mutex;

use super::*;
use crate::domain::{ChatMessage, ModelEvent, ModelRequest, StopReason, ToolCall, Usage};
use crate::model::{Model, ModelStream};
use crate::task::AgentSettings;
use crate::tools::ToolDeclaration;

/// The history's messages as `(role, stream kind or harness mark, text)`.
pub(super) fn shape(task: &Task) -> Vec<(String, String, String)> {
    messages(task)
        .iter()
        .map(|message| {
            let kind = message
                .metadata
                .get("stream")
                .or_else(|| message.metadata.get("harness"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let role = format!("{:?}", message.role).to_lowercase();
            (role, kind, message_text(message))
        })
        .collect()
}

pub(super) fn kinds(task: &Task) -> Vec<String> {
    shape(task).into_iter().map(|(_, kind, _)| kind).collect()
}

pub(super) fn spawn_calls(goals: &[&str]) -> String {
    goals
        .iter()
        .map(|goal| format!("use tool spawn_subtask with {}", json!({ "goal": goal })))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_is_a_tool_call_and_the_next_message_answers_it() {
    let service = service();
    let asked = start(&service, "alice", "ask me").await;
    assert_parked(&asked, "awaiting-answer");
    assert_eq!(kinds(&asked), ["", "tool-call", "question"]);
    // A command meanwhile neither answers it nor forgets it.
    let status = send(&service, "alice", say(Some(&asked.id), "/status"))
        .await
        .expect("command");
    assert_parked(&status, "awaiting-answer");
    let answered = send(&service, "alice", say(Some(&asked.id), "Is it late?"))
        .await
        .expect("answered");
    assert_parked(&answered, "awaiting-next-message");
    assert!(status_text(&answered).starts_with("You asked: Is it late?\nMy answer: "));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_llm_invoked_body_answers_instead_of_the_model() {
    let hooks = native_hook(
        HookPoint::new(Operation::LlmInvoked, Phase::In),
        500,
        |context| {
            let mut next = context.clone();
            let asked = context["request"]["messages"][0]["content"].clone();
            next["response"] = json!({ "text": format!("hook saw {asked}"), "stop": "end_turn" });
            Decision::Replace(next)
        },
    );
    let service = service_with(hooks);
    let task = start(&service, "alice", "hi").await;
    assert_eq!(status_text(&task), "hook saw \"hi\"");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_invoked_pre_refuses_a_call_and_the_model_reads_why() {
    let hooks = native_hook(
        HookPoint::new(Operation::ToolInvoked, Phase::Pre),
        100,
        |context| {
            if context["call"]["name"] == "spawn_subtask" {
                Decision::Abort(Abort {
                    reason: AbortReason::Policy,
                    message: "no delegation today".into(),
                })
            } else {
                Decision::Pass
            }
        },
    );
    let service = service_with(hooks);
    let task = start(&service, "alice", &spawn_calls(&["anything"])).await;
    let reply = status_text(&task);
    assert!(
        reply.starts_with("Tool spawn_subtask failed: the call was refused by"),
        "{reply}"
    );
    assert!(reply.contains("no delegation today"), "{reply}");
    assert!(subtasks(&task).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_turn_records_its_trace_and_model_turns_their_usage() {
    let service = service();
    let task = start(&service, "alice", "hello").await;
    let reply = task.status.message.as_ref().expect("reply");
    let usage = &reply.metadata["trace"]["usage"];
    assert!(usage["input_tokens"].as_u64() > Some(0), "{usage}");
    assert_eq!(task.metadata["usage"]["turns"], 1);

    let status = send(&service, "alice", say(Some(&task.id), "/status"))
        .await
        .expect("command");
    let trace = &status.status.message.as_ref().expect("reply").metadata["trace"];
    let steps: Vec<(&str, &str, &str)> = trace["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|step| {
            (
                step["point"].as_str().unwrap_or(""),
                step["executor"].as_str().unwrap_or(""),
                step["outcome"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            ("command.invoked.pre", "builtin/role-policy", "pass"),
            ("command.invoked.in", "builtin/status-body", "replace"),
        ]
    );
    assert_eq!(trace["steps"][1]["source"], "builtin.wasm");
    assert!(
        trace.get("model_us").is_none(),
        "a command asks no model: {trace}"
    );
}

/// A waiting actor keeps its status message as text (`PackedStatus`) and
/// reads it back when it wakes: a resend, answered from the actor's record,
/// gets the reply and its trace as they were.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_task_answers_a_resend_with_its_last_reply_and_trace_intact() {
    let service = service();
    let task = start(&service, "alice", "hello").await;
    let request = say(Some(&task.id), "and again");
    let first = send(&service, "alice", request.clone())
        .await
        .expect("turn");
    let again = send(&service, "alice", request).await.expect("resend");
    let reply = again.status.message.as_ref().expect("the reply");
    assert_eq!(again.status.message, first.status.message);
    let usage = &reply.metadata["trace"]["usage"];
    assert!(usage["input_tokens"].as_u64() > Some(0), "{reply:?}");
    assert_eq!(again.status.state, TaskState::InputRequired);
}

/// A model that calls the tool `noop` every time it is asked.
struct AlwaysCalls {
    requests: Mutex<Vec<ModelRequest>>,
}

impl Model for AlwaysCalls {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        let mut requests = self.requests.lock().expect("not poisoned");
        requests.push(request);
        let call = ToolCall {
            id: format!("call-{}", requests.len()),
            name: "noop".into(),
            arguments: json!({}),
        };
        let events = vec![
            Ok(ModelEvent::ToolCall(call)),
            Ok(ModelEvent::Usage(Usage {
                input_tokens: 10,
                output_tokens: 1,
            })),
            Ok(ModelEvent::Stop(StopReason::ToolUse)),
        ];
        Box::pin(tokio_stream::iter(events))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loop_stops_after_its_tool_rounds_and_in_executors_serve_tools() {
    // `noop` is declared, and a `tool.invoked.in` executor filtered to it
    // is its body.
    let mut builder = CommandRegistry::builder();
    let noop: ToolDeclaration = serde_json::from_value(json!({
        "name": "noop", "description": "does nothing", "roles": ["reporter"],
    }))
    .expect("a declaration");
    builder.declare_tool(noop, "native").expect("declared");
    builder
        .add_hook(HookEntry {
            name: "noop-body".into(),
            origin: "native".into(),
            point: HookPoint::new(Operation::ToolInvoked, Phase::In),
            command: Some("noop".into()),
            priority: 1000,
            kind: ExecutorKind::Native,
            source: "native".into(),
            executor: Arc::new(NativeExecutor::new(|_, context: &Value| {
                let mut next = context.clone();
                next["result"] = json!({ "output": "done" });
                Ok(Decision::Replace(next))
            })),
        })
        .expect("a tool body registers");
    let loaded = PluginLoader::new(runtime()).load(None, builder);
    let model = Arc::new(AlwaysCalls {
        requests: Mutex::new(Vec::new()),
    });
    let models = Models::only(model.clone());
    let settings = TaskSettings {
        agent: AgentSettings {
            max_tool_rounds: 2,
            system_prompt: Some("Be brief.".into()),
            ..AgentSettings::default()
        },
        ..TaskSettings::default()
    };
    let service = TaskService::new(settings, Registries::new(loaded.registry), models);
    let task = start(&service, "alice", "go").await;
    assert_parked(&task, "awaiting-next-message");
    assert!(
        status_text(&task).starts_with("The agent stopped after 2 tool rounds"),
        "{}",
        status_text(&task)
    );
    let requests = model.requests.lock().expect("not poisoned").clone();
    // Two rounds ran their calls; the third answer's calls did not run.
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].system.as_deref(), Some("Be brief."));
    let last = requests.last().expect("a request");
    let outputs: Vec<&str> = last
        .messages
        .iter()
        .filter_map(|message| match message {
            ChatMessage::Tool(output) => Some(output.content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(outputs, ["done", "done"]);
    // Usage adds up over the turn's requests.
    assert_eq!(task.metadata["usage"]["input_tokens"], 30);
    assert!(last.tools.iter().any(|tool| tool.name == "noop"));

    // A turn started by someone the tool is not for is not offered it, and
    // a call to it anyway runs nothing.
    send(&service, "alice", grant(&task.id, "carol", "assignee"))
        .await
        .expect("granted");
    let carols = send(&service, "carol", say(Some(&task.id), "go"))
        .await
        .expect("answered");
    let requests = model.requests.lock().expect("not poisoned");
    let last = requests.last().expect("a request");
    assert!(
        !last.tools.iter().any(|tool| tool.name == "noop"),
        "{:?}",
        last.tools
    );
    let refused = last
        .messages
        .iter()
        .rev()
        .find_map(|message| match message {
            ChatMessage::Tool(output) => Some(output),
            _ => None,
        });
    assert!(
        refused.is_some_and(
            |output| output.is_error && output.content.contains("no tool named `noop`")
        ),
        "{refused:?}"
    );
    assert_parked(&carols, "awaiting-next-message");
}

#[test]
fn an_executor_at_a_phase_that_never_runs_is_refused() {
    let mut builder = CommandRegistry::builder();
    let entry = |point: &str| HookEntry {
        name: "x".into(),
        origin: "test".into(),
        point: point.parse().expect("a known point"),
        command: None,
        priority: 1,
        kind: ExecutorKind::Native,
        source: "native".into(),
        executor: Arc::new(NativeExecutor::new(|_, _: &Value| Ok(Decision::Pass))),
    };
    for point in [
        "task.created.in",
        "task.state_changed.pre",
        "subtask.spawned.in",
    ] {
        let error = builder.add_hook(entry(point)).expect_err(point).to_string();
        assert!(error.contains("where no executor ever runs"), "{error}");
    }
    assert!(builder.add_hook(entry("task.created.pre")).is_ok());
}

/// A service whose operator wants every `spawn_subtask` call approved.
fn approving_service() -> TaskService {
    let loaded = PluginLoader::new(runtime()).load(None, CommandRegistry::builder());
    let settings = TaskSettings {
        agent: AgentSettings {
            tools_needing_approval: vec!["spawn_subtask".into()],
            ..AgentSettings::default()
        },
        ..settings()
    };
    let models = offline_models(&settings);
    TaskService::new(settings, Registries::new(loaded.registry), models)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_needs_approval_waits_for_it_and_runs_once_approved() {
    let service = approving_service();
    let asked = start(&service, "alice", &spawn_calls(&["hello"])).await;
    assert_parked(&asked, "awaiting-approval");
    let pending = &asked.metadata["pending_approval"];
    assert_eq!(pending[0]["name"], "spawn_subtask", "{pending}");
    assert_eq!(pending[0]["arguments"]["goal"], "hello");
    assert!(
        subtasks(&asked).is_empty(),
        "nothing ran before the approval"
    );
    assert!(status_text(&asked).starts_with("The agent wants to run `spawn_subtask`"));

    // A watcher may not decide; nothing changes.
    send(&service, "alice", grant(&asked.id, "bob", "watcher"))
        .await
        .expect("granted");
    let refused = send(&service, "bob", control(&asked.id, "approve")).await;
    assert!(
        matches!(&refused, Err(A2aError::RoleRefused { .. })),
        "{refused:?}"
    );
    // A participants event keeps the approval pending.
    let still = get(&service, "alice", &asked.id).await.expect("visible");
    assert_parked(&still, "awaiting-approval");

    let approved = send(&service, "alice", control(&asked.id, "approve"))
        .await
        .expect("approved");
    assert_parked(&approved, "awaiting-next-message");
    assert!(!approved.metadata.contains_key("pending_approval"));
    assert_eq!(subtasks(&approved).len(), 1);
    let reply = status_text(&approved);
    assert!(reply.starts_with("Tool spawn_subtask answered:"), "{reply}");
    assert!(reply.contains("You said: hello"), "{reply}");

    // Nothing awaits approval now.
    let nothing = send(&service, "alice", control(&asked.id, "approve")).await;
    assert!(
        matches!(&nothing, Err(A2aError::InvalidParams { message, .. }) if message.contains("awaits approval")),
        "{nothing:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_call_never_runs_and_the_model_reads_who_denied_it() {
    let service = approving_service();
    let asked = start(&service, "alice", &spawn_calls(&["hello"])).await;
    assert_parked(&asked, "awaiting-approval");
    let denied = send(&service, "alice", control(&asked.id, "deny"))
        .await
        .expect("denied");
    assert_parked(&denied, "awaiting-next-message");
    let reply = status_text(&denied);
    assert!(
        reply.starts_with("Tool spawn_subtask failed: alice (reporter) denied this call"),
        "{reply}"
    );
    assert!(subtasks(&denied).is_empty());

    // Writing on instead of deciding denies it too, and the model reads the
    // new message after the denial.
    let asked = send(
        &service,
        "alice",
        say(Some(&asked.id), &spawn_calls(&["again"])),
    )
    .await
    .expect("asked");
    assert_parked(&asked, "awaiting-approval");
    let moved_on = send(&service, "alice", say(Some(&asked.id), "never mind"))
        .await
        .expect("answered");
    assert_parked(&moved_on, "awaiting-next-message");
    assert!(
        status_text(&moved_on).starts_with("You said: never mind"),
        "{}",
        status_text(&moved_on)
    );
    assert!(subtasks(&moved_on).is_empty());
    let results: Vec<String> = messages(&moved_on)
        .iter()
        .filter(|m| m.metadata.get("stream").and_then(Value::as_str) == Some("tool-result"))
        .map(message_text)
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
}
