//! Code generated from `host/proto` by `tools/proto-gen` (prost, tonic,
//! pbjson): the A2A messages, the `A2AService` server and client, and the
//! `google.rpc` error details. Do not edit; regenerate.

#![allow(
    missing_docs,
    unreachable_pub,
    clippy::all,
    clippy::pedantic,
    rustdoc::all
)]

/// `lf.a2a.v1`: the A2A protocol's messages and service.
pub mod a2a {
    include!("generated/lf.a2a.v1.rs");
    include!("generated/lf.a2a.v1.serde.rs");
}

/// `google.rpc`: `Status`, `ErrorInfo`, `BadRequest`, ... (only some are sent).
#[allow(dead_code)]
pub mod rpc {
    include!("generated/google.rpc.rs");
}
