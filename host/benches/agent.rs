//! The agent loop's own cost, measured side by side in one run against the
//! fake provider (`tiny_harness::model::fake`), which answers at once on
//! loopback:
//!
//! * a turn: the model's answer streamed straight from the provider adapter
//!   (the floor), against the same answer as a whole turn through the task
//!   service (context assembly, `llm.invoked`, the journal, the trace, the
//!   parked status); the difference is the harness's cost per turn;
//! * a tool round: a turn whose model first calls a native tool (through
//!   `tool.invoked` pre, in, post and the journal) and then answers, against
//!   the plain turn plus the extra model call; the difference is the
//!   harness's cost per tool round;
//! * the delay from the provider sending a token to an A2A client reading it
//!   as an SSE event of `SendStreamingMessage` over real HTTP, p50 and p99,
//!   tokens 1 ms apart.
//!
//! Run: `cargo bench --bench agent` (optionally `-- --iterations N`).

#[path = "common/stats.rs"]
mod stats;
use stats::{iterations_from_args, median, percentile, ratio};

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};
use tiny_harness::a2a::types::{
    Message, Part, Role, SendMessageConfiguration, SendMessageRequest, SendMessageResponse,
};
use tiny_harness::commands::{CommandRegistry, Registries};
use tiny_harness::config::Config;
use tiny_harness::hooks::{
    Decision, ExecutorKind, HookEntry, HookPoint, NativeExecutor, Operation, Phase,
};
use tiny_harness::model::fake::{Answer, FakeProvider, Recorded, Reply, sent_at};
use tiny_harness::model::{ChatMessage, Effort, ModelRequest, Models, ToolSpec};
use tiny_harness::server::{self, ServerSettings};
use tiny_harness::task::{Caller, TaskService, TaskSettings};
use tiny_harness::tools::ToolDeclaration;
use tokio_stream::StreamExt as _;

/// Tokens in each answer of the turn benchmarks.
const ANSWER_TOKENS: usize = 10;
/// Tokens streamed for the delay measurement.
const DELAY_TOKENS: usize = 500;
/// Uncounted runs before each measurement: connections, allocations, the
/// first turn's lazy setup.
const WARM_UPS: usize = 10;
/// What the participant says to make the model call the tool.
const CALL_THE_TOOL: &str = "call the tool";

fn main() -> anyhow::Result<()> {
    let iterations = iterations_from_args().unwrap_or(300).max(1);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(run(iterations))
}

async fn run(iterations: usize) -> anyhow::Result<()> {
    let fake = FakeProvider::start(answer).await;
    let models = Models::build(&[fake.openai_model("gpt")], "gpt")?;
    let service = service(models.clone())?;

    let model_text = median(iterations, WARM_UPS, || model_alone(&models, "hello")).await;
    let model_call = median(iterations, WARM_UPS, || model_alone(&models, CALL_THE_TOOL)).await;
    let turn = median(iterations, WARM_UPS, || one_turn(&service, "hello")).await;
    let tool_turn = median(iterations, WARM_UPS, || one_turn(&service, CALL_THE_TOOL)).await;

    let per_turn = turn.saturating_sub(model_text);
    let per_round = tool_turn.saturating_sub(turn + model_call);
    println!("The agent loop against a provider that answers at once, median of {iterations}:");
    println!(
        "  model alone ({ANSWER_TOKENS} tokens): {model_text:>9.1?}; as a turn: {turn:>9.1?} ({:.2}x); harness per turn: {per_turn:.1?}",
        ratio(turn, model_text),
    );
    println!(
        "  model calling the tool alone: {model_call:>9.1?}; a turn with one tool round: {tool_turn:>9.1?}; harness per tool round: {per_round:.1?}",
    );

    let stamped =
        FakeProvider::start(|_| Answer::openai_stamped(DELAY_TOKENS, Duration::from_millis(1)))
            .await;
    let models = Models::build(&[stamped.openai_model("gpt")], "gpt")?;
    let mut delays = token_to_sse_delays(service_over_http(models).await?, &stamped).await?;
    delays.sort();
    println!(
        "Token sent by the provider -> SSE event read by an A2A client, {} tokens 1 ms apart: p50 {:.1?}, p99 {:.1?}",
        delays.len(),
        percentile(&delays, 50),
        percentile(&delays, 99),
    );
    Ok(())
}

/// The provider's answers: a tool call when asked for one (and no tool
/// result is in yet), text otherwise.
fn answer(request: &Recorded) -> Reply {
    let answered_tool = request.body["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .is_some_and(|last| last["role"] == "tool");
    if request.last_user_text() == CALL_THE_TOOL && !answered_tool {
        return Answer::text(["calling"])
            .call("call-1", "lookup", [r#"{"key":"#, r#""value"}"#])
            .openai();
    }
    Answer::tokens(ANSWER_TOKENS).openai()
}

/// A service with model `gpt` and one native tool, `lookup`, whose body
/// answers at once: the measurement is the loop, not a tool.
fn service(models: Models) -> anyhow::Result<TaskService> {
    let mut builder = CommandRegistry::builder();
    let lookup: ToolDeclaration = serde_json::from_value(json!({
        "name": "lookup",
        "description": "looks a key up",
        "roles": ["reporter"],
    }))?;
    builder.declare_tool(lookup, "native")?;
    builder.add_hook(HookEntry {
        name: "lookup-body".into(),
        origin: "native".into(),
        point: HookPoint::new(Operation::ToolInvoked, Phase::In),
        command: Some("lookup".into()),
        priority: 1000,
        kind: ExecutorKind::Native,
        source: "native".into(),
        executor: Arc::new(NativeExecutor::new(|_, context: &Value| {
            let mut next = context.clone();
            next["result"] = json!({ "output": "found" });
            Ok(Decision::Replace(next))
        })),
    })?;
    let (registry, _) = builder.freeze();
    let settings = TaskSettings {
        default_model: "gpt".into(),
        selectable_models: vec!["gpt".into()],
        ..TaskSettings::default()
    };
    Ok(TaskService::new(
        settings,
        Registries::new(registry),
        models,
    ))
}

/// The answer to `text` read straight from the adapter: what a turn costs
/// with no harness around it.
async fn model_alone(models: &Models, text: &str) -> Duration {
    let model = &models.get("gpt").expect("configured").model;
    // The request a turn sends: the participant's text and the tool offered.
    let request = ModelRequest {
        model: "gpt".into(),
        effort: Effort::Medium,
        system: None,
        messages: vec![ChatMessage::User {
            content: text.into(),
        }],
        tools: vec![ToolSpec {
            name: "lookup".into(),
            description: "looks a key up".into(),
            input_schema: json!({"type": "object"}),
        }],
        max_output_tokens: None,
    };
    let started = Instant::now();
    let mut events = model.stream(request);
    while let Some(event) = events.next().await {
        if let Err(error) = event {
            panic!("the fake provider failed: {error}");
        }
    }
    started.elapsed()
}

/// A new conversation's first turn, to its parked status.
async fn one_turn(service: &TaskService, text: &str) -> Duration {
    let caller = Caller { id: "alice".into() };
    let request = SendMessageRequest {
        tenant: None,
        message: Message::new(Role::User, uuid(), vec![Part::text(text)]),
        configuration: Some(SendMessageConfiguration {
            history_length: Some(0),
            ..Default::default()
        }),
        metadata: Default::default(),
    };
    let started = Instant::now();
    match service.send_message(&caller, request).await {
        Ok(SendMessageResponse::Task(task)) => {
            let elapsed = started.elapsed();
            let reply = task
                .status
                .message
                .as_ref()
                .map(|message| format!("{:?}", message.parts))
                .unwrap_or_default();
            // A turn that failed would be cheap: count only real answers.
            assert!(reply.contains("tok"), "not the model's answer: {reply}");
            elapsed
        }
        other => panic!("expected a task, got {other:?}"),
    }
}

/// The A2A server over real HTTP on a loopback port, on a service whose
/// model is `models`' `gpt`; answers its base URL.
async fn service_over_http(models: Models) -> anyhow::Result<String> {
    let service = service(models)?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
    let bound = listener.local_addr()?;
    let config = Config::from_toml(
        "[rate_limit]\nper_participant_burst = 100000\nper_address_burst = 100000\n",
    )?;
    let app = server::app(service, ServerSettings::new(&config, bound));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(format!("http://{bound}"))
}

/// One streamed turn over JSON-RPC: for each text delta, how long after the
/// provider sent its token the client read it.
async fn token_to_sse_delays(
    base_url: String,
    provider: &FakeProvider,
) -> anyhow::Result<Vec<Duration>> {
    let http = reqwest::Client::new();
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
        "params": {"message": {"role": "ROLE_USER", "messageId": uuid(),
            "parts": [{"text": "stream to me"}]}},
    });
    let mut response = http
        .post(format!("{base_url}/"))
        .header("A2A-Version", "1.0")
        .header("X-Participant-Id", "alice")
        .header("Accept", "text/event-stream")
        .json(&body)
        .send()
        .await?;
    if !response.status().is_success() {
        bail!("the stream was refused: {}", response.status());
    }
    let mut delays = Vec::with_capacity(DELAY_TOKENS);
    let mut pending = String::new();
    while let Some(chunk) = response.chunk().await? {
        let read_at = provider.epoch().elapsed();
        pending.push_str(std::str::from_utf8(&chunk).context("SSE is text")?);
        while let Some(end) = pending.find("\n\n") {
            let event: String = pending.drain(..end + 2).collect();
            for token in text_deltas(&event) {
                if let Some(sent) = sent_at(&token) {
                    delays.push(read_at.saturating_sub(sent));
                }
            }
        }
    }
    if delays.len() != DELAY_TOKENS {
        bail!(
            "{} of {DELAY_TOKENS} tokens reached the client",
            delays.len()
        );
    }
    Ok(delays)
}

/// The text of an SSE event's `text-delta` status update, if it is one.
fn text_deltas(event: &str) -> Vec<String> {
    event
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .filter_map(|frame| {
            let update = &frame["result"]["statusUpdate"];
            if update["metadata"]["stream"] != "text-delta" {
                return None;
            }
            update["status"]["message"]["parts"][0]["text"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}
