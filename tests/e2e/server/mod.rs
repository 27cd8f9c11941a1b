//! The A2A server, through the real binary over real HTTP.

pub(crate) mod support;

mod approvals;
mod commands;
mod completion;
mod errors;
mod grpc;
mod interop;
mod languages;
mod lifecycle;
mod media_types;
mod one_shot;
mod reload;
mod roles;
mod tls;
