//! Server-Sent Events for `SendStreamingMessage` and `SubscribeToTask`.
//!
//! Each event is one `data:` line: in the JSON-RPC binding a whole JSON-RPC response,
//! `{"jsonrpc": "2.0", "id": <request id>, "result": <StreamResponse>}` (spec 9.4.2); in the
//! HTTP+JSON binding the bare StreamResponse (spec 11.7). The task service decides what the
//! stream holds and when it ends (the Task first, closing when the turn ends); this module
//! only frames it, and sends a keep-alive comment whenever the stream has been quiet for the
//! keep-alive interval, so a long turn does not look like a dead connection.
//!
//! A failure to establish the stream is not an event: it happens before this module is
//! reached and is answered as an ordinary error response.

use std::convert::Infallible;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use tokio_stream::StreamExt;

use crate::a2a::jsonrpc::{self, RequestId};
use crate::a2a::types::StreamResponse;
use crate::task::EventStream;

/// A JSON-RPC stream answering request `id`.
pub(crate) fn jsonrpc(id: RequestId, events: EventStream, keep_alive: Duration) -> Response {
    respond(events, keep_alive, move |item| {
        data_event(&jsonrpc::success(&id, &item))
    })
}

/// An HTTP+JSON stream.
pub(crate) fn rest(events: EventStream, keep_alive: Duration) -> Response {
    respond(events, keep_alive, |item| data_event(&item))
}

fn respond<F>(events: EventStream, keep_alive: Duration, frame: F) -> Response
where
    F: FnMut(StreamResponse) -> Option<Event> + Send + 'static,
{
    // An item that cannot be framed is dropped by `filter_map` (and logged by
    // `data_event`); the stream goes on rather than breaking the connection.
    let frames = events.filter_map(frame).map(Ok::<_, Infallible>);
    Sse::new(frames)
        .keep_alive(KeepAlive::new().interval(keep_alive))
        .into_response()
}

fn data_event<T: Serialize>(value: &T) -> Option<Event> {
    match serde_json::to_string(value) {
        Ok(json) => Some(Event::default().data(json)),
        Err(error) => {
            tracing::error!(%error, "a stream event could not be serialized");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::types::{Task, TaskState, TaskStatus, TaskStatusUpdateEvent};
    use axum::http::header::CONTENT_TYPE;
    use serde_json::{Value, json};

    fn task() -> StreamResponse {
        StreamResponse::Task(Task {
            id: "t1".into(),
            context_id: "c1".into(),
            status: TaskStatus {
                state: TaskState::Working,
                message: None,
                timestamp: None,
            },
            ..Task::default()
        })
    }

    fn parked() -> StreamResponse {
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t1".into(),
            context_id: "c1".into(),
            status: TaskStatus {
                state: TaskState::InputRequired,
                message: None,
                timestamp: None,
            },
            ..TaskStatusUpdateEvent::default()
        })
    }

    fn stream(items: Vec<StreamResponse>) -> EventStream {
        Box::pin(tokio_stream::iter(items))
    }

    /// The `data:` payloads and the number of comment lines of an SSE body.
    async fn read(response: Response) -> (Vec<Value>, usize) {
        assert_eq!(
            response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok()),
            Some("text/event-stream")
        );
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        let text = String::from_utf8(bytes.to_vec()).expect("utf-8");
        let data = text
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .map(|data| serde_json::from_str(data).expect("JSON data"))
            .collect();
        let comments = text.lines().filter(|line| line.starts_with(':')).count();
        (data, comments)
    }

    #[tokio::test]
    async fn jsonrpc_events_are_whole_responses_with_the_request_id() {
        let response = jsonrpc(
            RequestId::String("req-1".into()),
            stream(vec![task(), parked()]),
            Duration::from_secs(15),
        );
        let (events, _) = read(response).await;
        assert_eq!(events.len(), 2);
        assert_eq!(events[0]["jsonrpc"], json!("2.0"));
        assert_eq!(events[0]["id"], json!("req-1"));
        assert_eq!(events[0]["result"]["task"]["id"], json!("t1"));
        assert_eq!(
            events[1]["result"]["statusUpdate"]["status"]["state"],
            json!("TASK_STATE_INPUT_REQUIRED")
        );
    }

    #[tokio::test]
    async fn rest_events_are_bare_stream_responses() {
        let (events, _) = read(rest(
            stream(vec![task(), parked()]),
            Duration::from_secs(15),
        ))
        .await;
        assert_eq!(events.len(), 2);
        assert_eq!(events[0]["task"]["contextId"], json!("c1"));
        assert!(events[0].get("jsonrpc").is_none());
        assert_eq!(events[1]["statusUpdate"]["taskId"], json!("t1"));
    }

    #[tokio::test]
    async fn quiet_streams_get_keep_alive_comments() {
        let (sender, receiver) = tokio::sync::mpsc::channel(4);
        let events: EventStream = Box::pin(tokio_stream::wrappers::ReceiverStream::new(receiver));
        let response = rest(events, Duration::from_millis(10));
        let producer = tokio::spawn(async move {
            sender.send(task()).await.expect("open");
            tokio::time::sleep(Duration::from_millis(120)).await;
            sender.send(parked()).await.expect("open");
        });
        let (events, comments) = read(response).await;
        producer.await.expect("producer");
        assert_eq!(events.len(), 2);
        assert!(comments >= 2, "{comments} keep-alive comments");
    }
}
