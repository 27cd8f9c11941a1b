//! Issue 11 items 1-3 and issue 10 item 10, end to end on the real binary:
//! tools declared by a plugin (tools.json) whose bodies are Wasm components
//! built against contract 0.2.0, called by the offline model's
//! deterministic `use tool <name> with <json>` lines; network by grant; a
//! 0.1.0 component beside them; `/status` with tokens.

mod calls;
mod network;
mod support;
