//! The two renderers for people, driven as people would drive them: the web page at `/ui`
//! in a real headless Chromium (`ui`), the terminal client `tiny-harness chat` in a real
//! pseudo-terminal (`chat`), and the completion route both use (`completion_route`).

mod support;

mod chat;
mod completion_route;
mod ui;
