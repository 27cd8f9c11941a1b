//! `ListTasks`: the tasks the caller takes part in (every task for an
//! admin), filtered, most recent status change first, in pages.
//!
//! The page token is an opaque cursor: the position of the last task of the
//! previous page in that order. A task whose status changes between two
//! page requests moves to the front, so a client paging through a busy
//! server may miss it on later pages; re-listing from the first page shows it.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::access;
use super::state::TaskRecord;
use super::store::TaskStore;
use crate::a2a::error::A2aError;
use crate::a2a::types::{ListTasksRequest, ListTasksResponse};

/// One page of the caller's tasks.
pub(crate) fn list(
    store: &TaskStore,
    caller: &str,
    admins: &[String],
    request: &ListTasksRequest,
) -> Result<ListTasksResponse, A2aError> {
    request.validate()?;
    let after = match request.page_token.as_deref() {
        None | Some("") => None,
        Some(token) => Some(decode_token(token)?),
    };
    let page_size = usize::try_from(request.effective_page_size()).unwrap_or(0);
    Ok(store.scan(|tasks| {
        let mut matching: Vec<&TaskRecord> = tasks
            .filter(|task| access::role_of(task, caller, admins).is_some())
            .filter(|task| selected(task, request))
            .collect();
        matching.sort_by_key(|task| std::cmp::Reverse(task.revision));
        // Newest first, so the tasks after the cursor are those below it.
        let start = after.map_or(0, |cursor| {
            matching.partition_point(|t| t.revision >= cursor)
        });
        let page = &matching[start..(start + page_size).min(matching.len())];
        let next_page_token = match page.last() {
            Some(last) if start + page.len() < matching.len() => encode_token(last.revision),
            _ => String::new(),
        };
        ListTasksResponse {
            tasks: page.iter().map(|task| render(task, request)).collect(),
            next_page_token,
            page_size: request.effective_page_size(),
            total_size: i32::try_from(matching.len()).unwrap_or(i32::MAX),
        }
    }))
}

fn selected(task: &TaskRecord, request: &ListTasksRequest) -> bool {
    let context = request
        .context_id
        .as_deref()
        .is_none_or(|context_id| task.context_id == context_id);
    let state = request
        .status_filter()
        .is_none_or(|state| task.state() == state);
    let recent = request.status_timestamp_after.is_none_or(|after| {
        task.status
            .timestamp
            .is_some_and(|timestamp| timestamp >= after)
    });
    context && state && recent
}

fn render(task: &TaskRecord, request: &ListTasksRequest) -> crate::a2a::types::Task {
    let mut rendered = task.to_task(request.history_length);
    // Spec 3.1.4: without includeArtifacts the field is omitted entirely.
    if request.include_artifacts != Some(true) {
        rendered.artifacts.clear();
    }
    rendered
}

fn encode_token(revision: u64) -> String {
    URL_SAFE_NO_PAD.encode(format!("after:{revision}"))
}

fn decode_token(token: &str) -> Result<u64, A2aError> {
    URL_SAFE_NO_PAD
        .decode(token)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| text.strip_prefix("after:")?.parse().ok())
        .ok_or_else(|| {
            A2aError::invalid_field(
                "pageToken",
                "pageToken is not a token this server issued; pass the nextPageToken of the \
                 previous page, or leave it out for the first page",
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_foreign_ones_are_refused() {
        assert_eq!(decode_token(&encode_token(42)).ok(), Some(42));
        for bad in ["", "!!", "YWZ0ZXI6eA", "eHl6"] {
            assert!(decode_token(bad).is_err(), "{bad}");
        }
    }
}
