//! The lifecycle suite: every test here runs against the embedded engine
//! and, in a build with the `temporal` feature, against Temporal (a real dev
//! server, the worker in this process), from the same code. A behaviour
//! only one engine has is tested beside that engine instead.

use std::ops::Deref;

use crate::store::{MemoryStore, TaskStore};

use super::agent::{kinds, shape, spawn_calls};
use super::*;
use crate::a2a::types::TaskPushNotificationConfig;

/// The engine a suite test runs on.
#[derive(Clone, Copy, Debug)]
pub(super) enum Engine {
    Embedded,
    #[cfg(feature = "temporal")]
    Temporal,
}

/// A service on one engine, and what that engine needs kept alive.
pub(super) enum Served {
    Embedded {
        service: TaskService,
        store: Arc<dyn TaskStore>,
    },
    #[cfg(feature = "temporal")]
    Temporal(Box<super::temporal::OnTemporal>),
}

impl Engine {
    /// A service on the built-in plugin and the offline model.
    async fn serve(self) -> Served {
        self.serve_with(CommandRegistry::builder()).await
    }

    /// A service whose stop cuts the turns it runs at once (on Temporal,
    /// its worker's shutdown grace is zero).
    async fn serve_cutting_turns_at_stop(self) -> Served {
        match self {
            Engine::Embedded => self.serve().await,
            #[cfg(feature = "temporal")]
            Engine::Temporal => Served::Temporal(Box::new(
                super::temporal::on_temporal_with(CommandRegistry::builder(), |options| {
                    options.shutdown_grace = Duration::ZERO;
                })
                .await,
            )),
        }
    }

    /// A service on the built-in plugin plus whatever `builder` holds.
    async fn serve_with(self, builder: RegistryBuilder) -> Served {
        match self {
            Engine::Embedded => {
                let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
                let service = service_on(builder, Arc::clone(&store));
                Served::Embedded { service, store }
            }
            #[cfg(feature = "temporal")]
            Engine::Temporal => Served::Temporal(Box::new(
                super::temporal::on_temporal_with(builder, |_| {}).await,
            )),
        }
    }
}

impl Served {
    /// What a restart leaves: the service (and its worker) stopped, a new
    /// one on the same tasks, recovered. The new one has the built-in
    /// plugin only.
    async fn restart(&mut self) {
        match self {
            Served::Embedded { service, store } => {
                *service = service_on(CommandRegistry::builder(), Arc::clone(store));
            }
            #[cfg(feature = "temporal")]
            Served::Temporal(temporal) => temporal.restart(),
        }
        self.recover().await.expect("recovers");
    }
}

impl Served {
    /// Check that task `task_id`'s turn, cut by a restart, runs again: its
    /// second attempt is in the log, or on Temporal running on the new
    /// worker.
    async fn the_turn_runs_again(&self, task_id: &str) {
        match self {
            Served::Embedded { store, .. } => {
                poll_for(self, task_id, |t| {
                    t.status.state == TaskState::InputRequired
                })
                .await;
                let log = store.log(task_id.to_owned()).await.expect("the log");
                let attempts: Vec<&str> = log
                    .iter()
                    .filter(|entry| entry.kind == "turn_started")
                    .map(|entry| entry.document.as_str())
                    .collect();
                assert_eq!(attempts.len(), 3, "{attempts:?}");
                assert!(attempts[2].contains("\"attempt\":2"), "{attempts:?}");
            }
            #[cfg(feature = "temporal")]
            Served::Temporal(temporal) => {
                within(20, async {
                    loop {
                        let run = temporal
                            .engine
                            .describe_run(task_id)
                            .await
                            .expect("described");
                        let again = run.running.iter().any(|activity| {
                            activity.kind.ends_with("model_turn") && activity.attempt >= 2
                        });
                        if again {
                            return;
                        }
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                })
                .await;
            }
        }
    }
}

impl Deref for Served {
    type Target = TaskService;

    fn deref(&self) -> &TaskService {
        match self {
            Served::Embedded { service, .. } => service,
            #[cfg(feature = "temporal")]
            Served::Temporal(temporal) => &temporal.service,
        }
    }
}

/// Send `request` on a task of its own (the caller blocks until its turn
/// ends); await the handle for the answer.
fn in_background(
    service: &TaskService,
    caller: &str,
    request: SendMessageRequest,
) -> tokio::task::JoinHandle<Result<Task, A2aError>> {
    let service = service.clone();
    let caller = caller.to_owned();
    tokio::spawn(async move { send(&service, &caller, request).await })
}

/// For each named `async fn(Engine)`, a test on each engine:
/// `suite::embedded::NAME` and `suite::temporal::NAME`.
macro_rules! on_both_engines {
    ($($name:ident),* $(,)?) => {
        mod embedded {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Engine::Embedded).await;
                }
            )*
        }

        #[cfg(feature = "temporal")]
        mod temporal {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Engine::Temporal).await;
                }
            )*
        }
    };
}

on_both_engines!(
    a_conversation_parks_after_every_turn,
    a_question_from_the_agent_parks_awaiting_an_answer,
    messages_during_a_turn_wait_their_turn,
    context_ids_must_match_and_controls_need_a_task,
    model_switches_only_within_the_allowlist,
    effort_switches_between_the_levels,
    status_describes_the_task_and_never_reaches_the_model,
    watchers_read_but_every_action_is_refused_and_changes_nothing,
    only_the_reporter_or_an_admin_changes_participants,
    strangers_cannot_tell_a_task_exists,
    a_resent_message_is_answered_and_never_applied_twice,
    completion_cuts_a_long_turn,
    cancel_cuts_the_running_turn_and_ends_the_task,
    a_finished_task_refuses_messages_and_subscriptions,
    a_streamed_turn_starts_with_the_task_and_ends_with_the_turn,
    a_streamed_follow_up_ends_parked_awaiting_the_next_message,
    a_watcher_subscribes,
    every_subscriber_sees_the_same_events_until_the_next_turn_ends,
    return_immediately_answers_while_the_turn_runs,
    a_stream_of_a_refused_message_is_the_refusal,
    a_streamed_one_shot_task_answers_with_the_message_alone,
    a_streamed_one_shot_task_opens_as_soon_as_the_turn_shows_progress,
    a_resend_during_its_turn_waits_for_that_turn,
    a_model_turn_cut_by_a_restart_runs_again_and_answers_once,
    a_sub_task_runs_on_its_own_and_reports_to_its_parent,
    completion_is_refused_while_a_sub_task_is_open,
    a_task_complete_hook_can_allow_completion_over_open_sub_tasks,
    cancel_task_cancels_open_sub_tasks,
    a_one_shot_task_waits_for_its_sub_tasks_then_completes,
    parallel_tool_calls_run_at_once_and_their_results_go_back_in_call_order,
    a_spawned_subtask_holds_completion_until_it_finishes,
    a_spawn_subtask_call_without_a_goal_is_refused_and_delegates_nothing,
    a_webhook_hears_the_task_events_from_its_creation_on,
);

// --- Conversations ---------------------------------------------------------------------------

async fn a_conversation_parks_after_every_turn(engine: Engine) {
    let service = engine.serve().await;
    let first = start(&service, "alice", "hello").await;
    assert_parked(&first, "awaiting-next-message");
    assert!(
        status_text(&first).starts_with("You said: hello\n"),
        "{first:#?}"
    );
    let id = first.id.clone();

    let second = send(&service, "alice", say(Some(&id), "second"))
        .await
        .expect("sent");
    assert_parked(&second, "awaiting-next-message");

    let third = send(&service, "alice", say(Some(&id), "third"))
        .await
        .expect("sent");
    assert_parked(&third, "awaiting-next-message");
    assert_eq!(third.id, id);
    assert_eq!(third.context_id, first.context_id);
    assert_eq!(third.history.len(), 6);
    for (index, message) in messages(&third).iter().enumerate() {
        let expected = if index % 2 == 0 {
            MessageRole::User
        } else {
            MessageRole::Agent
        };
        assert_eq!(message.role, expected);
        assert!(!message.message_id.is_empty());
        assert_eq!(message.task_id.as_deref(), Some(id.as_str()));
        assert_eq!(
            message.context_id.as_deref(),
            Some(first.context_id.as_str())
        );
    }
    assert!(
        messages(&third)[5].parts[0]
            .as_text()
            .is_some_and(|t| t.starts_with("You said: third"))
    );
}

async fn a_question_from_the_agent_parks_awaiting_an_answer(engine: Engine) {
    let service = engine.serve().await;
    let asked = start(&service, "alice", "please ask me something").await;
    assert_parked(&asked, "awaiting-answer");
    assert!(status_text(&asked).starts_with("What should I do next?"));

    let answered = send(&service, "alice", say(Some(&asked.id), "Is it late?"))
        .await
        .expect("sent");
    assert_parked(&answered, "awaiting-next-message");
    assert!(status_text(&answered).starts_with("You asked: Is it late?\nMy answer: "));
}

async fn messages_during_a_turn_wait_their_turn(engine: Engine) {
    let service = engine.serve().await;
    let task = start(&service, "alice", "hi").await;
    let first = in_background(&service, "alice", say(Some(&task.id), "work for 1 seconds"));
    let working = poll_for(&service, &task.id, |t| t.status.state == TaskState::Working).await;
    assert_eq!(
        sub_state(&working),
        None,
        "leaving INPUT_REQUIRED drops the sub-state"
    );

    let queued = within(10, send(&service, "alice", say(Some(&task.id), "next")))
        .await
        .expect("sent");
    let texts: Vec<String> = messages(&queued)
        .iter()
        .map(|m| m.parts[0].as_text().unwrap_or("").to_owned())
        .collect();
    assert_eq!(texts[2], "work for 1 seconds");
    assert!(texts[3].starts_with("Worked for 1 seconds."), "{texts:?}");
    assert_eq!(texts[4], "next");
    assert!(texts[5].starts_with("You said: next"), "{texts:?}");
    within(10, first).await.expect("joined").expect("answered");
}

async fn context_ids_must_match_and_controls_need_a_task(engine: Engine) {
    let service = engine.serve().await;
    let task = start(&service, "alice", "hi").await;
    let mut wrong = say(Some(&task.id), "hello");
    wrong.message.context_id = Some("another-context".into());
    assert!(matches!(
        send(&service, "alice", wrong).await,
        Err(A2aError::InvalidParams { .. })
    ));

    let mut new_task = control("x", "complete");
    new_task.message.task_id = None;
    assert!(matches!(
        send(&service, "alice", new_task).await,
        Err(A2aError::InvalidParams { .. })
    ));

    let Err(A2aError::InvalidParams { message, .. }) =
        send(&service, "alice", control(&task.id, "pause")).await
    else {
        panic!("an unknown control is invalid");
    };
    assert!(message.contains("complete"), "{message}");

    // A client-chosen contextId is kept for a new task.
    let mut in_context = say(None, "hello");
    in_context.message.context_id = Some(task.context_id.clone());
    let sibling = send(&service, "alice", in_context).await.expect("started");
    assert_eq!(sibling.context_id, task.context_id);
    assert_ne!(sibling.id, task.id);
}

async fn model_switches_only_within_the_allowlist(engine: Engine) {
    let service = engine.serve().await;
    let task = start(&service, "alice", "hi").await;
    let shown = send(&service, "alice", say(Some(&task.id), "/model"))
        .await
        .expect("sent");
    assert!(
        status_text(&shown).starts_with("Model: offline-echo."),
        "{}",
        status_text(&shown)
    );
    let data = shown
        .status
        .message
        .as_ref()
        .and_then(|m| m.parts.get(1))
        .and_then(Part::as_data);
    assert_eq!(
        data.map(|d| d["model"].clone()),
        Some(json!("offline-echo"))
    );

    let switched = send(&service, "alice", say(Some(&task.id), "/model fast-1"))
        .await
        .expect("sent");
    assert_parked(&switched, "awaiting-next-message");
    assert_eq!(status_text(&switched), "Switching model to fast-1.");
    let refused = send(&service, "alice", say(Some(&task.id), "/model gpt-9"))
        .await
        .expect("sent");
    let refusal = status_text(&refused);
    assert!(
        refusal.contains("`gpt-9`") && refusal.contains("offline-echo, fast-1"),
        "{refusal}"
    );

    let answer = send(&service, "alice", say(Some(&task.id), "hello"))
        .await
        .expect("sent");
    assert!(
        status_text(&answer).ends_with("(model fast-1, effort medium)"),
        "{}",
        status_text(&answer)
    );
}

async fn effort_switches_between_the_levels(engine: Engine) {
    let service = engine.serve().await;
    let task = start(&service, "alice", "hi").await;
    let set = send(&service, "alice", say(Some(&task.id), "/effort high"))
        .await
        .expect("sent");
    assert_eq!(status_text(&set), "Switching effort to high.");
    let usage = send(&service, "alice", say(Some(&task.id), "/effort extreme"))
        .await
        .expect("sent");
    assert_parked(&usage, "awaiting-next-message");
    assert!(
        status_text(&usage).contains("low, medium, high"),
        "{}",
        status_text(&usage)
    );
    let answer = send(&service, "alice", say(Some(&task.id), "hello"))
        .await
        .expect("sent");
    assert!(status_text(&answer).ends_with("(model offline-echo, effort high)"));
}

async fn status_describes_the_task_and_never_reaches_the_model(engine: Engine) {
    let service = engine.serve().await;
    let task = start(&service, "alice", "/status").await;
    assert_parked(&task, "awaiting-next-message");
    let text = status_text(&task);
    assert!(text.contains("Participants: alice (reporter)"), "{text}");
    assert!(text.contains("Open sub-tasks: 0"), "{text}");
    assert!(!text.contains("You said"), "{text}");

    // A command sees the task as the message found it: parked.
    let again = send(&service, "alice", say(Some(&task.id), "/status"))
        .await
        .expect("sent");
    let text = status_text(&again);
    assert!(
        text.contains("State: TASK_STATE_INPUT_REQUIRED (awaiting-next-message)"),
        "{text}"
    );
    assert!(text.contains("Turns: 1"), "{text}");
}

async fn watchers_read_but_every_action_is_refused_and_changes_nothing(engine: Engine) {
    let service = engine.serve().await;
    let task = start(&service, "alice", "hi").await;
    let granted = send(&service, "alice", grant(&task.id, "bob", "watcher"))
        .await
        .expect("granted");
    assert_parked(&granted, "awaiting-next-message");
    assert_eq!(
        status_text(&granted),
        "Participants updated: bob (watcher)."
    );

    let before = get(&service, "bob", &task.id)
        .await
        .expect("a watcher reads");
    assert!(is_role_refused(
        send(&service, "bob", say(Some(&task.id), "hello")).await
    ));
    assert!(is_role_refused(
        send(&service, "bob", say(Some(&task.id), "/status")).await
    ));
    assert!(is_role_refused(
        send(&service, "bob", control(&task.id, "complete")).await
    ));
    assert!(is_role_refused(cancel(&service, "bob", &task.id).await));
    assert_eq!(get(&service, "bob", &task.id).await.expect("reads"), before);

    // Refused before anything is interrupted: a running turn carries on.
    let working = in_background(&service, "alice", say(Some(&task.id), "work for 1 seconds"));
    poll_for(&service, &task.id, |t| t.status.state == TaskState::Working).await;
    assert!(is_role_refused(
        send(&service, "bob", control(&task.id, "complete")).await
    ));
    assert!(is_role_refused(cancel(&service, "bob", &task.id).await));
    let finished = within(10, working)
        .await
        .expect("joined")
        .expect("answered");
    assert!(status_text(&finished).starts_with("Worked for 1 seconds."));
}

async fn only_the_reporter_or_an_admin_changes_participants(engine: Engine) {
    let service = engine.serve().await;
    let task = start(&service, "alice", "hi").await;
    send(&service, "alice", grant(&task.id, "carol", "assignee"))
        .await
        .expect("granted");
    let by_assignee = send(&service, "carol", grant(&task.id, "dave", "watcher")).await;
    assert!(
        matches!(by_assignee, Err(A2aError::RoleRefused { ref role, .. }) if role == "assignee")
    );
    // An assignee converses.
    let reply = send(&service, "carol", say(Some(&task.id), "I'm here"))
        .await
        .expect("sent");
    assert!(status_text(&reply).starts_with("You said: I'm here"));

    for (id, role) in [("dave", "admin"), ("alice", "watcher")] {
        let refused = send(&service, "alice", grant(&task.id, id, role)).await;
        assert!(
            matches!(refused, Err(A2aError::InvalidParams { .. })),
            "{id} {role}: {refused:?}"
        );
    }
    // Admins act on every task.
    send(&service, "root", grant(&task.id, "dave", "watcher"))
        .await
        .expect("an admin grants");
    get(&service, "dave", &task.id)
        .await
        .expect("the new watcher reads");
}

async fn strangers_cannot_tell_a_task_exists(engine: Engine) {
    let service = engine.serve().await;
    let task = start(&service, "alice", "hi").await;
    let not_found =
        |result: Result<(), A2aError>| matches!(result, Err(A2aError::TaskNotFound { .. }));
    assert!(not_found(
        get(&service, "mallory", &task.id).await.map(drop)
    ));
    assert!(not_found(
        send(&service, "mallory", say(Some(&task.id), "hi"))
            .await
            .map(drop)
    ));
    assert!(not_found(
        send(&service, "mallory", control(&task.id, "complete"))
            .await
            .map(drop)
    ));
    assert!(not_found(
        cancel(&service, "mallory", &task.id).await.map(drop)
    ));
    assert!(not_found(
        subscribe(&service, "mallory", &task.id).await.map(drop)
    ));
    assert!(not_found(
        get(&service, "alice", "no-such-task").await.map(drop)
    ));
    assert!(not_found(
        send(&service, "alice", say(Some("no-such-task"), "hi"))
            .await
            .map(drop)
    ));
    let listed = service
        .list_tasks(&who("mallory"), ListTasksRequest::default())
        .await
        .expect("lists");
    assert_eq!(listed.total_size, 0);
}

async fn completion_cuts_a_long_turn(engine: Engine) {
    let service = engine.serve().await;
    let task = start(&service, "alice", "hi").await;
    let blocked = in_background(
        &service,
        "alice",
        say(Some(&task.id), "work for 30 seconds"),
    );
    // Wait for the turn to be under way.
    poll_for(&service, &task.id, |t| t.status.state == TaskState::Working).await;

    let started = Instant::now();
    let completed = send(&service, "alice", control(&task.id, "complete"))
        .await
        .expect("answered");
    assert_eq!(completed.status.state, TaskState::Completed);
    let cut = within(5, blocked).await.expect("joined").expect("answered");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(
        cut.status.state,
        TaskState::Completed,
        "the cut turn's sender learns how it ended"
    );
    assert!(
        !history_texts(&cut).iter().any(|t| t.starts_with("Worked")),
        "the cut turn's output is dropped"
    );
}

async fn a_finished_task_refuses_messages_and_subscriptions(engine: Engine) {
    let service = engine.serve().await;
    let task = start(&service, "alice", "hi").await;
    let completed = send(&service, "alice", control(&task.id, "complete"))
        .await
        .expect("answered");
    assert_eq!(completed.status.state, TaskState::Completed);
    for request in [
        say(Some(&task.id), "hello"),
        say(Some(&task.id), "/status"),
        control(&task.id, "complete"),
    ] {
        assert!(matches!(
            send(&service, "alice", request).await,
            Err(A2aError::UnsupportedOperation(_))
        ));
    }
    assert!(matches!(
        subscribe(&service, "alice", &task.id).await,
        Err(A2aError::UnsupportedOperation(_))
    ));
    assert!(matches!(
        cancel(&service, "alice", &task.id).await,
        Err(A2aError::TaskNotCancelable { .. })
    ));
    assert_eq!(
        get(&service, "alice", &task.id)
            .await
            .expect("reads")
            .status
            .state,
        TaskState::Completed
    );
}

async fn a_resent_message_is_answered_and_never_applied_twice(engine: Engine) {
    let service = engine.serve().await;
    let task = start(&service, "alice", "hello").await;
    let message = user_message(Some(&task.id), vec![Part::text("once")]);
    let first = within(60, send(&service, "alice", request(message.clone())))
        .await
        .expect("accepted");
    let again = within(60, send(&service, "alice", request(message)))
        .await
        .expect("answered");
    assert_eq!(first.history.len(), 4);
    assert_eq!(again.history.len(), 4, "not applied again: {again:#?}");
    assert_eq!(again.history, first.history);
}

async fn cancel_cuts_the_running_turn_and_ends_the_task(engine: Engine) {
    let service = engine.serve().await;
    let task = start(&service, "alice", "hi").await;
    let blocked = in_background(
        &service,
        "alice",
        say(Some(&task.id), "work for 30 seconds"),
    );
    poll_for(&service, &task.id, |t| t.status.state == TaskState::Working).await;

    let started = Instant::now();
    let canceled = within(20, cancel(&service, "alice", &task.id))
        .await
        .expect("canceled");
    assert_eq!(canceled.status.state, TaskState::Canceled, "{canceled:#?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    // The cut turn's sender is answered; its output never lands.
    let _answer = within(10, blocked).await.expect("joined");
    let stored = get(&service, "alice", &task.id).await.expect("visible");
    assert_eq!(stored.status.state, TaskState::Canceled);
    assert!(
        !history_texts(&stored)
            .iter()
            .any(|t| t.starts_with("Worked")),
        "the cut turn's output is dropped: {stored:#?}"
    );
    assert!(matches!(
        cancel(&service, "alice", &task.id).await,
        Err(A2aError::TaskNotCancelable {
            state: TaskState::Canceled,
            ..
        })
    ));
}

// --- Sub-tasks -----------------------------------------------------------------------------

async fn a_sub_task_runs_on_its_own_and_reports_to_its_parent(engine: Engine) {
    let service = engine.serve().await;
    let parent = start(&service, "alice", "/sub-task summarize the notes").await;
    assert_parked(&parent, "awaiting-next-message");
    assert_eq!(
        status_text(&parent),
        "Starting a sub-task: summarize the notes"
    );
    let listed = subtasks(&parent);
    assert_eq!(listed.len(), 1, "{parent:#?}");
    assert_eq!(listed[0]["goal"], "summarize the notes");
    let child_id = listed[0]["id"].as_str().expect("an id").to_owned();

    let parent = poll_for(&service, &parent.id, |task| {
        subtasks(task)[0]["state"] == "TASK_STATE_COMPLETED" && !task.artifacts.is_empty()
    })
    .await;
    let artifact = &parent.artifacts[0];
    assert_eq!(
        artifact.name.as_deref(),
        Some(format!("subtask-{child_id}").as_str())
    );
    let result = artifact.parts[0].as_text().expect("text");
    assert!(
        result.starts_with("You said: summarize the notes"),
        "{result}"
    );
    assert_parked(&parent, "awaiting-next-message");

    let child = get(&service, "alice", &child_id)
        .await
        .expect("participants are inherited");
    assert_eq!(child.status.state, TaskState::Completed);
    assert_eq!(child.context_id, parent.context_id);
    assert_eq!(child.metadata["parent_task_id"], json!(parent.id));
    assert_eq!(sub_state(&child), None);
    assert!(matches!(
        send(&service, "alice", say(Some(&child_id), "hi")).await,
        Err(A2aError::UnsupportedOperation(_))
    ));
}

async fn completion_is_refused_while_a_sub_task_is_open(engine: Engine) {
    let service = engine.serve().await;
    let parent = start(&service, "alice", "/sub-task work for 2 seconds").await;
    let child_id = subtasks(&parent)[0]["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    let status = send(&service, "alice", say(Some(&parent.id), "/status"))
        .await
        .expect("sent");
    assert!(status_text(&status).contains(&format!("- {child_id}: work for 2 seconds")));

    let refused = send(&service, "alice", control(&parent.id, "complete"))
        .await
        .expect("answered");
    assert_parked(&refused, "awaiting-next-message");
    let reason = status_text(&refused);
    assert!(
        reason.starts_with("The task was not completed: 1 sub-task is still open"),
        "{reason}"
    );
    assert!(
        reason.contains(&child_id) && reason.contains("work for 2 seconds"),
        "{reason}"
    );

    poll_for(&service, &parent.id, |t| {
        subtasks(t)[0]["state"] == "TASK_STATE_COMPLETED"
    })
    .await;
    let completed = send(&service, "alice", control(&parent.id, "complete"))
        .await
        .expect("answered");
    assert_eq!(completed.status.state, TaskState::Completed);
    assert_eq!(sub_state(&completed), None);
    assert_eq!(
        status_text(&completed),
        "Task completed at the request of alice (reporter)."
    );
}

async fn a_task_complete_hook_can_allow_completion_over_open_sub_tasks(engine: Engine) {
    let allow = native_hook(
        HookPoint::new(Operation::TaskComplete, Phase::In),
        500,
        |context| {
            let mut next = context.clone();
            next["decision"] = json!({ "allow": true });
            Decision::Replace(next)
        },
    );
    let service = engine.serve_with(allow).await;
    let parent = start(&service, "alice", "/sub-task work for 2 seconds").await;
    let completed = send(&service, "alice", control(&parent.id, "complete"))
        .await
        .expect("answered");
    assert_eq!(
        completed.status.state,
        TaskState::Completed,
        "{completed:#?}"
    );
    // The hook allowed completion over the sub-task, which stays open. On a
    // loaded machine it may not have started yet, so "open" (not WORKING in
    // particular) is what holds.
    let state: TaskState = subtasks(&completed)[0]["state"]
        .as_str()
        .expect("a state name")
        .parse()
        .expect("a known state");
    assert!(
        !state.is_terminal(),
        "the sub-task is still open: {state:?}"
    );
}

async fn cancel_task_cancels_open_sub_tasks(engine: Engine) {
    let service = engine.serve().await;
    let parent = start(&service, "alice", "/sub-task work for 30 seconds").await;
    let child_id = subtasks(&parent)[0]["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    let started = Instant::now();
    let canceled = within(40, cancel(&service, "alice", &parent.id))
        .await
        .expect("canceled");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(canceled.status.state, TaskState::Canceled);
    assert_eq!(subtasks(&canceled)[0]["state"], "TASK_STATE_CANCELED");
    let child = get(&service, "alice", &child_id).await.expect("visible");
    assert_eq!(child.status.state, TaskState::Canceled);
    assert_eq!(status_text(&child), "Task canceled with its parent task.");

    assert!(matches!(
        cancel(&service, "alice", &parent.id).await,
        Err(A2aError::TaskNotCancelable {
            state: TaskState::Canceled,
            ..
        })
    ));
}

async fn a_one_shot_task_waits_for_its_sub_tasks_then_completes(engine: Engine) {
    let service = engine.serve().await;
    let request = one_shot("/sub-task work for 1 seconds");
    let task = within(30, send(&service, "alice", request))
        .await
        .expect("answered");
    // Its sender hears once the task completed, after its sub-task.
    assert_eq!(task.status.state, TaskState::Completed, "{task:#?}");
    assert_eq!(subtasks(&task)[0]["state"], "TASK_STATE_COMPLETED");
    let artifacts: Vec<&str> = task
        .artifacts
        .iter()
        .map(|artifact| artifact.artifact_id.as_str())
        .collect();
    assert!(artifacts.contains(&"reply-1"), "{artifacts:?}");
    assert!(
        artifacts.iter().any(|id| id.starts_with("subtask-")),
        "the sub-task's result: {artifacts:?}"
    );
    let stored = get(&service, "alice", &task.id).await.expect("visible");
    assert_eq!(stored.status.state, TaskState::Completed);
}

async fn parallel_tool_calls_run_at_once_and_their_results_go_back_in_call_order(engine: Engine) {
    let service = engine.serve().await;
    // The first call's sub-task works for a second, the second's answers at
    // once: if they ran one after the other, the second could not finish
    // first.
    let text = spawn_calls(&["work for 1 seconds", "hello"]);
    let task = within(30, start(&service, "alice", &text)).await;
    assert_parked(&task, "awaiting-next-message");
    let kinds = kinds(&task);
    assert_eq!(
        kinds,
        ["", "tool-call", "tool-result", "tool-result", ""],
        "{:#?}",
        shape(&task)
    );
    // Journaled as they finished: the quick one first.
    let history = messages(&task);
    let results: Vec<&Message> = history[2..4].iter().collect();
    let call_id = |message: &Message| {
        message.parts[0].as_data().expect("data")["id"]
            .as_str()
            .expect("id")
            .to_owned()
    };
    assert_eq!(call_id(results[0]), "offline-call-2");
    assert_eq!(call_id(results[1]), "offline-call-1");
    // Read back by the model in call order.
    let reply = status_text(&task);
    let first = reply.find("Worked for 1 seconds").expect("first result");
    let second = reply.find("You said: hello").expect("second result");
    assert!(first < second, "{reply}");
    assert_eq!(subtasks(&task).len(), 2);
}

async fn a_spawned_subtask_holds_completion_until_it_finishes(engine: Engine) {
    let service = engine.serve().await;
    // A sub-task that would work far longer than the test: it is open
    // until the test ends it, whatever the machine's load.
    let text = spawn_calls(&["work for 60 seconds"]);
    let working = send(&service, "alice", immediately(say(None, &text)))
        .await
        .expect("accepted");
    let task_id = working.id.clone();
    // Wait until the sub-task exists (the call is journaled, then spawned).
    // The parent's list of sub-tasks changes without a stream event.
    let task = poll_for(&service, &task_id, |task| !subtasks(task).is_empty()).await;
    assert_eq!(task.status.state, TaskState::Working);
    // Complete cuts the turn; the open sub-task refuses the completion.
    let refused = send(&service, "alice", control(&task_id, "complete"))
        .await
        .expect("answered");
    assert_parked(&refused, "awaiting-next-message");
    assert!(
        status_text(&refused).contains("still open"),
        "{}",
        status_text(&refused)
    );
    // Once the sub-task has ended (here: canceled) and reported,
    // completion goes through.
    let subtask_id = subtasks(&task)[0]["id"].as_str().expect("an id").to_owned();
    cancel(&service, "alice", &subtask_id)
        .await
        .expect("the sub-task is canceled");
    poll_for(&service, &task_id, |task| {
        task.artifacts
            .iter()
            .any(|a| a.artifact_id.starts_with("subtask-"))
    })
    .await;
    let completed = send(&service, "alice", control(&task_id, "complete"))
        .await
        .expect("answered");
    assert_eq!(completed.status.state, TaskState::Completed);
}

async fn a_spawn_subtask_call_without_a_goal_is_refused_and_delegates_nothing(engine: Engine) {
    let service = engine.serve().await;
    let task = within(30, start(&service, "alice", &spawn_calls(&["  "]))).await;
    assert_parked(&task, "awaiting-next-message");
    let history = messages(&task);
    let result = history
        .iter()
        .find(|message| message.metadata.get("stream") == Some(&json!("tool-result")))
        .and_then(|message| message.parts[0].as_data())
        .expect("the call's result");
    assert_eq!(result["name"], "spawn_subtask", "{result}");
    let error = result["error"].as_str().expect("an error");
    assert!(error.contains("a non-empty string"), "{result}");
    assert!(subtasks(&task).is_empty(), "{task:#?}");
}

// --- Push notifications ----------------------------------------------------------------------

async fn a_webhook_hears_the_task_events_from_its_creation_on(engine: Engine) {
    let service = engine.serve().await;
    let mut hook = Webhook::start().await;
    // Given with the first message: it hears the first turn.
    let first = configured(
        say(None, "hello"),
        SendMessageConfiguration {
            task_push_notification_config: Some(TaskPushNotificationConfig {
                url: hook.url.clone(),
                ..Default::default()
            }),
            ..Default::default()
        },
    );
    let task = within(60, send(&service, "alice", first))
        .await
        .expect("answered");
    let heard = hook.states_until(TaskState::InputRequired).await;
    assert_eq!(heard.last(), Some(&TaskState::InputRequired), "{heard:?}");

    // Created later, by the same participant: the next turn only.
    let mut later = Webhook::start().await;
    let config = TaskPushNotificationConfig {
        task_id: task.id.clone(),
        url: later.url.clone(),
        ..Default::default()
    };
    service
        .create_push_config(&who("alice"), config)
        .await
        .expect("created");
    let listed = service
        .list_push_configs(
            &who("alice"),
            crate::a2a::types::ListTaskPushNotificationConfigsRequest {
                task_id: task.id.clone(),
                ..Default::default()
            },
        )
        .await
        .expect("listed");
    assert_eq!(listed.configs.len(), 2, "{listed:#?}");
    within(60, send(&service, "alice", say(Some(&task.id), "again")))
        .await
        .expect("answered");
    let heard_later = later.states_until(TaskState::InputRequired).await;
    assert_eq!(
        heard_later,
        [TaskState::Working, TaskState::InputRequired],
        "the second turn, and nothing from before the webhook"
    );
    // The first webhook hears the second turn too.
    let heard_again = hook.states_until(TaskState::InputRequired).await;
    assert_eq!(heard_again, [TaskState::Working, TaskState::InputRequired]);
}

// --- Streams ---------------------------------------------------------------------------------

async fn a_streamed_turn_starts_with_the_task_and_ends_with_the_turn(engine: Engine) {
    let service = engine.serve().await;
    let stream = service
        .send_streaming_message(&who("alice"), say(None, "work for 1 seconds"))
        .await
        .expect("accepted");
    let events = collect(stream).await;
    let StreamResponse::Task(first) = &events[0] else {
        panic!("the first item is the task: {events:#?}");
    };
    // A new task opens holding its first message.
    assert_eq!(first.status.state, opening_state(engine), "{events:#?}");
    assert_eq!(first.history.len(), 1, "{first:#?}");
    // The progress notes (stored on the embedded engine, live-only on
    // Temporal) come in order.
    let progress: Vec<String> = events
        .iter()
        .filter(|event| delta_text(event).is_none())
        .filter_map(|event| match event {
            StreamResponse::StatusUpdate(update) if update.status.state == TaskState::Working => {
                update.status.message.as_ref().map(message_text)
            }
            _ => None,
        })
        .collect();
    assert_eq!(progress.len(), 10, "{progress:?}");
    assert_eq!(progress[0], "Working: 0.1 of 1 seconds");
    let Some(StreamResponse::StatusUpdate(last)) = events.last() else {
        panic!("ends with a status update: {events:#?}");
    };
    // The reply streamed as it was written, and the parked status holds it
    // whole.
    let final_text = last
        .status
        .message
        .as_ref()
        .map(message_text)
        .unwrap_or_default();
    assert!(
        final_text.starts_with("Worked for 1 seconds."),
        "{final_text}"
    );
    assert_eq!(deltas(&events), final_text);
    assert_eq!(last.status.state, TaskState::InputRequired);
    assert_eq!(last.metadata["sub_state"], "awaiting-next-message");

    // A follow-up's stream opens on the task as its turn starts.
    let stream = service
        .send_streaming_message(&who("alice"), say(Some(&first.id), "work for 1 seconds"))
        .await
        .expect("accepted");
    let events = collect(stream).await;
    assert!(
        matches!(&events[0], StreamResponse::Task(task) if task.status.state == TaskState::Working),
        "{events:#?}"
    );
    assert!(
        matches!(events.last(), Some(StreamResponse::StatusUpdate(u)) if u.status.state == TaskState::InputRequired),
        "{events:#?}"
    );
}

async fn a_streamed_follow_up_ends_parked_awaiting_the_next_message(engine: Engine) {
    let service = engine.serve().await;
    let first = start(&service, "alice", "hello").await;
    let streamed = service
        .send_streaming_message(&who("alice"), say(Some(&first.id), "second"))
        .await
        .expect("accepted");
    let events = collect(streamed).await;
    // However fast the turn, the stream ends with it: its last update, or
    // the task it already left parked.
    let (state, sub_state) = match events.last() {
        Some(StreamResponse::StatusUpdate(last)) => {
            (last.status.state, last.metadata["sub_state"].clone())
        }
        Some(StreamResponse::Task(task)) => (task.status.state, task.metadata["sub_state"].clone()),
        other => panic!("the stream ends with the turn: {other:#?}"),
    };
    assert_eq!(state, TaskState::InputRequired, "{events:#?}");
    assert_eq!(sub_state, "awaiting-next-message");
    let task = get(&service, "alice", &first.id).await.expect("visible");
    assert_eq!(task.history.len(), 4, "{task:#?}");
}

async fn a_watcher_subscribes(engine: Engine) {
    let service = engine.serve().await;
    let task = start(&service, "alice", "hi").await;
    send(&service, "alice", grant(&task.id, "bob", "watcher"))
        .await
        .expect("granted");
    let mut events = subscribe(&service, "bob", &task.id)
        .await
        .expect("a watcher subscribes");
    assert!(matches!(events.next().await, Some(StreamResponse::Task(_))));
}

async fn every_subscriber_sees_the_same_events_until_the_next_turn_ends(engine: Engine) {
    let service = engine.serve().await;
    let task = start(&service, "alice", "hi").await;
    send(&service, "alice", grant(&task.id, "bob", "watcher"))
        .await
        .expect("granted");
    let first = subscribe(&service, "alice", &task.id)
        .await
        .expect("subscribed");
    let second = subscribe(&service, "bob", &task.id)
        .await
        .expect("subscribed");
    send(&service, "alice", say(Some(&task.id), "work for 1 seconds"))
        .await
        .expect("sent");
    let (first, second) = (collect(first).await, collect(second).await);
    assert_eq!(stored(&first), stored(&second));
    let first = stored(&first);
    assert!(
        matches!(&first[0], StreamResponse::Task(t) if t.status.state == TaskState::InputRequired)
    );
    assert!(
        matches!(&first[1], StreamResponse::StatusUpdate(u) if u.status.state == TaskState::Working)
    );
    assert!(
        matches!(first.last(), Some(StreamResponse::StatusUpdate(u)) if u.status.state == TaskState::InputRequired)
    );
    assert_eq!(
        first.len(),
        1 + 1 + 10 + 1,
        "task, working, progress, parked: {first:#?}"
    );
}

async fn return_immediately_answers_while_the_turn_runs(engine: Engine) {
    let service = engine.serve().await;
    let task = start(&service, "alice", "hi").await;
    let started = Instant::now();
    let working = send(
        &service,
        "alice",
        immediately(say(Some(&task.id), "work for 3 seconds")),
    )
    .await
    .expect("accepted");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "answered before the turn ended: {:?}",
        started.elapsed()
    );
    assert_eq!(working.status.state, TaskState::Working, "{working:#?}");
    assert_eq!(
        messages(&working).last().map(message_text).as_deref(),
        Some("work for 3 seconds")
    );
    let parked = poll_for(&service, &task.id, |t| {
        t.status.state == TaskState::InputRequired && t.history.len() == 4
    })
    .await;
    assert!(
        status_text(&parked).starts_with("Worked for 3 seconds."),
        "{parked:#?}"
    );

    // A new task too.
    let fresh = send(
        &service,
        "alice",
        immediately(say(None, "work for 3 seconds")),
    )
    .await
    .expect("accepted");
    assert_eq!(fresh.status.state, TaskState::Working, "{fresh:#?}");
    poll_for(&service, &fresh.id, |t| {
        t.status.state == TaskState::InputRequired
    })
    .await;
}

async fn a_stream_of_a_refused_message_is_the_refusal(engine: Engine) {
    let service = engine.serve().await;
    let task = start(&service, "alice", "hi").await;
    send(&service, "alice", grant(&task.id, "bob", "watcher"))
        .await
        .expect("granted");
    let before = get(&service, "alice", &task.id).await.expect("visible");
    let refused = service
        .send_streaming_message(&who("bob"), say(Some(&task.id), "let me in"))
        .await;
    assert!(
        is_role_refused(refused.map(|_| "a stream")),
        "a watcher's message is refused before any event"
    );
    let after = get(&service, "alice", &task.id).await.expect("visible");
    assert_eq!(after, before);
}

/// A message that starts a one-shot task (`lifecycle: task`).
fn one_shot(text: &str) -> SendMessageRequest {
    let mut message = user_message(None, vec![Part::text(text)]);
    message
        .metadata
        .insert(super::super::LIFECYCLE_KEY.into(), json!("task"));
    request(message)
}

/// How a new task's stream opens: the embedded engine shows it as
/// submitted (its WORKING update follows); on Temporal the store holds it
/// once its workflow accepted it, working.
fn opening_state(engine: Engine) -> TaskState {
    match engine {
        Engine::Embedded => TaskState::Submitted,
        #[cfg(feature = "temporal")]
        Engine::Temporal => TaskState::Working,
    }
}

async fn a_streamed_one_shot_task_opens_as_soon_as_the_turn_shows_progress(engine: Engine) {
    let service = engine.serve().await;
    let mut stream = service
        .send_streaming_message(&who("alice"), one_shot("work for 2 seconds"))
        .await
        .expect("accepted");
    let Some(StreamResponse::Task(opened)) = within(5, stream.next()).await else {
        panic!("the Task first");
    };
    assert_eq!(opened.status.state, opening_state(engine));
    // Released by the first progress note (0.1 s in), not the answer (2 s).
    let task = get(&service, "alice", &opened.id).await.expect("visible");
    assert_eq!(task.status.state, TaskState::Working, "{task:#?}");
    let rest = collect(stream).await;
    assert!(
        matches!(rest.last(), Some(StreamResponse::StatusUpdate(update))
            if update.status.state == TaskState::Completed),
        "{rest:#?}"
    );
}

async fn a_streamed_one_shot_task_answers_with_the_message_alone(engine: Engine) {
    // The model's answer asks for a message-only reply.
    let hooks = native_hook(
        HookPoint::new(Operation::LlmInvoked, Phase::In),
        100,
        |context| {
            let mut next = context.clone();
            next["response"] = json!({
                "text": "just this", "stop": "end_turn", "disposition": "message"
            });
            Decision::Replace(next)
        },
    );
    let service = engine.serve_with(hooks).await;
    let stream = service
        .send_streaming_message(&who("alice"), one_shot("hello"))
        .await
        .expect("accepted");
    let events = collect(stream).await;
    let [StreamResponse::Message(message)] = events.as_slice() else {
        panic!("the Message and nothing else: {events:#?}");
    };
    assert_eq!(message.role, MessageRole::Agent);
    assert_eq!(message_text(message), "just this");
    let id = message.task_id.as_deref().expect("the task it came from");
    let task = get(&service, "alice", id).await.expect("visible");
    assert_eq!(task.status.state, TaskState::Completed, "{task:#?}");
}

// --- Durability ------------------------------------------------------------------------------

async fn a_resend_during_its_turn_waits_for_that_turn(engine: Engine) {
    let service = engine.serve().await;
    let task = start(&service, "alice", "hi").await;
    let work = say(Some(&task.id), "work for 1 seconds");
    let accepted = send(&service, "alice", immediately(work.clone()))
        .await
        .expect("accepted");
    assert_eq!(accepted.status.state, TaskState::Working);
    let answered = within(10, send(&service, "alice", work))
        .await
        .expect("answered");
    assert_parked(&answered, "awaiting-next-message");
    assert!(status_text(&answered).starts_with("Worked for 1 seconds"));
    assert_eq!(answered.history.len(), 4);
}

async fn a_model_turn_cut_by_a_restart_runs_again_and_answers_once(engine: Engine) {
    let mut service = engine.serve_cutting_turns_at_stop().await;
    let task = start(&service, "alice", "hi").await;
    let accepted = send(
        &service,
        "alice",
        immediately(say(Some(&task.id), "work for 2 seconds")),
    )
    .await
    .expect("accepted");
    assert_eq!(accepted.status.state, TaskState::Working);
    service.restart().await;
    service.the_turn_runs_again(&task.id).await;
    let done = poll_for(&service, &task.id, |t| {
        t.status.state == TaskState::InputRequired
    })
    .await;
    assert!(
        status_text(&done).starts_with("Worked for 2 seconds"),
        "{done:#?}"
    );
    // The message once, one reply.
    assert_eq!(
        messages(&done).iter().map(|m| m.role).collect::<Vec<_>>(),
        [MessageRole::User, MessageRole::Agent].repeat(2),
        "{done:#?}"
    );
}
