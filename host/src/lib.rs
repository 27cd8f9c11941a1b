//! tiny-harness: an A2A 1.0 agent server whose command bodies are sandboxed
//! WebAssembly components.
//!
//! The pieces, in the order data flows through them:
//! - [`server`]: the A2A bindings over HTTP (JSON-RPC, HTTP+JSON, SSE, the
//!   agent card), authentication and request limits;
//! - [`a2a`]: the protocol's types, errors, JSON-RPC framing and versions;
//! - [`domain`]: the vocabulary every layer shares: participants, roles, the
//!   task view, and the typed hook contexts;
//! - [`task`]: the conversation lifecycle behind every binding;
//! - [`commands`]: `/<name> <arguments>` messages, their declarations and the
//!   frozen registry that runs them;
//! - [`hooks`]: hook points and the chains of executors (Wasm, remote,
//!   native) that run at them;
//! - [`plugins`]: the plugins directory, its manifests, and the sandboxed
//!   Wasm runtime that runs components;
//! - [`model`]: model providers (OpenAI-compatible, Anthropic), with a
//!   deterministic offline default;
//! - [`store`]: where tasks are kept (an embedded SQLite event log, or memory);
//! - `temporal` (feature `temporal`): a second task engine, one Temporal
//!   workflow per task, for running on several servers;
//! - [`push`]: push notifications: webhook configurations and their delivery;
//! - [`outbound`]: the HTTP clients that call out (webhooks, remote
//!   executors), over http or https;
//! - [`config`]: the configuration file and its defaults;
//! - [`tools`]: declarations of the tools the model may call beside its
//!   intrinsic ones (from plugins, MCP servers, A2A delegates);
//! - [`secret`]: API keys, which never print;
//! - [`scaffold`]: `tiny-harness plugins new`, a new plugin folder that builds.

pub mod a2a;
pub mod chat;
pub mod commands;
pub mod config;
pub mod domain;
pub mod heap;
pub mod hooks;
pub mod model;
pub mod outbound;
pub mod plugins;
pub mod push;
pub mod scaffold;
pub mod secret;
pub mod server;
pub mod store;
pub mod task;
#[cfg(feature = "temporal")]
pub mod temporal;
pub mod tools;

// The fuzz targets: replayed by `cargo test`, run by `cargo fuzz` (tests/fuzz).
#[doc(hidden)]
pub mod fuzz;
