//! Hook points and the chains of executors that run at them.
//!
//! Everything the harness does runs through hook points named
//! `<operation>.<phase>`. At each point, executors run in ascending priority;
//! each may pass, replace the context, or abort. Executors are Wasm
//! components (from a plugin's hooks.json), remote JSON-RPC endpoints, or
//! native Rust closures registered by an embedding program.

mod chain;
mod context;
mod executor;
mod native;
mod point;
mod remote;
mod trace;

pub use chain::{ChainError, DEFAULT_PRIORITY, HookChains, HookEntry};
pub use context::HookContext;
pub use executor::{
    Abort, AbortReason, BoxFuture, Decision, Executor, ExecutorFault, ExecutorKind, HookCall,
};
pub use native::NativeExecutor;
pub use point::{HookPoint, Operation, Phase, UnknownHookPoint};
pub use remote::RemoteExecutor;
pub use trace::{MAX_TRACE_STEPS, StepOutcome, Trace, TraceRecord, TraceStep};
