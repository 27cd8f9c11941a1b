//! Issue 9: bounded under abuse, each case against the real binary with hostile plugins
//! built from source and hostile clients (connections, requests, webhooks, a second server
//! on a live database). Each case is named after the item of the issue it covers.

mod connections;
mod database_lock;
mod outcomes;
mod plugins;
mod requests;
mod soak;
mod webhooks;
