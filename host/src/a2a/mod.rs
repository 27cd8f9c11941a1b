//! The A2A 1.0 protocol layer: the data model, errors, JSON-RPC framing, version
//! negotiation, and the HTTP server that speaks it.
//!
//! `types` and `error` are public: they are the protocol's vocabulary, useful to anything that
//! speaks A2A to this server (the end-to-end tests included). `server` is public so the binary
//! can serve it. The JSON-RPC framing and the version check are details of this server's
//! endpoints.

pub mod error;
pub(crate) mod jsonrpc;
pub mod server;
pub mod types;
pub(crate) mod version;

pub use error::A2aError;
