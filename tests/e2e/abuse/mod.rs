//! Issue 9, bounded under abuse, against the real binary: hostile clients on the request
//! side (connections, requests, webhooks) and a second server on a live database. Each case
//! is named after the item of the issue it covers.

mod connections;
mod database_lock;
mod requests;
mod webhooks;
