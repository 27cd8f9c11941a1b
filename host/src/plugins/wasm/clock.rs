//! The clocks a component reads: the host's real ones when the plugin asked
//! for `clocks` and was granted them, else a sandbox clock that reveals
//! nothing about real time.
//!
//! The sandbox clock is virtual and per instance. Its monotonic reading
//! starts at one hour when the instance is created and moves only when the
//! guest waits on it: a sleep (a `monotonic-clock` pollable that fires) moves it
//! forward by exactly the time slept, and nothing else does, so computation
//! takes no time as far as the guest can tell, and two runs of the same
//! guest read the same values. Its wall clock reads 2000-01-01T00:00:00Z
//! plus that virtual time. Sleeps still take real time: a guest that sleeps
//! 100 ms is woken after 100 ms, like any other, and the call's deadline
//! cuts a sleep that outlasts it.
//!
//! `wasi:clocks/monotonic-clock` is implemented here, in place of
//! wasmtime-wasi's: its pollables wait in real time but, to advance a
//! virtual clock, the host must see each wait complete.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use wasmtime::component::{HasData, Resource, ResourceTable};
use wasmtime_wasi::p2::bindings::clocks::monotonic_clock;
use wasmtime_wasi::p2::{DynPollable, Pollable, subscribe};
use wasmtime_wasi::{HostMonotonicClock, HostWallClock};

/// The sandbox wall clock's reading when an instance starts:
/// 2000-01-01T00:00:00Z, a date no guest will mistake for now.
pub const SANDBOX_EPOCH_SECS: u64 = 946_684_800;

/// The sandbox monotonic clock's reading when an instance starts, in
/// nanoseconds: one hour. Not 0, which runtimes take for "no time" (Go's
/// refuses to start: "nanotime returning zero"), and far enough from it
/// that a guest subtracting a duration from "now" does not underflow.
pub const SANDBOX_MONOTONIC_START_NS: u64 = 3_600_000_000_000;

/// A component instance's clock, shared by its WASI context and the
/// pollables it hands out.
#[derive(Clone)]
pub(crate) struct SandboxClock(Arc<Kind>);

enum Kind {
    /// The host's clocks; monotonic readings count from the instance's start.
    Real { origin: Instant },
    /// The monotonic reading: [`SANDBOX_MONOTONIC_START_NS`] plus the
    /// nanoseconds the guest has waited since the instance started.
    Virtual { now: AtomicU64 },
}

impl SandboxClock {
    /// The host's real clocks when `real`, else a virtual clock at 0.
    pub(crate) fn new(real: bool) -> Self {
        SandboxClock(Arc::new(if real {
            Kind::Real {
                origin: Instant::now(),
            }
        } else {
            Kind::Virtual {
                now: AtomicU64::new(SANDBOX_MONOTONIC_START_NS),
            }
        }))
    }

    /// The monotonic reading, in nanoseconds.
    fn now_ns(&self) -> u64 {
        match &*self.0 {
            Kind::Real { origin } => u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX),
            Kind::Virtual { now } => now.load(Ordering::Acquire),
        }
    }

    /// A wait that ended at monotonic reading `at`: a virtual clock moves
    /// there (never back), a real one has moved on its own.
    fn reached(&self, at: u64) {
        if let Kind::Virtual { now } = &*self.0 {
            now.fetch_max(at, Ordering::AcqRel);
        }
    }

    /// A pollable that fires `wait` from now (in real time), at monotonic
    /// reading now + `wait`.
    fn deadline(&self, wait: Duration) -> ClockDeadline {
        let wait_ns = u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX);
        ClockDeadline {
            clock: self.clone(),
            at: self.now_ns().saturating_add(wait_ns),
            // Too far to represent: wait forever (the call's deadline ends
            // it) rather than trap.
            real: tokio::time::Instant::now().checked_add(wait),
            yielded: !wait.is_zero(),
        }
    }
}

impl HostWallClock for SandboxClock {
    fn resolution(&self) -> Duration {
        Duration::from_nanos(1)
    }

    fn now(&self) -> Duration {
        match &*self.0 {
            Kind::Real { .. } => SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default(),
            Kind::Virtual { now } => {
                let waited = now
                    .load(Ordering::Acquire)
                    .saturating_sub(SANDBOX_MONOTONIC_START_NS);
                Duration::from_secs(SANDBOX_EPOCH_SECS) + Duration::from_nanos(waited)
            }
        }
    }
}

impl HostMonotonicClock for SandboxClock {
    fn resolution(&self) -> u64 {
        1
    }

    fn now(&self) -> u64 {
        self.now_ns()
    }
}

/// A `monotonic-clock` pollable.
struct ClockDeadline {
    clock: SandboxClock,
    /// The monotonic reading at which it fires.
    at: u64,
    /// When it fires in real time; `None`: never.
    real: Option<tokio::time::Instant>,
    /// For a zero wait: whether it has yielded once already. A guest
    /// polling in a loop with a zero timeout (wasi-libc's `poll(2)` does)
    /// must still let the executor run, as wasmtime-wasi's own clock does.
    yielded: bool,
}

#[wasmtime_wasi::async_trait]
impl Pollable for ClockDeadline {
    async fn ready(&mut self) {
        if !self.yielded {
            self.yielded = true;
            tokio::task::yield_now().await;
        }
        if self.clock.now_ns() < self.at {
            match self.real {
                Some(real) => tokio::time::sleep_until(real).await,
                None => std::future::pending().await,
            }
        }
        self.clock.reached(self.at);
    }
}

/// `wasi:clocks/monotonic-clock` over a store's [`SandboxClock`].
pub(crate) struct ClockView<'a> {
    pub(crate) clock: &'a SandboxClock,
    pub(crate) table: &'a mut ResourceTable,
}

/// Names [`ClockView`] for `monotonic_clock::add_to_linker`.
pub(crate) struct SandboxClocks;

impl HasData for SandboxClocks {
    type Data<'a> = ClockView<'a>;
}

impl ClockView<'_> {
    fn subscribe(&mut self, wait: Duration) -> wasmtime::Result<Resource<DynPollable>> {
        let deadline = self.table.push(self.clock.deadline(wait))?;
        subscribe(self.table, deadline)
    }
}

impl monotonic_clock::Host for ClockView<'_> {
    fn now(&mut self) -> wasmtime::Result<monotonic_clock::Instant> {
        Ok(self.clock.now_ns())
    }

    fn resolution(&mut self) -> wasmtime::Result<monotonic_clock::Duration> {
        Ok(1)
    }

    fn subscribe_instant(
        &mut self,
        when: monotonic_clock::Instant,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        let wait = when.saturating_sub(self.clock.now_ns());
        self.subscribe(Duration::from_nanos(wait))
    }

    fn subscribe_duration(
        &mut self,
        wait: monotonic_clock::Duration,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        self.subscribe(Duration::from_nanos(wait))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_virtual_clock_moves_only_by_what_the_guest_waited() {
        const START: u64 = SANDBOX_MONOTONIC_START_NS;
        let clock = SandboxClock::new(false);
        assert_eq!(clock.now_ns(), START);
        assert_eq!(
            HostWallClock::now(&clock),
            Duration::from_secs(SANDBOX_EPOCH_SECS)
        );
        // Real time passing is invisible...
        tokio::time::advance(Duration::from_secs(5)).await;
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(clock.now_ns(), START);
        // ...a wait is seen exactly, once it is over.
        let mut nap = clock.deadline(Duration::from_millis(250));
        assert_eq!(clock.now_ns(), START, "not before it fires");
        nap.ready().await;
        assert_eq!(clock.now_ns(), START + 250_000_000);
        nap.ready().await;
        assert_eq!(
            clock.now_ns(),
            START + 250_000_000,
            "firing again moves nothing"
        );
        assert_eq!(
            HostWallClock::now(&clock),
            Duration::from_secs(SANDBOX_EPOCH_SECS) + Duration::from_millis(250)
        );
        // A zero wait is ready at once and moves nothing.
        clock.deadline(Duration::ZERO).ready().await;
        assert_eq!(clock.now_ns(), START + 250_000_000);
    }

    #[tokio::test(start_paused = true)]
    async fn a_virtual_sleep_still_takes_real_time() {
        let clock = SandboxClock::new(false);
        let started = tokio::time::Instant::now();
        clock.deadline(Duration::from_secs(3)).ready().await;
        assert_eq!(started.elapsed(), Duration::from_secs(3));
    }

    #[test]
    fn a_real_clock_reads_the_host() {
        let clock = SandboxClock::new(true);
        let wall = HostWallClock::now(&clock);
        let host = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .expect("after 1970");
        assert!(host.saturating_sub(wall) < Duration::from_secs(5));
        let first = clock.now_ns();
        std::thread::sleep(Duration::from_millis(2));
        assert!(clock.now_ns() >= first + 2_000_000);
    }
}
