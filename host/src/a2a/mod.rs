//! The A2A 1.0 protocol: the data model, errors, JSON-RPC framing and version
//! negotiation. Nothing here knows about tasks or serving; the bindings that serve it
//! over HTTP are in [`crate::server`].
//!
//! `types` and `error` are public: they are the protocol's vocabulary, useful to anything that
//! speaks A2A to this server (the end-to-end tests included). The JSON-RPC framing and the
//! version check are shared by the bindings.

pub mod error;
pub(crate) mod jsonrpc;
pub mod types;
pub(crate) mod version;

pub use error::A2aError;
