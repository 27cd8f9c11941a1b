//! Durable conversations, through the real binary on a SQLite file: kills
//! at chosen points and restarts, storage that refuses writes, push
//! notifications.

pub(crate) mod support;

mod crash;
mod one_shot;
mod push;
mod storage;
