//! tiny-harness: an A2A 1.0 agent server whose command bodies are sandboxed
//! WebAssembly components.
//!
//! The pieces, in the order data flows through them:
//! - [`commands`]: `/<name> <arguments>` messages, their declarations and the
//!   frozen registry that runs them;
//! - [`hooks`]: hook points and the chains of executors (Wasm, remote,
//!   native) that run at them;
//! - [`plugins`]: the plugins directory, its manifests, and the sandboxed
//!   Wasm runtime that runs components;
//! - [`task`]: the conversation lifecycle and the views executors get.

pub mod a2a;
pub mod commands;
pub mod hooks;
pub mod plugins;
pub mod task;
