//! `ListTasks`: the tasks the caller takes part in (every task for an
//! admin), filtered, most recent status change first, in pages. Also the
//! page tokens of `ListTaskPushNotificationConfigs`.
//!
//! The page token is an opaque cursor: the position of the last task of the
//! previous page in that order (the store's status revision). A task whose status changes between two
//! page requests moves to the front, so a client paging through a busy
//! server may miss it on later pages; re-listing from the first page shows it.

use super::state::TaskRecord;
use crate::a2a::error::A2aError;
use crate::a2a::types::{ListTasksRequest, ListTasksResponse, Task};
use crate::store::{ListQuery, StoredTask, TaskStore};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// One page of the caller's tasks, read from the store: every task it
/// holds, running or not.
pub(crate) async fn list(
    store: &dyn TaskStore,
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
    let is_admin = admins.iter().any(|admin| admin == caller);
    let query = ListQuery {
        // Admins see every task; anyone else the tasks they take part in.
        participant: (!is_admin).then(|| caller.to_owned()),
        context_id: request.context_id.clone(),
        state: request
            .status_filter()
            .map(|state| state.as_str().to_owned()),
        status_after_ms: request.status_timestamp_after.map(|t| t.unix_millis()),
        before_revision: after,
        limit: page_size,
        history: request
            .history_length
            .map(|n| usize::try_from(n).unwrap_or(0)),
        artifacts: request.include_artifacts == Some(true),
    };
    let page = store.list(query).await.map_err(A2aError::from)?;
    let next_page_token = match page.tasks.last() {
        Some(last) if page.more => encode_token(last.revision),
        _ => String::new(),
    };
    let tasks = page
        .tasks
        .into_iter()
        .map(|stored| render(stored, request))
        .collect::<Result<_, _>>()?;
    Ok(ListTasksResponse {
        tasks,
        next_page_token,
        page_size: request.effective_page_size(),
        total_size: i32::try_from(page.total).unwrap_or(i32::MAX),
    })
}

fn render(stored: StoredTask, request: &ListTasksRequest) -> Result<Task, A2aError> {
    let mut rendered =
        TaskRecord::render_stored(stored, request.history_length).map_err(A2aError::Internal)?;
    // Spec 3.1.4: without includeArtifacts the field is omitted entirely.
    if request.include_artifacts != Some(true) {
        rendered.artifacts.clear();
    }
    Ok(rendered)
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

/// Push configurations per page when the request names no size.
const PUSH_PAGE_SIZE: usize = 100;

/// `pageSize` of `ListTaskPushNotificationConfigs`: unset or 0 lets the
/// server choose; larger than the default is capped to it.
pub(crate) fn push_page_size(requested: Option<i32>) -> usize {
    match requested.and_then(|size| usize::try_from(size).ok()) {
        Some(size) if size > 0 => size.min(PUSH_PAGE_SIZE),
        _ => PUSH_PAGE_SIZE,
    }
}

/// The page token of `ListTaskPushNotificationConfigs`: the id of the last
/// configuration of the previous page (they are ordered by id).
pub(crate) fn encode_push_token(last_id: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("config:{last_id}"))
}

pub(crate) fn decode_push_token(token: Option<&str>) -> Result<Option<String>, A2aError> {
    let token = match token {
        None | Some("") => return Ok(None),
        Some(token) => token,
    };
    URL_SAFE_NO_PAD
        .decode(token)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| text.strip_prefix("config:").map(str::to_owned))
        .map(Some)
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

    #[test]
    fn push_tokens_round_trip_and_foreign_ones_are_refused() {
        let token = encode_push_token("hook/1 é");
        assert_eq!(
            decode_push_token(Some(&token)).ok(),
            Some(Some("hook/1 é".to_owned()))
        );
        assert_eq!(decode_push_token(None).ok(), Some(None));
        assert!(decode_push_token(Some(&encode_token(3))).is_err());
        assert!(decode_push_token(Some("!!")).is_err());
        assert_eq!(push_page_size(None), PUSH_PAGE_SIZE);
        assert_eq!(push_page_size(Some(0)), PUSH_PAGE_SIZE);
        assert_eq!(push_page_size(Some(2)), 2);
        assert_eq!(push_page_size(Some(5000)), PUSH_PAGE_SIZE);
    }
}
