//! The work of one turn: a model call through `llm.invoked`, or a command
//! through `command.invoked`. Both run as a [`Job`](super::job::Job) and
//! return a [`TurnOutput`]; neither touches the task.
//!
//! The `llm.invoked` context is
//! `{"task": <task view>, "request": {"model", "effort", "history"}, "response": null}`.
//! A `pre` replacement becomes the request; an `in` executor that sets
//! `response` ({"text", "asks_question"}) answers instead of the model; a
//! `post` replacement becomes the reply. An abort or fault at any phase
//! fails the turn with the reason.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_stream::StreamExt as _;

use super::job::{Progress, TurnOutput};
use crate::commands::{CommandFailure, CommandRegistry};
use crate::domain::{Participant, TaskView};
use crate::hooks::{ChainError, HookCall, HookPoint, Operation, Phase};
use crate::model::{Model, ModelEvent, ModelRequest};

/// The `response` of the `llm.invoked` context.
#[derive(Debug, Serialize, Deserialize)]
struct ModelReply {
    text: String,
    #[serde(default)]
    asks_question: bool,
}

/// Ask the model, with the `llm.invoked` hooks around it.
pub(crate) async fn model_turn(
    registry: Arc<CommandRegistry>,
    model: Option<Arc<dyn Model>>,
    view: TaskView,
    request: ModelRequest,
    progress: Progress,
) -> TurnOutput {
    let Some(model) = model else {
        return TurnOutput::Failed(format!(
            "the model `{}` is not configured on this server",
            request.model
        ));
    };
    match ask_model(&registry, model.as_ref(), view, request, &progress).await {
        Ok(reply) => TurnOutput::Reply {
            text: reply.text,
            asks_question: reply.asks_question,
        },
        Err(reason) => TurnOutput::Failed(reason),
    }
}

async fn ask_model(
    registry: &CommandRegistry,
    model: &dyn Model,
    view: TaskView,
    request: ModelRequest,
    progress: &Progress,
) -> Result<ModelReply, String> {
    let task_id = view.id.clone();
    let run = |phase, context| run_phase(registry, &task_id, phase, context);
    let context = json!({ "task": view, "request": request, "response": null });
    let context = run(Phase::Pre, context).await?;
    let mut context = run(Phase::In, context).await?;
    if context.get("response").is_none_or(Value::is_null) {
        let request: ModelRequest = read(&context, "request")?;
        let reply = stream_reply(model, request, progress).await?;
        let reply = serde_json::to_value(reply).map_err(|e| e.to_string())?;
        context
            .as_object_mut()
            .ok_or("an llm.invoked executor replaced the context with a non-object")?
            .insert("response".into(), reply);
    }
    let context = run(Phase::Post, context).await?;
    read(&context, "response")
}

async fn run_phase(
    registry: &CommandRegistry,
    task_id: &str,
    phase: Phase,
    context: Value,
) -> Result<Value, String> {
    let point = HookPoint::new(Operation::LlmInvoked, phase);
    registry
        .hooks()
        .run(HookCall::new(point, Some(task_id)), None, context)
        .await
        .map_err(|error| hook_failure(point, error))
}

/// Read `key` of an `llm.invoked` context.
fn read<T: for<'de> Deserialize<'de>>(context: &Value, key: &str) -> Result<T, String> {
    let value = context.get(key).cloned().unwrap_or(Value::Null);
    serde_json::from_value(value)
        .map_err(|error| format!("an llm.invoked executor left `{key}` out of shape: {error}"))
}

/// Stream the model's answer, reporting its progress.
async fn stream_reply(
    model: &dyn Model,
    request: ModelRequest,
    progress: &Progress,
) -> Result<ModelReply, String> {
    let mut events = model.stream(request);
    let mut text = String::new();
    while let Some(event) = events.next().await {
        match event.map_err(|error| format!("the model failed: {error}"))? {
            ModelEvent::Progress(text) => progress.report(text).await,
            ModelEvent::TextDelta(delta) => text.push_str(&delta),
            ModelEvent::ToolCall(call) => {
                let question = call.arguments["question"].as_str().unwrap_or_default();
                return Ok(ModelReply {
                    text: question.to_owned(),
                    asks_question: true,
                });
            }
            ModelEvent::Usage(_) | ModelEvent::Reasoning(_) => {}
            ModelEvent::Stop(_) => {
                return Ok(ModelReply {
                    text,
                    asks_question: false,
                });
            }
        }
    }
    Err("the model stopped without a reply".into())
}

/// How a hook's refusal or fault reads in the agent's reply.
pub(crate) fn hook_failure(point: HookPoint, error: ChainError) -> String {
    match error {
        ChainError::Aborted { by, abort } => {
            format!(
                "{point} refused by {by} ({}): {}",
                abort.reason, abort.message
            )
        }
        ChainError::Fault { by, fault } => {
            tracing::warn!(%point, executor = %by, %fault, "hook executor fault");
            format!("{point} failed: {by} {fault}")
        }
    }
}

/// Run the command `text` names on the registry generation it was
/// classified on.
pub(crate) async fn command_turn(
    registry: Arc<CommandRegistry>,
    text: String,
    sender: Participant,
    view: TaskView,
) -> TurnOutput {
    let result = match registry.parse(&text) {
        Some(call) => registry.invoke(call, sender, view).await,
        // Classification parsed it on this same generation, so this is a bug.
        None => Err(CommandFailure::Failed(format!(
            "`{text}` is not a command of this registry"
        ))),
    };
    TurnOutput::Command(result)
}
