//! `A2AService` over the [`TaskService`]: every call authenticates from the
//! `authorization` metadata (bearer tokens as in the HTTP bindings; on
//! loopback without tokens, `x-participant-id`), checks `a2a-version`, then
//! decodes, admits (rate limit for sends) and calls exactly what the JSON-RPC
//! binding calls, so the three bindings answer alike (spec 5.1).

use std::pin::Pin;

use futures_core::Stream;
use tokio_stream::StreamExt;
use tonic::{Request, Response, Status};

use super::convert::{answer, request};
use super::generated::a2a::{self as proto, a2a_service_server::A2aService};
use super::status;
use crate::a2a::error::A2aError;
use crate::a2a::types::{
    CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTasksRequest, SendMessageRequest, SubscribeToTaskRequest, TaskPushNotificationConfig,
};
use crate::a2a::version;
use crate::server::AppState;
use crate::server::auth::Identity;
use crate::server::card::extended_card_unavailable;
use crate::task::EventStream;

/// A server stream of `StreamResponse`s.
pub(crate) type Events = Pin<Box<dyn Stream<Item = Result<proto::StreamResponse, Status>> + Send>>;

/// The gRPC service, sharing the HTTP bindings' state (the same authenticator and
/// rate limiter: a caller's sends count once whatever the binding).
#[derive(Clone)]
pub(crate) struct GrpcService {
    pub(crate) state: AppState,
}

type Answer<T> = Result<Response<T>, Status>;

impl GrpcService {
    /// Who calls, at a supported version: the steps every HTTP request goes through
    /// first, read from the call's metadata.
    fn identity<T>(&self, request: &Request<T>) -> Result<Identity, Status> {
        let headers = request.metadata().clone().into_headers();
        let peer = request
            .remote_addr()
            .map(|address| address.ip().to_canonical());
        let identity = self
            .state
            .auth
            .authenticate(&headers, peer)
            .map_err(status::unauthenticated)?;
        version::check_request(&headers, None).map_err(|error| status::from_a2a(&error))?;
        Ok(identity)
    }
}

fn fail(error: A2aError) -> Status {
    status::from_a2a(&error)
}

/// The harness's event stream as gRPC messages. A stream ends when the
/// service's stream ends (the turn or the task ended).
fn events(stream: EventStream) -> Events {
    Box::pin(stream.map(|event| answer::<_, proto::StreamResponse>(&event)))
}

#[tonic::async_trait]
impl A2aService for GrpcService {
    async fn send_message(
        &self,
        call: Request<proto::SendMessageRequest>,
    ) -> Answer<proto::SendMessageResponse> {
        let identity = self.identity(&call)?;
        let request: SendMessageRequest = request(call.get_ref()).map_err(fail)?;
        let caller = self.state.admit_send(&identity, &request).map_err(fail)?;
        let response = self
            .state
            .service
            .send_message(&caller, request)
            .await
            .map_err(fail)?;
        Ok(Response::new(answer(&response)?))
    }

    type SendStreamingMessageStream = Events;

    async fn send_streaming_message(
        &self,
        call: Request<proto::SendMessageRequest>,
    ) -> Answer<Events> {
        let identity = self.identity(&call)?;
        let request: SendMessageRequest = request(call.get_ref()).map_err(fail)?;
        let caller = self.state.admit_send(&identity, &request).map_err(fail)?;
        let stream = self
            .state
            .service
            .send_streaming_message(&caller, request)
            .await
            .map_err(fail)?;
        Ok(Response::new(events(stream)))
    }

    async fn get_task(&self, call: Request<proto::GetTaskRequest>) -> Answer<proto::Task> {
        let caller = self.identity(&call)?.caller(None).map_err(fail)?;
        let request: GetTaskRequest = request(call.get_ref()).map_err(fail)?;
        let task = self
            .state
            .service
            .get_task(&caller, request)
            .await
            .map_err(fail)?;
        Ok(Response::new(answer(&task)?))
    }

    async fn list_tasks(
        &self,
        call: Request<proto::ListTasksRequest>,
    ) -> Answer<proto::ListTasksResponse> {
        let caller = self.identity(&call)?.caller(None).map_err(fail)?;
        let request: ListTasksRequest = request(call.get_ref()).map_err(fail)?;
        let page = self
            .state
            .service
            .list_tasks(&caller, request)
            .await
            .map_err(fail)?;
        Ok(Response::new(answer(&page)?))
    }

    async fn cancel_task(&self, call: Request<proto::CancelTaskRequest>) -> Answer<proto::Task> {
        let caller = self.identity(&call)?.caller(None).map_err(fail)?;
        let request: CancelTaskRequest = request(call.get_ref()).map_err(fail)?;
        let task = self
            .state
            .service
            .cancel_task(&caller, request)
            .await
            .map_err(fail)?;
        Ok(Response::new(answer(&task)?))
    }

    type SubscribeToTaskStream = Events;

    async fn subscribe_to_task(
        &self,
        call: Request<proto::SubscribeToTaskRequest>,
    ) -> Answer<Events> {
        let caller = self.identity(&call)?.caller(None).map_err(fail)?;
        let request: SubscribeToTaskRequest = request(call.get_ref()).map_err(fail)?;
        let stream = self
            .state
            .service
            .subscribe(&caller, request)
            .await
            .map_err(fail)?;
        Ok(Response::new(events(stream)))
    }

    async fn create_task_push_notification_config(
        &self,
        call: Request<proto::TaskPushNotificationConfig>,
    ) -> Answer<proto::TaskPushNotificationConfig> {
        let caller = self.identity(&call)?.caller(None).map_err(fail)?;
        let config: TaskPushNotificationConfig = request(call.get_ref()).map_err(fail)?;
        let created = self
            .state
            .service
            .create_push_config(&caller, config)
            .await
            .map_err(fail)?;
        Ok(Response::new(answer(&created)?))
    }

    async fn get_task_push_notification_config(
        &self,
        call: Request<proto::GetTaskPushNotificationConfigRequest>,
    ) -> Answer<proto::TaskPushNotificationConfig> {
        let caller = self.identity(&call)?.caller(None).map_err(fail)?;
        let request: GetTaskPushNotificationConfigRequest =
            request(call.get_ref()).map_err(fail)?;
        let config = self
            .state
            .service
            .get_push_config(&caller, request)
            .await
            .map_err(fail)?;
        Ok(Response::new(answer(&config)?))
    }

    async fn list_task_push_notification_configs(
        &self,
        call: Request<proto::ListTaskPushNotificationConfigsRequest>,
    ) -> Answer<proto::ListTaskPushNotificationConfigsResponse> {
        let caller = self.identity(&call)?.caller(None).map_err(fail)?;
        let request: ListTaskPushNotificationConfigsRequest =
            request(call.get_ref()).map_err(fail)?;
        let page = self
            .state
            .service
            .list_push_configs(&caller, request)
            .await
            .map_err(fail)?;
        Ok(Response::new(answer(&page)?))
    }

    async fn get_extended_agent_card(
        &self,
        call: Request<proto::GetExtendedAgentCardRequest>,
    ) -> Answer<proto::AgentCard> {
        self.identity(&call)?;
        Err(fail(extended_card_unavailable()))
    }

    async fn delete_task_push_notification_config(
        &self,
        call: Request<proto::DeleteTaskPushNotificationConfigRequest>,
    ) -> Answer<pbjson_types::Empty> {
        let caller = self.identity(&call)?.caller(None).map_err(fail)?;
        let request: DeleteTaskPushNotificationConfigRequest =
            request(call.get_ref()).map_err(fail)?;
        self.state
            .service
            .delete_push_config(&caller, request)
            .await
            .map_err(fail)?;
        Ok(Response::new(pbjson_types::Empty {}))
    }
}
