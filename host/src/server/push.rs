//! The four push-notification configuration operations (spec 3.1.7-3.1.10) in both
//! bindings: JSON-RPC (spec 9.4.7) dispatches here with its decoded parameters, and the
//! HTTP+JSON routes (spec 11.3.3) take the task id (and configuration id) from the path,
//! which win over the body or query.
//!
//! | Route                                                   | Operation                          |
//! | :------------------------------------------------------ | :--------------------------------- |
//! | `POST   /tasks/{id}/pushNotificationConfigs`            | CreateTaskPushNotificationConfig   |
//! | `GET    /tasks/{id}/pushNotificationConfigs`            | ListTaskPushNotificationConfigs    |
//! | `GET    /tasks/{id}/pushNotificationConfigs/{configId}` | GetTaskPushNotificationConfig      |
//! | `DELETE /tasks/{id}/pushNotificationConfigs/{configId}` | DeleteTaskPushNotificationConfig   |
//!
//! A deletion answers `{}` (the proto's `google.protobuf.Empty`).

use axum::extract::{Path, State};
use axum::response::Response;
use serde_json::{Map, Value, json};

use super::AppState;
use super::body::{QueryParams, RestBody, decode_params};
use super::respond::{RestError, rest_ok};
use super::rest::RestContext;
use crate::a2a::error::A2aError;
use crate::a2a::types::{
    DeleteTaskPushNotificationConfigRequest, GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    TaskPushNotificationConfig,
};
use crate::task::{Caller, TaskService};

/// `CreateTaskPushNotificationConfig`.
pub(crate) async fn create(
    service: &TaskService,
    caller: &Caller,
    config: TaskPushNotificationConfig,
) -> Result<TaskPushNotificationConfig, A2aError> {
    service.create_push_config(caller, config).await
}

/// `GetTaskPushNotificationConfig`.
pub(crate) async fn get(
    service: &TaskService,
    caller: &Caller,
    request: GetTaskPushNotificationConfigRequest,
) -> Result<TaskPushNotificationConfig, A2aError> {
    service.get_push_config(caller, request).await
}

/// `ListTaskPushNotificationConfigs`.
pub(crate) async fn list(
    service: &TaskService,
    caller: &Caller,
    request: ListTaskPushNotificationConfigsRequest,
) -> Result<ListTaskPushNotificationConfigsResponse, A2aError> {
    service.list_push_configs(caller, request).await
}

/// `DeleteTaskPushNotificationConfig`: `{}` once it is gone.
pub(crate) async fn delete(
    service: &TaskService,
    caller: &Caller,
    request: DeleteTaskPushNotificationConfigRequest,
) -> Result<Value, A2aError> {
    service.delete_push_config(caller, request).await?;
    Ok(json!({}))
}

type Result<T = Response, E = RestError> = std::result::Result<T, E>;

/// `object` with the path's task id (and configuration id) in it.
fn from_path(mut object: Map<String, Value>, task_id: String, id: Option<String>) -> Value {
    object.insert("taskId".to_owned(), Value::String(task_id));
    if let Some(id) = id {
        object.insert("id".to_owned(), Value::String(id));
    }
    Value::Object(object)
}

/// `POST /tasks/{id}/pushNotificationConfigs`.
pub(crate) async fn rest_create(
    State(state): State<AppState>,
    Path(task_id): Path<String>,
    context: RestContext,
    RestBody(body): RestBody,
) -> Result {
    let config: TaskPushNotificationConfig = decode_params(&from_path(body, task_id, None))?;
    let caller = context.caller()?;
    Ok(rest_ok(&create(&state.service, &caller, config).await?))
}

/// `GET /tasks/{id}/pushNotificationConfigs`.
pub(crate) async fn rest_list(
    State(state): State<AppState>,
    Path(task_id): Path<String>,
    context: RestContext,
    QueryParams(query): QueryParams,
) -> Result {
    let request = decode_params(&from_path(query, task_id, None))?;
    let caller = context.caller()?;
    Ok(rest_ok(&list(&state.service, &caller, request).await?))
}

/// `GET /tasks/{id}/pushNotificationConfigs/{configId}`.
pub(crate) async fn rest_get(
    State(state): State<AppState>,
    Path((task_id, id)): Path<(String, String)>,
    context: RestContext,
    QueryParams(query): QueryParams,
) -> Result {
    let request = decode_params(&from_path(query, task_id, Some(id)))?;
    let caller = context.caller()?;
    Ok(rest_ok(&get(&state.service, &caller, request).await?))
}

/// `DELETE /tasks/{id}/pushNotificationConfigs/{configId}`.
pub(crate) async fn rest_delete(
    State(state): State<AppState>,
    Path((task_id, id)): Path<(String, String)>,
    context: RestContext,
) -> Result {
    let request = decode_params(&from_path(Map::new(), task_id, Some(id)))?;
    let caller = context.caller()?;
    Ok(rest_ok(&delete(&state.service, &caller, request).await?))
}
