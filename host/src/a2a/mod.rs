//! The A2A 1.0 protocol layer: the data model, errors, JSON-RPC framing and version
//! negotiation. Transport-independent; the HTTP server builds on it.
//!
//! `types` and `error` are public: they are the protocol's vocabulary, useful to anything that
//! speaks A2A to this server (the end-to-end tests included). The JSON-RPC framing and the
//! version check are details of this server's endpoints.

pub mod error;
// Framing and version checks are used by the server bindings, which come next.
#[allow(dead_code)]
pub(crate) mod jsonrpc;
pub mod types;
#[allow(dead_code)]
pub(crate) mod version;

pub use error::A2aError;
