//! The stream of a message that starts a one-shot task.
//!
//! A2A lets an agent answer a message with a Message alone instead of a
//! Task. A one-shot task whose answer asks for that (`disposition:
//! message`) gets it from `SendMessage`; its stream must show the same: the
//! Message and nothing else. Whether the answer is one is known only when
//! the turn ends, so the stream holds the Task (as submitted) and the
//! updates after it back until the turn shows itself: its first streamed
//! output (a text delta, a tool call or result) releases them in order; so
//! does the end of the turn, unless the turn answered with a Message alone.

use futures_util::{StreamExt as _, stream};
use tokio::sync::oneshot;

use super::events::TaskEvents;
use super::inbox::TurnReply;
use super::service::EventStream;
use super::transcript::STREAM_KEY;
use crate::a2a::error::A2aError;
use crate::a2a::types::StreamResponse;

/// What the sender's turn answers once it is over.
pub(crate) type TurnDone = oneshot::Receiver<Result<TurnReply, A2aError>>;

/// `events` (the Task first), or the turn's Message alone.
pub(crate) fn message_or_task(mut events: TaskEvents, done: TurnDone) -> EventStream {
    let opened = async move {
        let opening = hold(&mut events, done).await;
        let rest = opening.events_follow.then_some(events);
        stream::iter(opening.items).chain(stream::iter(rest).flatten())
    };
    Box::pin(stream::once(opened).flatten())
}

/// What the stream opens with, and whether the task's events go on after.
struct Opening {
    items: Vec<StreamResponse>,
    events_follow: bool,
}

async fn hold(events: &mut TaskEvents, done: TurnDone) -> Opening {
    let mut held = Vec::new();
    while let Some(event) = events.next().await {
        let streamed = is_streamed_output(&event);
        let ends_turn = ends_turn(&event);
        held.push(event);
        if ends_turn {
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
        if streamed {
            break;
        }
    }
    Opening {
        items: held,
        events_follow: true,
    }
}

/// A status update the turn streams as it goes (`transcript::STREAM_KEY`).
fn is_streamed_output(event: &StreamResponse) -> bool {
    matches!(event, StreamResponse::StatusUpdate(update)
        if update.status.message.as_ref().is_some_and(|message| message.metadata.contains_key(STREAM_KEY)))
}

fn ends_turn(event: &StreamResponse) -> bool {
    matches!(event, StreamResponse::StatusUpdate(update) if update.status.state.ends_turn())
}
