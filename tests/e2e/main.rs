//! End-to-end tests: real components built from source by `host/build.rs`,
//! the real `tiny-harness` binary, real HTTP. One test binary (modules per
//! area) keeps link times down.

// A test binary has no public API; `pub` here only shares helpers between modules.
#![allow(unreachable_pub)]

mod support;

mod abuse;
mod cli;
mod conformance;
mod durability;
mod plugin_host;
mod plugin_server;
mod providers;
mod remote_executors;
mod renderers;
mod scaffold;
mod security;
mod server;
#[cfg(feature = "temporal")]
mod temporal;
mod tools;
