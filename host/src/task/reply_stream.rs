//! The stream of a message that starts a one-shot task.
//!
//! A2A lets an agent answer a message with a Message alone instead of a
//! Task. A one-shot task whose answer asks for that (`disposition:
//! message`) gets it from `SendMessage`; its stream shows the same: the
//! Message and nothing else. So the stream holds the Task (as submitted)
//! and its `WORKING` update back until the turn shows something: any other
//! event releases them, in order, unless the task's actor said first that
//! the answer is a message alone ([`AnswerWatch`]); then the stream waits
//! for the turn's end and sends only that Message. (On the Temporal engine
//! a turn stores its events when it ends, and its result tells, once the
//! ending event comes; what the turn says live releases the stream.)

use futures_core::Stream;
use futures_util::{StreamExt as _, stream};
use tokio::sync::oneshot;

use super::events::{TaskEvents, ends_turn};
use super::inbox::{AnswerWatch, TurnReply};
use crate::a2a::error::A2aError;
use crate::a2a::types::{StreamResponse, TaskState};

/// What the sender's turn answers once it is over.
pub(crate) type TurnDone = oneshot::Receiver<Result<TurnReply, A2aError>>;

/// `events` (the Task first), or the turn's Message alone.
pub(crate) fn message_or_task(
    mut events: TaskEvents,
    done: TurnDone,
    watch: AnswerWatch,
) -> impl Stream<Item = StreamResponse> + Send + 'static {
    let opened = async move {
        let opening = hold(&mut events, done, &watch).await;
        let rest = opening.events_follow.then_some(events);
        stream::iter(opening.items).chain(stream::iter(rest).flatten())
    };
    stream::once(opened).flatten()
}

/// What the stream opens with, and whether the task's events go on after.
struct Opening {
    items: Vec<StreamResponse>,
    events_follow: bool,
}

async fn hold(events: &mut TaskEvents, done: TurnDone, watch: &AnswerWatch) -> Opening {
    let mut held = Vec::new();
    while let Some(event) = events.next().await {
        // A turn on Temporal stores its events when it ends: until then,
        // only what it says live shows it under way.
        let quiet = is_quiet(&event) || (watch.told_at_turn_end() && !events.last_was_live());
        let ends_turn = ends_turn(&event);
        held.push(event);
        if watch.is_message() {
            if !ends_turn {
                continue;
            }
            // The actor answers the turn's waiters in the step that sent
            // this update: `done` is at hand.
            if let Ok(Ok(TurnReply::Message(message))) = done.await {
                return Opening {
                    items: vec![StreamResponse::Message(message)],
                    events_follow: false,
                };
            }
            break;
        }
        if ends_turn && watch.told_at_turn_end() {
            if let Ok(Ok(TurnReply::Message(message))) = done.await {
                return Opening {
                    items: vec![StreamResponse::Message(message)],
                    events_follow: false,
                };
            }
            break;
        }
        if !quiet {
            break;
        }
    }
    Opening {
        items: held,
        events_follow: true,
    }
}

/// What every turn starts with: the Task, and its bare `WORKING` update.
fn is_quiet(event: &StreamResponse) -> bool {
    match event {
        StreamResponse::Task(_) => true,
        StreamResponse::StatusUpdate(update) => {
            update.status.state == TaskState::Working && update.status.message.is_none()
        }
        _ => false,
    }
}
