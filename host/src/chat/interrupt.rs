//! Ctrl-C while the client waits for a turn. One listener spans a whole wait, every event
//! and every reconnect pause of it: a `tokio::signal::ctrl_c()` future made afresh for each
//! event sees only the signals sent after it was made, so a Ctrl-C pressed while the
//! previous event was being printed would be lost and the wait would go on.

use std::io;

/// Listens for Ctrl-C from its creation until it is dropped.
pub(crate) struct Interrupt {
    #[cfg(unix)]
    signal: tokio::signal::unix::Signal,
    #[cfg(windows)]
    signal: tokio::signal::windows::CtrlC,
}

impl Interrupt {
    /// Starts listening; must run inside the session's runtime.
    pub(crate) fn listen() -> io::Result<Interrupt> {
        #[cfg(unix)]
        let signal = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
        #[cfg(windows)]
        let signal = tokio::signal::windows::ctrl_c()?;
        Ok(Interrupt { signal })
    }

    /// Resolves at the first Ctrl-C since `listen` (one pressed before this call included).
    /// Cancel-safe: a `select!` that drops it loses no signal.
    pub(crate) async fn pressed(&mut self) {
        if self.signal.recv().await.is_none() {
            // The signal driver is gone (the runtime is shutting down): never resolve, so a
            // wait is not cut by something no one pressed.
            std::future::pending::<()>().await;
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// SIGINT to this very process; the listener's handler (installed by `listen`) takes
    /// it instead of the default action.
    fn press_ctrl_c() {
        let status = std::process::Command::new("kill")
            .args(["-INT", &std::process::id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
    }

    #[tokio::test]
    async fn a_ctrl_c_pressed_before_the_wait_polls_is_not_lost() {
        let mut interrupt = Interrupt::listen().expect("listen");
        // As when an event is being printed: the signal arrives while no one awaits it.
        press_ctrl_c();
        tokio::time::timeout(std::time::Duration::from_secs(10), interrupt.pressed())
            .await
            .expect("the earlier Ctrl-C ends the wait");
    }
}
