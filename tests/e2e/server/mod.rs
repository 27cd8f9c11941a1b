//! The A2A server, through the real binary over real HTTP.

mod support;

mod commands;
mod completion;
mod errors;
mod interop;
mod lifecycle;
mod reload;
mod roles;
