//! Issue 8, trust boundaries, against the real binary over real HTTP: each case is named
//! after the item of the issue it covers.

mod addresses;
mod identity;
mod origin;
mod rate_limit;
