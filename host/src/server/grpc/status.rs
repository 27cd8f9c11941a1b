//! A2A errors as gRPC statuses (spec 10.6): the code of the 5.4 table, the
//! human message, and a `google.rpc.Status` in `grpc-status-details-bin`
//! whose details are the same `google.rpc.ErrorInfo` (and, for invalid
//! parameters with a field, `google.rpc.BadRequest`) the other bindings send.
//! Clients such as the official Python SDK find the A2A error by the
//! ErrorInfo's `reason`.
//!
//! Codes: the 5.4 table of the A2A 1.0 text the conformance kit follows,
//! which has VersionNotSupported, UnsupportedOperation and
//! PushNotificationNotSupported as `UNIMPLEMENTED` (the project's reference
//! copy says `FAILED_PRECONDITION`; the kit checks `UNIMPLEMENTED`). This
//! server's own errors take the codes their REST statuses stand for
//! (`RESOURCE_EXHAUSTED`, `PERMISSION_DENIED`, `UNAVAILABLE`), and a refused
//! authentication is `UNAUTHENTICATED` (spec 3.3.2).

use prost::Message;
use tonic::{Code, Status};

use super::generated::rpc;
use crate::a2a::error::{A2aError, BAD_REQUEST_TYPE, ERROR_DOMAIN, ERROR_INFO_TYPE};
use crate::server::auth::AuthError;

/// The gRPC code of an A2A error.
pub(crate) fn code(error: &A2aError) -> Code {
    match error {
        A2aError::JsonParse(_)
        | A2aError::InvalidRequest(_)
        | A2aError::InvalidParams { .. }
        | A2aError::ContentTypeNotSupported(_)
        | A2aError::PayloadTooLarge { .. } => Code::InvalidArgument,
        A2aError::TaskNotFound { .. } => Code::NotFound,
        A2aError::MethodNotFound(_)
        | A2aError::PushNotificationNotSupported
        | A2aError::UnsupportedOperation(_)
        | A2aError::VersionNotSupported { .. } => Code::Unimplemented,
        A2aError::TaskNotCancelable { .. }
        | A2aError::ExtendedAgentCardNotConfigured
        | A2aError::ExtensionSupportRequired { .. } => Code::FailedPrecondition,
        A2aError::Internal(_) | A2aError::InvalidAgentResponse(_) => Code::Internal,
        A2aError::RateLimited { .. } => Code::ResourceExhausted,
        A2aError::RoleRefused { .. } => Code::PermissionDenied,
        A2aError::StoreUnavailable(_) | A2aError::TurnNotStored { .. } => Code::Unavailable,
    }
}

/// `error` as a gRPC status with its details.
pub(crate) fn from_a2a(error: &A2aError) -> Status {
    if error.is_system() {
        tracing::error!(%error, "gRPC request failed");
    }
    let info = rpc::ErrorInfo {
        reason: error.reason().to_owned(),
        domain: ERROR_DOMAIN.to_owned(),
        metadata: error.metadata().into_iter().collect(),
    };
    let mut details = vec![any(ERROR_INFO_TYPE, &info)];
    if let A2aError::InvalidParams {
        message,
        field: Some(field),
    } = error
    {
        let violation = rpc::bad_request::FieldViolation {
            field: field.clone(),
            description: message.clone(),
            ..Default::default()
        };
        let bad_request = rpc::BadRequest {
            field_violations: vec![violation],
        };
        details.push(any(BAD_REQUEST_TYPE, &bad_request));
    }
    with_details(code(error), error.to_string(), details)
}

/// A refused authentication.
pub(crate) fn unauthenticated(error: AuthError) -> Status {
    let info = rpc::ErrorInfo {
        reason: "UNAUTHENTICATED".to_owned(),
        domain: ERROR_DOMAIN.to_owned(),
        metadata: Default::default(),
    };
    with_details(
        Code::Unauthenticated,
        error.to_string(),
        vec![any(ERROR_INFO_TYPE, &info)],
    )
}

fn with_details(code: Code, message: String, details: Vec<pbjson_types::Any>) -> Status {
    let status = rpc::Status {
        code: code as i32,
        message: message.clone(),
        details,
    };
    Status::with_details(code, message, status.encode_to_vec().into())
}

fn any(type_url: &str, message: &impl Message) -> pbjson_types::Any {
    pbjson_types::Any {
        type_url: type_url.to_owned(),
        value: message.encode_to_vec().into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(status: &Status) -> rpc::Status {
        rpc::Status::decode(status.details()).expect("a google.rpc.Status")
    }

    #[test]
    fn codes_follow_the_table() {
        let cases = [
            (
                A2aError::TaskNotFound {
                    task_id: "t".into(),
                },
                Code::NotFound,
            ),
            (
                A2aError::TaskNotCancelable {
                    task_id: "t".into(),
                    state: crate::a2a::types::TaskState::Completed,
                },
                Code::FailedPrecondition,
            ),
            (A2aError::PushNotificationNotSupported, Code::Unimplemented),
            (
                A2aError::UnsupportedOperation("x".into()),
                Code::Unimplemented,
            ),
            (
                A2aError::ContentTypeNotSupported("x".into()),
                Code::InvalidArgument,
            ),
            (A2aError::InvalidAgentResponse("x".into()), Code::Internal),
            (
                A2aError::ExtendedAgentCardNotConfigured,
                Code::FailedPrecondition,
            ),
            (
                A2aError::ExtensionSupportRequired { uris: vec![] },
                Code::FailedPrecondition,
            ),
            (
                A2aError::VersionNotSupported {
                    requested: "99.0".into(),
                },
                Code::Unimplemented,
            ),
            (A2aError::invalid_params("x"), Code::InvalidArgument),
            (
                A2aError::RateLimited {
                    retry_after_secs: 1,
                },
                Code::ResourceExhausted,
            ),
        ];
        for (error, expected) in cases {
            assert_eq!(code(&error), expected, "{error:?}");
            assert_eq!(from_a2a(&error).code(), expected, "{error:?}");
        }
    }

    #[test]
    fn details_carry_the_error_info_and_bad_request() {
        let status = from_a2a(&A2aError::invalid_field(
            "message.parts",
            "at least one part",
        ));
        let details = decoded(&status);
        assert_eq!(details.code, Code::InvalidArgument as i32);
        assert_eq!(details.details[0].type_url, ERROR_INFO_TYPE);
        let info = rpc::ErrorInfo::decode(details.details[0].value.as_ref()).expect("info");
        assert_eq!(info.reason, "INVALID_PARAMS");
        assert_eq!(info.domain, "a2a-protocol.org");
        assert_eq!(info.metadata["field"], "message.parts");
        assert_eq!(details.details[1].type_url, BAD_REQUEST_TYPE);
        let bad = rpc::BadRequest::decode(details.details[1].value.as_ref()).expect("bad");
        assert_eq!(bad.field_violations[0].field, "message.parts");

        let status = unauthenticated(AuthError::Missing);
        assert_eq!(status.code(), Code::Unauthenticated);
        let info =
            rpc::ErrorInfo::decode(decoded(&status).details[0].value.as_ref()).expect("info");
        assert_eq!(info.reason, "UNAUTHENTICATED");
    }
}
