//! Issue 8: the trust boundaries, each case against the real binary over real HTTP and
//! named after the item of the issue it covers.

mod addresses;
mod identity;
mod origin;
mod rate_limit;
mod roles;
