//! Issue 8: the trust boundaries, each case against the real binary.

mod roles;
