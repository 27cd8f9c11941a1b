//! Bounded under abuse (issue 9): hostile plugins and clients against the
//! real binary.

mod plugins;
