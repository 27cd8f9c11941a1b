//! Trust boundaries (issue 8), each case against the real binary.

mod sandbox;
