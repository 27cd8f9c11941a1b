//! The lifecycle as decisions: what accepting a message, the end of a turn,
//! a completion verdict, an interruption or a cancellation does to a task,
//! given how it stands.
//!
//! Nothing here does I/O, waits or keeps state of its own. A decision reads
//! the task through [`Task`], changes it only through [`Task::apply`], and
//! returns what the engine runs next ([`Next`]). The embedded engine's actor
//! implements [`Task`] over its record and journal; committing, publishing,
//! answering waiters and running jobs stay its own. A second engine
//! (`docs/temporal-engine.md` §8) implements it over a workflow's copy of
//! the record, so both engines run one lifecycle:
//!
//! * a conversation's turn parks it in `INPUT_REQUIRED` with a sub-state;
//! * a delegated task completes with its reply (fails with its failure);
//! * a one-shot task keeps its reply as an artifact and concludes: once no
//!   sub-task is open, the `task.complete` decision runs, and completes it or
//!   parks it;
//! * an answer may reject the task in any lifecycle, or add artifacts.

use serde_json::Value;

use super::classify::Kind;
use super::completion::Verdict;
use super::effects;
use super::env::TaskSettings;
use super::job::{Answer, Record, TurnEnd, TurnOutput};
use super::state::{
    ApprovalDecision, Change, Lifecycle, PENDING_APPROVAL_KEY, REPLY_MESSAGE_KEY, StatusChange,
    SubState, TaskRecord, Turn, TurnWork, new_id,
};
use super::tools::denied;
use super::transcript::{self, HarnessMark};
use super::{access, participants, subtasks};
use crate::a2a::error::A2aError;
use crate::a2a::types::{Message, TaskState};
use crate::commands::{CommandFailure, Effect, Outcome};
use crate::domain::{ArtifactPiece, Disposition, Participant, Role, SubtaskView, ToolCall};
use crate::hooks::TraceRecord;

/// The task a decision reads and changes.
pub(crate) trait Task {
    /// The task as the changes so far left it.
    fn record(&self) -> &TaskRecord;
    /// Change the task: the one way a decision does.
    fn apply(&mut self, change: Change);
    /// Delegate `goal` to a new sub-task, listed on this task (a
    /// [`Change::Subtask`]) by the time this returns.
    fn spawn_subtask(&mut self, goal: &str) -> Result<SubtaskView, String>;
    /// An id for the next message the agent writes: a fresh one by default;
    /// a workflow's engine makes the same ones each time it replays.
    fn message_id(&mut self) -> String {
        new_id()
    }
}

/// A message from the agent in `task`.
fn agent_message(task: &mut impl Task, text: String, data: Option<Value>) -> Message {
    let id = task.message_id();
    task.record().agent_message_with_id(id, text, data)
}

/// What the engine does once a decision's changes are applied.
#[must_use]
#[derive(Debug, PartialEq)]
pub(crate) enum Next {
    /// Nothing yet: the turn goes on (a concluding task waits for its
    /// sub-tasks, each report brings it back to [`conclusion`]).
    Continue,
    /// The turn is over: whoever waits for it is answered once the changes
    /// are committed.
    TurnEnded,
    /// Run the `task.complete` decision on behalf of this participant.
    Completion(Participant),
}

/// How a turn ended: what runs next, and the agent's message a blocking
/// sender gets instead of the task (an answer with the `message`
/// disposition).
#[derive(Debug)]
pub(crate) struct Finished {
    pub(crate) next: Next,
    pub(crate) direct_reply: Option<Message>,
}

/// How a turn's last message is written.
#[derive(Default)]
pub(crate) struct Ending {
    /// Structured data beside the text.
    data: Option<Value>,
    /// What the message is to the model, if it is not the model's reply.
    mark: Option<HarnessMark>,
    /// What ran in the turn.
    trace: Option<TurnTrace>,
}

impl Ending {
    /// `ending` for a message of the harness's own.
    pub(crate) fn notice(ending: Ending) -> Ending {
        Ending {
            mark: Some(HarnessMark::Notice),
            ..ending
        }
    }
}

/// `metadata.trace` of a turn's last message.
#[derive(serde::Serialize)]
struct TurnTrace {
    #[serde(flatten)]
    trace: TraceRecord,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<crate::domain::Usage>,
}

/// Where the agent message that ends a turn records what ran.
const TRACE_KEY: &str = "trace";

/// Record a participant's message on the task, marked with what it is to
/// the model; what it decides about tool calls awaiting approval, if it
/// decides anything.
///
/// A participant who writes on instead of approving denies the calls: the
/// denials go before the message, so the model reads them in order.
pub(crate) fn receive(
    task: &mut impl Task,
    mut message: Message,
    kind: &Kind,
    sender: &Participant,
) -> Option<ApprovalDecision> {
    match kind {
        Kind::Ordinary => {}
        // The model never sees commands or envelopes (`transcript`).
        Kind::Command => transcript::mark(&mut message, HarnessMark::Command),
        Kind::Complete | Kind::Decide { .. } | Kind::Participants(_) => {
            transcript::mark(&mut message, HarnessMark::Envelope);
        }
    }
    if matches!(kind, Kind::Ordinary) && !task.record().pending_approval.is_empty() {
        let decision = ApprovalDecision {
            approved: false,
            by: sender.clone(),
            implicit: true,
        };
        for call in task.record().pending_approval.clone() {
            record(task, Record::ToolResult(denied(&call, &decision)));
        }
        task.apply(Change::ApprovalDecided);
    }
    task.apply(Change::Received(message));
    match kind {
        Kind::Decide { approve } => Some(ApprovalDecision {
            approved: *approve,
            by: sender.clone(),
            implicit: false,
        }),
        _ => None,
    }
}

/// Start the turn a received message asks for: the model's (with the
/// approval decision it made), a command's, or the completion decision. A
/// participants event starts none (the engine records and confirms it).
pub(crate) fn start_turn(
    task: &mut impl Task,
    kind: &Kind,
    sender: &Participant,
    approval: Option<ApprovalDecision>,
    text: &str,
) {
    task.apply(Change::Status(StatusChange::working()));
    if approval.is_some() {
        task.apply(Change::ApprovalDecided);
    }
    let work = match kind {
        Kind::Ordinary | Kind::Decide { .. } => TurnWork::Model {
            sender: Some(sender.clone()),
            approval,
        },
        Kind::Command => TurnWork::Command {
            text: text.to_owned(),
            sender: sender.clone(),
        },
        Kind::Complete => TurnWork::Completion {
            requested_by: sender.clone(),
        },
        Kind::Participants(_) => return,
    };
    task.apply(Change::TurnStarted(Turn::first(work)));
}

/// A delegated task's one turn, on its goal: it starts as the task exists.
pub(crate) fn start_goal(task: &mut impl Task, goal: Message) {
    task.apply(Change::Received(goal));
    task.apply(Change::Status(StatusChange::working()));
    task.apply(Change::TurnStarted(Turn::first(TurnWork::Model {
        sender: None,
        approval: None,
    })));
}

/// Journal tool activity of the running turn: it joins the history (the
/// next model request reads it back) and streams as a status update.
pub(crate) fn record(task: &mut impl Task, record: Record) {
    let (parts, metadata) = match &record {
        Record::ToolCalls { text, calls } => transcript::tool_calls_parts(text, calls),
        Record::ToolResult(output) => transcript::tool_result_parts(output),
    };
    let mut message = agent_message(task, String::new(), None);
    message.parts = parts;
    message.metadata = metadata;
    task.apply(Change::Status(StatusChange::recorded(message)));
}

/// End the running turn with what it produced, as the task's lifecycle says.
pub(crate) fn finish(
    task: &mut impl Task,
    output: TurnOutput,
    settings: &TaskSettings,
) -> Finished {
    let TurnOutput {
        end, trace, usage, ..
    } = output;
    if let Some(usage) = usage {
        task.apply(Change::Usage(usage));
    }
    let ending = Ending {
        trace: Some(TurnTrace { trace, usage }),
        ..Ending::default()
    };
    let end = match end {
        TurnEnd::Reply(answer) => match check_answer(task.record(), &answer, settings) {
            Err(reason) => TurnEnd::Failed(reason),
            Ok(()) if answer.disposition == Some(Disposition::Reject) => {
                keep_artifacts(task, answer.artifacts, None);
                let next = conclude(task, TaskState::Rejected, answer.text, ending);
                return Finished {
                    next,
                    direct_reply: None,
                };
            }
            Ok(()) => TurnEnd::Reply(answer),
        },
        other => other,
    };
    let direct =
        matches!(&end, TurnEnd::Reply(answer) if answer.disposition == Some(Disposition::Message));
    let next = by_lifecycle(task, end, ending, settings);
    Finished {
        next,
        // The reply just joined the history (parked, or kept by a
        // concluding task).
        direct_reply: direct
            .then(|| task.record().history.last().cloned())
            .flatten(),
    }
}

/// End the turn as the task's lifecycle says: a conversation parks, a
/// delegated task completes, a one-shot task concludes.
fn by_lifecycle(
    task: &mut impl Task,
    end: TurnEnd,
    ending: Ending,
    settings: &TaskSettings,
) -> Next {
    let lifecycle = &task.record().lifecycle;
    let one_shot = *lifecycle == Lifecycle::Task;
    let delegated = matches!(lifecycle, Lifecycle::Delegated { .. });
    if one_shot
        && !matches!(
            end,
            TurnEnd::Completion(_) | TurnEnd::Asked(_) | TurnEnd::AwaitingApproval(_)
        )
    {
        return finish_one_shot(task, end, ending, settings);
    }
    match end {
        TurnEnd::Reply(answer) if delegated => {
            keep_artifacts(task, answer.artifacts, None);
            conclude(task, TaskState::Completed, answer.text, ending)
        }
        TurnEnd::Failed(reason) | TurnEnd::Stopped(reason) if delegated => {
            conclude(task, TaskState::Failed, reason, Ending::notice(ending))
        }
        TurnEnd::Reply(answer) => {
            keep_artifacts(task, answer.artifacts, None);
            end_turn(task, answer.text, SubState::AwaitingNextMessage, ending)
        }
        TurnEnd::Asked(question) => {
            let ending = Ending {
                mark: Some(HarnessMark::Question),
                ..ending
            };
            end_turn(task, question, SubState::AwaitingAnswer, ending)
        }
        TurnEnd::Failed(reason) => {
            let text = format!("This turn failed: {reason}");
            end_turn(
                task,
                text,
                SubState::AwaitingNextMessage,
                Ending::notice(ending),
            )
        }
        TurnEnd::Stopped(text) => end_turn(
            task,
            text,
            SubState::AwaitingNextMessage,
            Ending::notice(ending),
        ),
        TurnEnd::AwaitingApproval(calls) => await_approval(task, calls, ending),
        TurnEnd::Command(result) => finish_command(task, result, ending, settings),
        TurnEnd::Completion(verdict) => finish_completion(task, verdict, ending),
    }
}

/// Whether an answer's artifacts may be kept: well formed, within the
/// limits, and not reusing an artifact id of the task.
fn check_answer(
    record: &TaskRecord,
    answer: &Answer,
    settings: &TaskSettings,
) -> Result<(), String> {
    let limit = settings.limits.max_reply_bytes;
    crate::domain::check_pieces(&answer.artifacts, limit)
        .map_err(|problem| format!("the answer's artifacts cannot be kept: {problem}"))?;
    let reused = answer.artifacts.iter().find(|piece| {
        let id = &piece.artifact.artifact_id;
        record.artifacts.iter().any(|kept| &kept.artifact_id == id)
    });
    match reused {
        Some(piece) => Err(format!(
            "the answer's artifacts cannot be kept: the task already has an artifact `{}`",
            piece.artifact.artifact_id
        )),
        None => Ok(()),
    }
}

/// Keep an answer's artifacts (checked by [`check_answer`]), each marked
/// with the reply it came with, when there is one.
fn keep_artifacts(task: &mut impl Task, pieces: Vec<ArtifactPiece>, reply_id: Option<&str>) {
    for ArtifactPiece {
        mut artifact,
        append,
        last_chunk,
    } in pieces
    {
        if let Some(id) = reply_id {
            artifact
                .metadata
                .insert(REPLY_MESSAGE_KEY.into(), Value::String(id.to_owned()));
        }
        task.apply(Change::ArtifactChunk {
            artifact,
            append,
            last_chunk,
        });
    }
}

/// The model called tools that need a participant's approval: the turn
/// ends `awaiting-approval` with the calls in the task's metadata and the
/// message's data; approve or deny resumes the loop.
fn await_approval(task: &mut impl Task, calls: Vec<ToolCall>, ending: Ending) -> Next {
    let listed: Vec<String> = calls
        .iter()
        .map(|call| format!("`{}` with {}", call.name, call.arguments))
        .collect();
    let text = format!(
        "The agent wants to run {}. Approve or deny: send a message whose one data part is \
         {{\"kind\": \"control\", \"action\": \"approve\"}} (or \"deny\").",
        listed.join(" and ")
    );
    let data = serde_json::json!({ PENDING_APPROVAL_KEY: calls });
    task.apply(Change::ApprovalRequested(calls));
    let ending = Ending {
        data: Some(data),
        ..Ending::notice(ending)
    };
    end_turn(task, text, SubState::AwaitingApproval, ending)
}

/// The command's reply (or why it failed, or why its effects were refused)
/// is the agent's message; the outcome never reaches the model. Its effects
/// and the reply are committed together.
fn finish_command(
    task: &mut impl Task,
    result: Result<Outcome, CommandFailure>,
    ending: Ending,
    settings: &TaskSettings,
) -> Next {
    let (text, data) = command_reply(task, result, settings);
    let sub_state = waiting_sub_state(task.record());
    let ending = Ending {
        data,
        mark: Some(HarnessMark::Command),
        ..ending
    };
    end_turn(task, text, sub_state, ending)
}

/// A command's reply (or why it failed, or why its effects were refused),
/// its effects applied if they pass the checks.
fn command_reply(
    task: &mut impl Task,
    result: Result<Outcome, CommandFailure>,
    settings: &TaskSettings,
) -> (String, Option<Value>) {
    let record = task.record();
    let command = match &record.turn {
        Some(Turn {
            work: TurnWork::Command { text, .. },
            ..
        }) => text
            .split_whitespace()
            .next()
            .unwrap_or("/")
            .trim_start_matches('/')
            .to_owned(),
        _ => String::new(),
    };
    let open = record.open_subtasks().count();
    match result {
        Err(failure) => (failure.to_string(), None),
        Ok(outcome) => match effects::check(&command, &outcome, settings, open) {
            Err(refusal) => (refusal, None),
            Ok(()) => {
                let mut text = outcome.reply.text;
                for effect in outcome.effects {
                    // The reply says so when an effect could not be applied.
                    if let Err(problem) = apply_effect(task, effect) {
                        text.push_str(&format!("\n\n(Not done: {problem}.)"));
                    }
                }
                (text, outcome.reply.data)
            }
        },
    }
}

fn apply_effect(task: &mut impl Task, effect: Effect) -> Result<(), String> {
    match effect {
        Effect::SetModel(model) => task.apply(Change::Model(model)),
        Effect::SetEffort(effort) => task.apply(Change::Effort(effort)),
        // Checked with the outcome (`effects::check`): it fits; the engine
        // may still be unable to start it.
        Effect::SpawnSubtask(goal) => {
            task.spawn_subtask(&goal)
                .map_err(|reason| format!("the sub-task `{goal}` did not start: {reason}"))?;
        }
    }
    Ok(())
}

/// The end of a one-shot task's turn: a failure fails it; a reply (the
/// model's or a command's) joins the history, becomes its reply artifact
/// (or the answer's own artifacts stand in for it), and the task concludes.
/// (A question the model asks parks it like a conversation: the answer is
/// the next turn.)
fn finish_one_shot(
    task: &mut impl Task,
    end: TurnEnd,
    ending: Ending,
    settings: &TaskSettings,
) -> Next {
    let mut pieces = Vec::new();
    let (text, ending) = match end {
        TurnEnd::Reply(answer) => {
            pieces = answer.artifacts;
            (answer.text, ending)
        }
        TurnEnd::Failed(reason) | TurnEnd::Stopped(reason) => {
            return conclude(task, TaskState::Failed, reason, Ending::notice(ending));
        }
        TurnEnd::Command(result) => {
            let (text, data) = command_reply(task, result, settings);
            let ending = Ending {
                data,
                mark: Some(HarnessMark::Command),
                ..ending
            };
            (text, ending)
        }
        TurnEnd::Asked(question) => {
            let ending = Ending {
                mark: Some(HarnessMark::Question),
                ..ending
            };
            return end_turn(task, question, SubState::AwaitingAnswer, ending);
        }
        TurnEnd::Completion(verdict) => return finish_completion(task, verdict, ending),
        // A one-shot task waits for approval as a conversation does.
        TurnEnd::AwaitingApproval(calls) => return await_approval(task, calls, ending),
    };
    let data = ending.data.clone();
    let reply = ending_message(task, text, ending);
    let reply_id = reply.message_id.clone();
    let artifact = task.record().reply_artifact(&reply, data.as_ref());
    task.apply(Change::Status(StatusChange::recorded(reply)));
    // An answer's own artifacts stand in for the reply artifact.
    if pieces.is_empty() {
        task.apply(Change::Artifact(artifact));
    } else {
        keep_artifacts(task, pieces, Some(&reply_id));
    }
    let requested_by = reporter(task.record());
    task.apply(Change::TurnStarted(Turn::first(TurnWork::Conclude {
        requested_by: requested_by.clone(),
    })));
    conclusion(task, requested_by)
}

/// Conclude a one-shot task: while sub-tasks are open it says so and waits
/// (each report comes back here), then the `task.complete` decision runs.
/// The turn has not ended for its waiters until the decision is in.
pub(crate) fn conclusion(task: &mut impl Task, requested_by: Participant) -> Next {
    let open: Vec<String> = task
        .record()
        .open_subtasks()
        .map(|subtask| format!("{} ({})", subtask.goal, subtask.id))
        .collect();
    if open.is_empty() {
        return Next::Completion(requested_by);
    }
    let waiting = format!(
        "Replied; completing once {} open sub-task(s) have finished: {}",
        open.len(),
        open.join(", ")
    );
    let message = agent_message(task, waiting, None);
    task.apply(Change::Status(StatusChange::progress(message)));
    Next::Continue
}

/// Whether a model turn's `spawn_subtask` call may delegate `goal` now.
pub(crate) fn may_delegate(
    record: &TaskRecord,
    settings: &TaskSettings,
    goal: &str,
) -> Result<(), String> {
    if goal.trim().is_empty() {
        return Err("spawn_subtask needs a goal".into());
    }
    let limit = settings.limits.max_open_subtasks;
    if record.open_subtasks().count() >= limit {
        return Err(format!(
            "{limit} sub-tasks are open, the most a task may have at once (`[limits] \
             max_open_subtasks`); wait for one to finish"
        ));
    }
    Ok(())
}

/// After a sub-task's report, between turns: a concluding one-shot task
/// whose last open sub-task has finished goes on with its conclusion.
pub(crate) fn resumed_conclusion(task: &mut impl Task) -> Option<Next> {
    let record = task.record();
    if record.open_subtasks().next().is_some() {
        return None;
    }
    let requested_by = record.concluding_for()?.clone();
    Some(conclusion(task, requested_by))
}

/// Record how a sub-task stands, as its report says. Reports can arrive
/// twice (a report and a catch-up after a restart), so an unchanged state
/// and an existing result artifact are left alone.
pub(crate) fn record_subtask(task: &mut impl Task, subtask: SubtaskView, result: Option<&str>) {
    if !task.record().subtasks.contains(&subtask) {
        task.apply(Change::Subtask(subtask.clone()));
    }
    let Some(result) = result else {
        return;
    };
    let record = task.record();
    let artifact_id = format!("subtask-{}", subtask.id);
    let recorded = record
        .artifacts
        .iter()
        .any(|artifact| artifact.artifact_id == artifact_id);
    // A finished task takes no more artifacts; its list still shows how
    // the sub-task ended.
    if !recorded && !record.is_terminal() {
        let artifact = subtasks::result_artifact(&subtask, result);
        task.apply(Change::Artifact(artifact));
    }
}

/// The participant a one-shot task completes on behalf of: its reporter (a
/// participant's task always has one: its first sender).
fn reporter(record: &TaskRecord) -> Participant {
    let participants = &record.participants;
    participants
        .iter()
        .find(|participant| participant.role == Role::Reporter)
        .or_else(|| participants.first())
        .cloned()
        .unwrap_or_else(|| Participant {
            id: "unknown".to_owned(),
            role: Role::Reporter,
        })
}

fn finish_completion(task: &mut impl Task, verdict: Verdict, ending: Ending) -> Next {
    // A one-shot task's own conclusion: completed, its status message is its
    // reply (already in the history).
    let record = task.record();
    if record.is_concluding()
        && verdict.allowed
        && let Some(reply) = record.latest_reply()
    {
        task.apply(Change::Status(StatusChange {
            in_history: false,
            ..StatusChange::finished(TaskState::Completed, reply)
        }));
        return Next::TurnEnded;
    }
    let ending = Ending {
        data: Some(verdict.data()),
        ..Ending::notice(ending)
    };
    let text = verdict.message();
    if verdict.allowed {
        conclude(task, TaskState::Completed, text, ending)
    } else {
        let sub_state = waiting_sub_state(task.record());
        end_turn(task, text, sub_state, ending)
    }
}

/// What a conversation waits for after a turn that did not answer the
/// model's question (a command, a refused completion): still the answer,
/// if one is owed.
pub(crate) fn waiting_sub_state(record: &TaskRecord) -> SubState {
    if !record.pending_approval.is_empty() {
        SubState::AwaitingApproval
    } else if record.awaits_answer {
        SubState::AwaitingAnswer
    } else {
        SubState::AwaitingNextMessage
    }
}

/// The authoritative check of a message against the task as it is now,
/// made by whichever engine runs the task when the message's turn comes:
/// the sender's role (`access::admit_message`), a change of participants,
/// a decision with nothing to decide, the history's bound. Returns the
/// sender's role.
pub(crate) fn admit(
    record: &TaskRecord,
    settings: &TaskSettings,
    sender: &str,
    context_id: Option<&str>,
    kind: &Kind,
) -> Result<Role, A2aError> {
    let role = access::admit_message(record, &settings.admins, sender, context_id, kind)?;
    if let Kind::Participants(grants) = kind {
        participants::check_grants(&record.participants, grants)?;
    }
    if matches!(kind, Kind::Decide { .. }) && record.pending_approval.is_empty() {
        return Err(A2aError::invalid_params(format!(
            "no tool call of task {} awaits approval; approve and deny answer a turn that ended \
             awaiting-approval",
            record.id
        )));
    }
    let limit = settings.limits.max_history_messages;
    if record.history_len >= limit {
        return Err(A2aError::UnsupportedOperation(format!(
            "task {} holds {limit} messages, the most one task may hold (`[limits] \
             max_history_messages`); complete it and continue in a new task with the same \
             contextId",
            record.id
        )));
    }
    Ok(role)
}

/// A restart interrupted a turn that is not repeated: a delegated task
/// fails, any other parks with `why`.
pub(crate) fn interrupted(task: &mut impl Task, why: String) -> Next {
    if matches!(task.record().lifecycle, Lifecycle::Delegated { .. }) {
        conclude(
            task,
            TaskState::Failed,
            why,
            Ending::notice(Ending::default()),
        )
    } else {
        park(task, why, SubState::AwaitingNextMessage)
    }
}

/// End the turn in `INPUT_REQUIRED` with the agent's `text`.
fn end_turn(task: &mut impl Task, text: String, sub_state: SubState, ending: Ending) -> Next {
    let reply = ending_message(task, text, ending);
    task.apply(Change::Status(StatusChange::parked(reply, sub_state)));
    Next::TurnEnded
}

/// End the turn in `INPUT_REQUIRED` with a notice from the harness.
pub(crate) fn park(task: &mut impl Task, text: String, sub_state: SubState) -> Next {
    end_turn(task, text, sub_state, Ending::notice(Ending::default()))
}

/// End the task in terminal `state`, explained by the agent's `text`.
pub(crate) fn conclude(
    task: &mut impl Task,
    state: TaskState,
    text: String,
    ending: Ending,
) -> Next {
    let message = ending_message(task, text, ending);
    task.apply(Change::Status(StatusChange::finished(state, message)));
    Next::TurnEnded
}

/// The agent message that ends a turn: its text and data, what it is to
/// the model, and the turn's trace.
fn ending_message(task: &mut impl Task, text: String, ending: Ending) -> Message {
    let mut message = agent_message(task, text, ending.data);
    if let Some(mark) = ending.mark {
        transcript::mark(&mut message, mark);
    }
    if let Some(turn) = ending.trace
        && let Ok(trace) = serde_json::to_value(turn)
    {
        message.metadata.insert(TRACE_KEY.into(), trace);
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::types::{Artifact, Part, Role as MessageRole, Timestamp};
    use crate::task::subtasks;

    /// A task a decision runs on by itself: no actor, no store, no clock.
    struct Alone {
        record: TaskRecord,
    }

    impl Task for Alone {
        fn record(&self) -> &TaskRecord {
            &self.record
        }

        fn apply(&mut self, change: Change) {
            let _ = self
                .record
                .apply(change, Timestamp::from_unix_millis(1_700_000_000_000));
        }

        fn spawn_subtask(&mut self, goal: &str) -> Result<SubtaskView, String> {
            let subtask = subtasks::child_of(&self.record, goal)
                .as_subtask()
                .ok_or("a sub-task is a delegated task")?;
            self.apply(Change::Subtask(subtask.clone()));
            Ok(subtask)
        }
    }

    fn alice() -> Participant {
        Participant {
            id: "alice".into(),
            role: Role::Reporter,
        }
    }

    /// A task of `lifecycle` whose turn on alice's first message (or on its
    /// goal) runs `work`.
    fn running(lifecycle: Lifecycle, work: TurnWork) -> Alone {
        let record = TaskRecord::new(
            "t1".into(),
            "c1".into(),
            lifecycle,
            vec![alice()],
            "offline-echo".into(),
            "medium".into(),
        );
        let mut task = Alone { record };
        let message = Message::new(MessageRole::User, "m1", vec![Part::text("hello")]);
        task.apply(Change::Received(message));
        task.apply(Change::Status(StatusChange::working()));
        task.apply(Change::TurnStarted(Turn::first(work)));
        task
    }

    fn model_turn(lifecycle: Lifecycle) -> Alone {
        let sender = Some(alice());
        running(
            lifecycle,
            TurnWork::Model {
                sender,
                approval: None,
            },
        )
    }

    fn delegated() -> Lifecycle {
        Lifecycle::Delegated {
            parent_id: "parent".into(),
            goal: "look it up".into(),
        }
    }

    fn reply(
        text: &str,
        artifacts: Vec<ArtifactPiece>,
        disposition: Option<Disposition>,
    ) -> TurnOutput {
        TurnOutput::untraced(TurnEnd::Reply(Answer {
            text: text.into(),
            artifacts,
            disposition,
        }))
    }

    fn artifact(id: &str) -> ArtifactPiece {
        ArtifactPiece {
            artifact: Artifact {
                artifact_id: id.into(),
                parts: vec![Part::text("42")],
                ..Artifact::default()
            },
            append: false,
            last_chunk: false,
        }
    }

    fn status_text(task: &Alone) -> String {
        task.record.status_text()
    }

    #[test]
    fn a_conversations_reply_parks_it_awaiting_the_next_message() {
        let mut task = model_turn(Lifecycle::Conversation);
        let settings = TaskSettings::default();
        let finished = finish(&mut task, reply("hello back", Vec::new(), None), &settings);
        assert_eq!(finished.next, Next::TurnEnded);
        assert!(finished.direct_reply.is_none());
        assert_eq!(task.record.state(), TaskState::InputRequired);
        assert_eq!(task.record.sub_state, Some(SubState::AwaitingNextMessage));
        assert_eq!(status_text(&task), "hello back");
        assert_eq!(task.record.history_len, 2, "the reply joined the history");
    }

    #[test]
    fn a_delegated_tasks_reply_completes_it_and_its_failure_fails_it() {
        let settings = TaskSettings::default();
        let mut done = model_turn(delegated());
        let finished = finish(
            &mut done,
            reply("found it", vec![artifact("a1")], None),
            &settings,
        );
        assert_eq!(finished.next, Next::TurnEnded);
        assert_eq!(done.record.state(), TaskState::Completed);
        assert_eq!(
            done.record.artifacts.len(),
            1,
            "the answer's artifact is kept"
        );

        let mut failed = model_turn(delegated());
        let output = TurnOutput::untraced(TurnEnd::Failed("the model is down".into()));
        assert_eq!(finish(&mut failed, output, &settings).next, Next::TurnEnded);
        assert_eq!(failed.record.state(), TaskState::Failed);
        assert_eq!(status_text(&failed), "the model is down");
    }

    #[test]
    fn a_failed_conversation_turn_parks_it_and_says_why() {
        let mut task = model_turn(Lifecycle::Conversation);
        let output = TurnOutput::untraced(TurnEnd::Failed("the model is down".into()));
        let next = finish(&mut task, output, &TaskSettings::default()).next;
        assert_eq!(next, Next::TurnEnded);
        assert_eq!(task.record.state(), TaskState::InputRequired);
        assert_eq!(status_text(&task), "This turn failed: the model is down");
    }

    #[test]
    fn a_one_shot_reply_becomes_its_artifact_and_it_concludes_once_no_sub_task_is_open() {
        let settings = TaskSettings::default();
        let mut task = model_turn(Lifecycle::Task);
        let open = task.spawn_subtask("look it up").expect("a sub-task");
        let next = finish(&mut task, reply("the answer", Vec::new(), None), &settings).next;
        assert_eq!(next, Next::Continue, "it waits for its open sub-task");
        assert!(task.record.is_concluding());
        assert_eq!(task.record.state(), TaskState::Working);
        assert!(
            status_text(&task).contains(&open.id),
            "{}",
            status_text(&task)
        );
        assert_eq!(task.record.artifacts.len(), 1, "the reply is its artifact");

        // The sub-task's report: none is open any more.
        task.apply(Change::Subtask(SubtaskView {
            state: TaskState::Completed.as_str().to_owned(),
            ..open
        }));
        assert_eq!(conclusion(&mut task, alice()), Next::Completion(alice()));

        let verdict = Verdict {
            allowed: true,
            reason: None,
            requested_by: alice(),
        };
        let output = TurnOutput::untraced(TurnEnd::Completion(verdict));
        assert_eq!(finish(&mut task, output, &settings).next, Next::TurnEnded);
        assert_eq!(task.record.state(), TaskState::Completed);
        assert_eq!(
            status_text(&task),
            "the answer",
            "its status message is its reply"
        );
        assert_eq!(
            task.record.history_len, 2,
            "the reply is in the history once"
        );
    }

    #[test]
    fn a_refused_completion_keeps_a_conversation_waiting_for_what_it_waited_for() {
        let mut task = running(
            Lifecycle::Conversation,
            TurnWork::Completion {
                requested_by: alice(),
            },
        );
        task.record.awaits_answer = true;
        let verdict = Verdict {
            allowed: false,
            reason: Some("sub-tasks are open".into()),
            requested_by: alice(),
        };
        let output = TurnOutput::untraced(TurnEnd::Completion(verdict));
        assert_eq!(
            finish(&mut task, output, &TaskSettings::default()).next,
            Next::TurnEnded
        );
        assert_eq!(task.record.state(), TaskState::InputRequired);
        assert_eq!(task.record.sub_state, Some(SubState::AwaitingAnswer));
        assert_eq!(
            status_text(&task),
            "The task was not completed: sub-tasks are open"
        );
    }

    #[test]
    fn an_answer_may_reject_a_conversation_and_keep_its_artifacts() {
        let mut task = model_turn(Lifecycle::Conversation);
        let output = reply(
            "not doing that",
            vec![artifact("why")],
            Some(Disposition::Reject),
        );
        let finished = finish(&mut task, output, &TaskSettings::default());
        assert_eq!(finished.next, Next::TurnEnded);
        assert_eq!(task.record.state(), TaskState::Rejected);
        assert_eq!(task.record.artifacts.len(), 1);
    }

    #[test]
    fn an_answer_reusing_an_artifact_id_fails_the_turn_and_keeps_nothing() {
        let settings = TaskSettings::default();
        let mut task = model_turn(Lifecycle::Conversation);
        let _ = finish(
            &mut task,
            reply("one", vec![artifact("a1")], None),
            &settings,
        );
        task.apply(Change::Status(StatusChange::working()));
        let again = reply("two", vec![artifact("a1")], None);
        assert_eq!(finish(&mut task, again, &settings).next, Next::TurnEnded);
        assert_eq!(task.record.artifacts.len(), 1);
        assert!(
            status_text(&task).contains("already has an artifact `a1`"),
            "{}",
            status_text(&task)
        );
    }

    #[test]
    fn a_message_only_answer_goes_to_a_blocking_sender_as_the_reply() {
        let mut task = model_turn(Lifecycle::Conversation);
        let output = reply("just this", Vec::new(), Some(Disposition::Message));
        let finished = finish(&mut task, output, &TaskSettings::default());
        let direct = finished.direct_reply.expect("the reply alone");
        assert_eq!(crate::task::state::message_text(&direct), "just this");
        assert_eq!(task.record.state(), TaskState::InputRequired);
    }

    #[test]
    fn a_commands_effects_apply_with_its_reply_which_the_model_never_reads() {
        let mut task = running(
            Lifecycle::Conversation,
            TurnWork::Command {
                text: "/effort high".into(),
                sender: alice(),
            },
        );
        let outcome = Outcome {
            effects: vec![Effect::SetEffort("high".into())],
            ..Outcome::text("Effort set to high.")
        };
        let output = TurnOutput::untraced(TurnEnd::Command(Ok(outcome)));
        assert_eq!(
            finish(&mut task, output, &TaskSettings::default()).next,
            Next::TurnEnded
        );
        assert_eq!(task.record.effort, "high");
        assert_eq!(status_text(&task), "Effort set to high.");
        let reply = task.record.history.last().expect("the reply");
        assert_eq!(
            reply.metadata.get(transcript::HARNESS_KEY),
            Some(&serde_json::json!("command")),
            "the transcript leaves a command's reply out"
        );
    }

    #[test]
    fn a_command_asking_for_too_many_effects_applies_none() {
        let mut task = running(
            Lifecycle::Conversation,
            TurnWork::Command {
                text: "/effort high".into(),
                sender: alice(),
            },
        );
        let settings = TaskSettings::default();
        let outcome = Outcome {
            effects: vec![Effect::SetEffort("high".into()); settings.limits.max_effects + 1],
            ..Outcome::text("Effort set to high.")
        };
        let output = TurnOutput::untraced(TurnEnd::Command(Ok(outcome)));
        let _ = finish(&mut task, output, &settings);
        assert_eq!(task.record.effort, "medium");
        assert!(
            status_text(&task).contains("none applied"),
            "{}",
            status_text(&task)
        );
    }

    #[test]
    fn an_interrupted_turn_fails_a_delegated_task_and_parks_any_other() {
        let mut sub_task = model_turn(delegated());
        assert_eq!(
            interrupted(&mut sub_task, "restarted".into()),
            Next::TurnEnded
        );
        assert_eq!(sub_task.record.state(), TaskState::Failed);

        let mut conversation = model_turn(Lifecycle::Conversation);
        assert_eq!(
            interrupted(&mut conversation, "restarted".into()),
            Next::TurnEnded
        );
        assert_eq!(conversation.record.state(), TaskState::InputRequired);
        assert_eq!(
            conversation.record.sub_state,
            Some(SubState::AwaitingNextMessage)
        );
    }

    fn awaiting_approval() -> Alone {
        let mut task = model_turn(Lifecycle::Conversation);
        let call = ToolCall {
            id: "call-1".into(),
            name: "deploy".into(),
            arguments: serde_json::json!({"to": "prod"}),
        };
        let output = TurnOutput::untraced(TurnEnd::AwaitingApproval(vec![call]));
        let next = finish(&mut task, output, &TaskSettings::default()).next;
        assert_eq!(next, Next::TurnEnded);
        assert_eq!(task.record.sub_state, Some(SubState::AwaitingApproval));
        task
    }

    #[test]
    fn writing_on_instead_of_approving_denies_the_calls_before_the_message() {
        let mut task = awaiting_approval();
        let message = Message::new(MessageRole::User, "m2", vec![Part::text("never mind")]);
        let approval = receive(&mut task, message, &Kind::Ordinary, &alice());
        assert!(
            approval.is_none(),
            "writing on decides nothing for the turn"
        );
        assert!(task.record.pending_approval.is_empty());
        let [.., denial, received] = task.record.history.as_slice() else {
            panic!("the denial and the message: {:?}", task.record.history);
        };
        assert_eq!(received.message_id, "m2");
        let denial = serde_json::to_string(denial).unwrap_or_default();
        assert!(
            denial.contains("sent a new message instead of approving"),
            "{denial}"
        );

        start_turn(&mut task, &Kind::Ordinary, &alice(), approval, "never mind");
        assert_eq!(task.record.state(), TaskState::Working);
        assert!(matches!(
            &task.record.turn,
            Some(Turn {
                work: TurnWork::Model {
                    approval: None,
                    sender: Some(_)
                },
                attempt: 1
            })
        ));
    }

    #[test]
    fn an_approval_is_an_envelope_the_model_never_reads_and_resumes_the_model_turn() {
        let mut task = awaiting_approval();
        let control = Message::new(
            MessageRole::User,
            "m2",
            vec![Part::data(
                serde_json::json!({"kind": "control", "action": "approve"}),
            )],
        );
        let class = Kind::Decide { approve: true };
        let approval = receive(&mut task, control, &class, &alice());
        let received = task.record.history.last().expect("the control");
        assert_eq!(
            received.metadata.get(transcript::HARNESS_KEY),
            Some(&serde_json::json!("envelope"))
        );
        start_turn(&mut task, &class, &alice(), approval, "");
        assert!(task.record.pending_approval.is_empty(), "decided");
        let Some(Turn {
            work:
                TurnWork::Model {
                    approval: Some(decision),
                    ..
                },
            ..
        }) = &task.record.turn
        else {
            panic!("a model turn carrying the decision: {:?}", task.record.turn);
        };
        assert!(decision.approved && !decision.implicit);
    }

    #[test]
    fn a_participants_event_starts_no_turn() {
        let mut task = model_turn(Lifecycle::Conversation);
        let _ = finish(
            &mut task,
            reply("hi", Vec::new(), None),
            &TaskSettings::default(),
        );
        let class = Kind::Participants(vec![alice()]);
        let event = Message::new(MessageRole::User, "m2", vec![Part::text("{}")]);
        let approval = receive(&mut task, event, &class, &alice());
        start_turn(&mut task, &class, &alice(), approval, "");
        assert!(task.record.turn.is_none(), "{:?}", task.record.turn);
    }

    /// An engine that cannot start sub-tasks.
    struct NoSubtasks(Alone);

    impl Task for NoSubtasks {
        fn record(&self) -> &TaskRecord {
            &self.0.record
        }

        fn apply(&mut self, change: Change) {
            self.0.apply(change);
        }

        fn spawn_subtask(&mut self, _goal: &str) -> Result<SubtaskView, String> {
            Err("not on this engine".into())
        }
    }

    #[test]
    fn a_command_reply_says_when_a_sub_task_it_asked_for_did_not_start() {
        let mut task = NoSubtasks(running(
            Lifecycle::Conversation,
            TurnWork::Command {
                text: "/sub-task look it up".into(),
                sender: alice(),
            },
        ));
        let outcome = Outcome {
            effects: vec![Effect::SpawnSubtask("look it up".into())],
            ..Outcome::text("Started a sub-task.")
        };
        let output = TurnOutput::untraced(TurnEnd::Command(Ok(outcome)));
        let _ = finish(&mut task, output, &TaskSettings::default());
        let text = task.0.record.status_text();
        assert!(
            text.contains("the sub-task `look it up` did not start: not on this engine"),
            "{text}"
        );
        assert!(task.0.record.subtasks.is_empty());
    }
}
