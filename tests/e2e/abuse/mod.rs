//! Issue 9: bounded under abuse, each case against the real binary with
//! hostile plugins built from source and hostile clients.

mod outcomes;
