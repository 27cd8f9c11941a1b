//! The agent loop of one turn: ask the model through `llm.invoked`, run the
//! tools it calls through `tool.invoked`, give it their results, and again,
//! until it answers without tools (or asks the participants a question, or
//! runs out of tool rounds).
//!
//! * A request is the system prompt from the configuration, then the
//!   conversation as `transcript` fits it to the model's window, then the
//!   turn's own tool rounds, with the turn's tools offered.
//! * `llm.invoked` `pre` may rewrite the request or refuse it, an `in`
//!   executor that sets `response` answers instead of the model, `post` may
//!   rewrite the response. The model's text streams to subscribers as it
//!   arrives (live only: the final status holds the whole reply).
//! * The calls of one response run concurrently; each call, and each
//!   result as it arrives, is journaled before the loop goes on, and the
//!   results go back to the model in the order of the calls.
//! * A tool call a restart cut off is never run again: the model is told it
//!   was interrupted, and the loop goes on.
//! * Dropping the turn (a complete control, a CancelTask) stops everything
//!   in flight: the provider's connection closes, tool calls are dropped.

use std::sync::Arc;
use std::time::Instant;

use futures_util::StreamExt as _;
use futures_util::stream::FuturesUnordered;

use super::env::Env;
use super::job::{Answer, Link, Record, TurnEnd, TurnOutput};
use super::state::{ApprovalDecision, Lifecycle, TaskRecord, Turn, TurnWork};
use super::tools::{Called, ToolRun, Toolbox, denied};
use super::transcript::{self, Transcript, Unstored};
use super::turn::hook_failure;
use crate::commands::CommandRegistry;
use crate::domain::{
    ChatMessage, Effort, LlmContext, ModelEvent, ModelRequest, ModelResponse, Role, StopReason,
    TaskView, ToolCall, ToolOutput, Usage,
};
use crate::hooks::{HookCall, HookPoint, Operation, Phase, Trace};
use crate::model::ModelEntry;
use crate::store::TaskStore;

/// A model turn ready to run: the agent loop, and where its transcript is
/// read from. Both engines prepare it the same way (the embedded actor, and
/// the Temporal engine's turn activity).
pub(crate) struct ModelTurn {
    turn: AgentTurn,
    store: Arc<dyn TaskStore>,
    task_id: String,
    /// How many tokens of conversation the request may carry.
    budget: u64,
    /// The newest messages, which the store does not have yet (a message
    /// whose acceptance waits for the turn's commit).
    unstored: Unstored,
    /// How many stored messages the conversation's last transcript went
    /// through, when this worker read one (`transcript::read`).
    last_span: Option<usize>,
}

impl ModelTurn {
    /// The model turn `record` is running, as `env` configures it, answering
    /// `turn_message` (a delegated task's turn answers no message).
    pub(crate) fn prepare(
        env: &Env,
        record: &TaskRecord,
        task: TaskView,
        turn_message: Option<String>,
    ) -> Self {
        let registry = env.registries.current();
        let settings = &env.settings;
        let entry = env.models.get(&record.model).cloned();
        // Declared tools are offered by the role of whoever started the turn.
        let role = match &record.turn {
            Some(Turn {
                work:
                    TurnWork::Model {
                        sender: Some(sender),
                        ..
                    },
                ..
            }) => sender.role,
            _ => Role::Reporter,
        };
        // The approval applies to the turn's first run only: after a restart
        // an approved call that was running is never run again.
        let approval = match &record.turn {
            Some(Turn {
                work: TurnWork::Model { approval, .. },
                attempt: 1,
            }) => approval.clone(),
            _ => None,
        };
        let needing_approval = &settings.agent.tools_needing_approval;
        let tools = match record.lifecycle {
            // A one-shot task is a participant's too: it may delegate and ask.
            Lifecycle::Conversation | Lifecycle::Task => {
                Toolbox::conversation(&registry, role, needing_approval)
            }
            Lifecycle::Delegated { .. } => Toolbox::delegated(&registry, role, needing_approval),
        };
        let system = settings.agent.system_prompt.clone();
        let budget = entry.as_ref().map_or(u64::MAX, |entry| {
            transcript_budget(entry, system.as_deref(), &tools)
        });
        let message_id = match record.lifecycle {
            Lifecycle::Delegated { .. } => None,
            Lifecycle::Conversation | Lifecycle::Task => turn_message,
        };
        let turn = AgentTurn {
            registry,
            model: entry,
            message_id,
            model_name: record.model.clone(),
            effort: record.effort.parse().unwrap_or_default(),
            system,
            max_tool_rounds: settings.agent.max_tool_rounds,
            task,
            transcript: Transcript::default(),
            tools,
            approval,
        };
        ModelTurn {
            turn,
            store: Arc::clone(&env.store),
            task_id: record.id.clone(),
            budget,
            unstored: Unstored::default(),
            last_span: None,
        }
    }

    /// The turn's conversation ends with `unstored`, not stored yet.
    pub(crate) fn with_unstored(self, unstored: Unstored) -> Self {
        ModelTurn { unstored, ..self }
    }

    /// The conversation's last transcript went through `last_span` stored
    /// messages (see [`TurnOutput::transcript_span`]).
    pub(crate) fn after_span(self, last_span: Option<usize>) -> Self {
        ModelTurn { last_span, ..self }
    }

    /// Read what fits the model's window from the store (everything before
    /// the turn is committed, but the unstored messages), then run the agent
    /// loop.
    pub(crate) async fn run(self, link: Link) -> TurnOutput {
        let read = transcript::read(
            self.store.as_ref(),
            &self.task_id,
            self.budget,
            self.unstored,
            self.last_span,
        );
        match read.await {
            Ok(read) => {
                let output = AgentTurn {
                    transcript: read.transcript,
                    ..self.turn
                }
                .run(link)
                .await;
                TurnOutput {
                    transcript_span: Some(u32::try_from(read.span).unwrap_or(u32::MAX)),
                    ..output
                }
            }
            Err(error) => TurnOutput::untraced(TurnEnd::Failed(format!(
                "the conversation could not be read from the store: {error}"
            ))),
        }
    }
}

/// How many tokens of conversation fit a request to `entry`: its window,
/// less what the answer, the system prompt and the tools' schemas take.
fn transcript_budget(entry: &ModelEntry, system: Option<&str>, tools: &Toolbox) -> u64 {
    let tokens = |bytes: usize| (bytes as u64).div_ceil(4);
    let schemas: usize = tools
        .specs()
        .iter()
        .map(|spec| spec.name.len() + spec.description.len() + spec.input_schema.to_string().len())
        .sum();
    entry
        .context_window
        .saturating_sub(u64::from(entry.max_output_tokens.unwrap_or(0)))
        .saturating_sub(tokens(system.map_or(0, str::len)))
        .saturating_sub(tokens(schemas))
}

/// Everything one model turn needs, taken from the task when it starts.
pub(crate) struct AgentTurn {
    pub(crate) registry: Arc<CommandRegistry>,
    /// The conversation's model; `None` when its name is not configured.
    pub(crate) model: Option<ModelEntry>,
    pub(crate) model_name: String,
    pub(crate) effort: Effort,
    pub(crate) system: Option<String>,
    pub(crate) max_tool_rounds: u32,
    pub(crate) task: TaskView,
    /// The participant's message the turn answers, if any.
    pub(crate) message_id: Option<String>,
    pub(crate) transcript: Transcript,
    pub(crate) tools: Toolbox,
    /// The participants' decision on the calls that awaited approval, when
    /// the turn resumes after one.
    pub(crate) approval: Option<ApprovalDecision>,
}

impl AgentTurn {
    /// Run the turn to its end.
    pub(crate) async fn run(self, link: Link) -> TurnOutput {
        let trace = Trace::default();
        let mut usage = None;
        let end = self.drive(&link, &trace, &mut usage).await;
        TurnOutput {
            end,
            trace: trace.finish(),
            usage,
            transcript_span: None,
        }
    }

    async fn drive(mut self, link: &Link, trace: &Trace, usage: &mut Option<Usage>) -> TurnEnd {
        let Some(entry) = self.model.clone() else {
            return TurnEnd::Failed(format!(
                "the model `{}` is not configured on this server",
                self.model_name
            ));
        };
        // Taken, not copied: from here on the turn only needs the
        // transcript's unanswered calls.
        let mut messages = std::mem::take(&mut self.transcript.messages);
        match self.settle_unanswered(link, trace).await {
            Ok(outputs) => messages.extend(outputs.into_iter().map(ChatMessage::Tool)),
            Err(Ended(end)) => return end,
        }
        for _round in 0..=self.max_tool_rounds {
            let request = self.request(&entry, messages.clone());
            let response = match self.ask(&entry, request, link, trace).await {
                Ok(response) => response,
                Err(reason) => return TurnEnd::Failed(reason),
            };
            if let Some(reported) = response.usage {
                usage.get_or_insert_with(Usage::default).add(reported);
            }
            if response.tool_calls.is_empty() {
                return match response.stop {
                    StopReason::Refused if response.text.is_empty() => TurnEnd::Failed(format!(
                        "the model `{}` refused to answer",
                        self.model_name
                    )),
                    _ => TurnEnd::Reply(Answer::from(response)),
                };
            }
            let calls = response.tool_calls.clone();
            let record = Record::ToolCalls {
                text: response.text.clone(),
                calls: calls.clone(),
            };
            if !link.record(record).await {
                return TurnEnd::Failed("the model's tool calls could not be recorded".into());
            }
            messages.push(ChatMessage::Assistant {
                content: response.text,
                tool_calls: calls.clone(),
                reasoning: response.reasoning,
            });
            match self.run_calls(calls, link, trace, Approved::No).await {
                Ok(outputs) => messages.extend(outputs.into_iter().map(ChatMessage::Tool)),
                Err(Ended(end)) => return end,
            }
        }
        TurnEnd::Stopped(format!(
            "The agent stopped after {} tool rounds without a final answer. Send a message to let \
             it go on.",
            self.max_tool_rounds
        ))
    }

    /// The calls of the last round that have no result yet: approved ones
    /// run now, denied ones get the denial, and any other was cut off by a
    /// restart and is never run again.
    async fn settle_unanswered(
        &self,
        link: &Link,
        trace: &Trace,
    ) -> Result<Vec<ToolOutput>, Ended> {
        let unanswered = self.transcript.unanswered.clone();
        if unanswered.is_empty() {
            return Ok(Vec::new());
        }
        let outputs = match &self.approval {
            Some(decision) if decision.approved => {
                return self.run_calls(unanswered, link, trace, Approved::Yes).await;
            }
            Some(decision) => unanswered
                .iter()
                .map(|call| denied(call, decision))
                .collect::<Vec<_>>(),
            None => unanswered.iter().map(interrupted).collect(),
        };
        for output in &outputs {
            if !link.record(Record::ToolResult(output.clone())).await {
                return Err(Ended(TurnEnd::Failed(
                    "the turn's tool results could not be recorded".into(),
                )));
            }
        }
        Ok(outputs)
    }

    /// The request for the next step: system prompt, conversation, tools.
    fn request(&self, entry: &ModelEntry, messages: Vec<ChatMessage>) -> ModelRequest {
        ModelRequest {
            model: self.model_name.clone(),
            effort: self.effort,
            system: self.system.clone(),
            messages,
            tools: self.tools.specs(),
            max_output_tokens: entry.max_output_tokens,
        }
    }

    /// One model request through `llm.invoked`.
    async fn ask(
        &self,
        entry: &ModelEntry,
        request: ModelRequest,
        link: &Link,
        trace: &Trace,
    ) -> Result<ModelResponse, String> {
        let context = LlmContext {
            task: self.task.clone(),
            message_id: self.message_id.clone(),
            request,
            response: None,
        };
        let context = self.phase(Phase::Pre, context, trace).await?;
        let mut context = self.phase(Phase::In, context, trace).await?;
        if context.response.is_none() {
            let response = stream(entry, context.request.clone(), link, trace).await?;
            context.response = Some(response);
        }
        let context = self.phase(Phase::Post, context, trace).await?;
        context
            .response
            .ok_or_else(|| "an llm.invoked.post executor removed the response".to_owned())
    }

    async fn phase(
        &self,
        phase: Phase,
        context: LlmContext,
        trace: &Trace,
    ) -> Result<LlmContext, String> {
        let point = HookPoint::new(Operation::LlmInvoked, phase);
        let call = HookCall::new(point, Some(&self.task.id)).traced(trace);
        self.registry
            .hooks()
            .run_typed(call, None, context)
            .await
            .map_err(|error| hook_failure(point, error))
    }

    /// Run one response's calls: those that need a participant's approval
    /// (unless `approved`) wait for it, `ask_participant` comes after the
    /// others, which run concurrently; each result is journaled as it
    /// arrives. Returns the results in call order, or how the turn ends
    /// (awaiting approval, or with a question).
    async fn run_calls(
        &self,
        calls: Vec<ToolCall>,
        link: &Link,
        trace: &Trace,
        approved: Approved,
    ) -> Result<Vec<ToolOutput>, Ended> {
        let (waiting, calls): (Vec<ToolCall>, Vec<ToolCall>) = calls
            .into_iter()
            .partition(|call| approved == Approved::No && self.tools.needs_approval(&call.name));
        let run = ToolRun {
            registry: &self.registry,
            tools: &self.tools,
            task: &self.task,
            trace,
            link,
        };
        let mut outputs: Vec<Option<ToolOutput>> = vec![None; calls.len()];
        let mut question = None;
        let mut running: FuturesUnordered<_> = calls
            .iter()
            .cloned()
            .enumerate()
            .map(|(index, call)| {
                let run = &run;
                async move { (index, run.call(call).await) }
            })
            .collect();
        while let Some((index, called)) = running.next().await {
            let output = match called {
                Called::Output(output) => output,
                Called::Ask { question: asked } if question.is_none() => {
                    question = Some(asked);
                    continue;
                }
                Called::Ask { .. } => ToolOutput {
                    call_id: calls[index].id.clone(),
                    name: calls[index].name.clone(),
                    content: "only one question can be asked at a time".into(),
                    is_error: true,
                },
            };
            if !link.record(Record::ToolResult(output.clone())).await {
                return Err(Ended(TurnEnd::Failed(
                    "a tool's result could not be recorded".into(),
                )));
            }
            outputs[index] = Some(output);
        }
        if !waiting.is_empty() {
            // Their results come with the approval; a question waits too.
            return Err(Ended(TurnEnd::AwaitingApproval(waiting)));
        }
        if let Some(question) = question {
            return Err(Ended(TurnEnd::Asked(question)));
        }
        Ok(outputs.into_iter().flatten().collect())
    }
}

/// The turn ends before the model answers.
struct Ended(TurnEnd);

/// Whether the calls being run were approved by a participant already.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Approved {
    Yes,
    No,
}

/// The model's answer to `request`, its text streamed to `link` as it
/// comes; the time spent waiting for the model (not forwarding what it
/// sent) goes to `trace`.
async fn stream(
    entry: &ModelEntry,
    request: ModelRequest,
    link: &Link,
    trace: &Trace,
) -> Result<ModelResponse, String> {
    let model = request.model.clone();
    let asked = Instant::now();
    let mut events = entry.model.stream(request);
    trace.record_model(asked.elapsed());
    let mut response = ModelResponse {
        text: String::new(),
        tool_calls: Vec::new(),
        usage: None,
        stop: StopReason::EndTurn,
        reasoning: None,
        artifacts: Vec::new(),
        disposition: None,
    };
    loop {
        let asked = Instant::now();
        let next = events.next().await;
        trace.record_model(asked.elapsed());
        let Some(event) = next else { break };
        match event.map_err(|error| format!("the model `{model}` failed: {error}"))? {
            ModelEvent::TextDelta(delta) => {
                response.text.push_str(&delta);
                link.delta(delta).await;
            }
            ModelEvent::ToolCall(call) => response.tool_calls.push(call),
            ModelEvent::Usage(usage) => response.usage = Some(usage),
            ModelEvent::Progress(text) => link.progress(text).await,
            ModelEvent::Reasoning(reasoning) => response.reasoning = Some(reasoning),
            ModelEvent::Stop(stop) => {
                response.stop = stop;
                return Ok(response);
            }
        }
    }
    Err(format!(
        "the model `{model}` stopped answering before it finished"
    ))
}

/// What the model reads for a call a restart cut off.
fn interrupted(call: &ToolCall) -> ToolOutput {
    ToolOutput {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content: "This call was interrupted by a restart of the harness before it finished, and \
                  it was not run again, because its effects may not be safe to repeat. Check \
                  whether it took effect before calling it again."
            .into(),
        is_error: true,
    }
}
