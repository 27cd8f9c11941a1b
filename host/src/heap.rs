//! The server's allocator, and giving the heap's free pages back to the OS.
//!
//! The `tiny-harness` binary allocates with mimalloc ([`Allocator`]): under
//! glibc's malloc a request spent a fifth of its time in the allocator (its
//! arenas' locks, and consolidating the many small chunks a turn frees), and
//! mimalloc's per-thread free lists took that to a few percent. The library
//! does not set a global allocator itself, so a program embedding it (or a
//! bench counting its allocations) keeps its own.
//!
//! Both allocators keep freed memory resident: glibc until the process ends
//! (after 50,000 conversations went idle the server stayed at its peak),
//! mimalloc in each thread's own pages until that thread collects them,
//! which a sleeping thread never does. Whatever frees much at once on a
//! timer (the task service's maintenance sweep, once its idle workers
//! stopped; the rate limiter's, once its full buckets are forgotten) asks
//! for it back afterwards ([`give_back_freed`]): the asking thread collects
//! at once, and every Tokio worker the next time it goes to sleep
//! ([`on_worker_park`]). That brings resident memory back to what is live.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The allocator `main.rs` installs as the binary's `#[global_allocator]`.
pub type Allocator = mimalloc::MiMalloc;

// mimalloc 3's `mi_option_e` has names for neither option below
// (`libmimalloc-sys` leaves them out "for stability"), so they are numbered
// here and pinned by a test against the defaults mimalloc documents.

/// `mi_option_arena_eager_commit`: whether an arena's whole reservation is
/// committed at once. Its default (2: where the OS overcommits, as Linux
/// does) left a fresh server at 19 MB of anonymous memory after its first
/// conversation, against 4 MB under glibc; 0 commits what is used, 5 MB.
const MI_OPTION_ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;

/// `mi_option_purge_delay`: how long a freed page stays committed. At 0
/// it goes back to the OS at once, and a minute after 50,000
/// conversations went idle the server was at 1.03x its starting resident
/// memory (1.22x at the default of one second, for the pages of workers
/// that went to sleep before their delay ran out); no cost in throughput
/// could be measured.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

static MIMALLOC: AtomicBool = AtomicBool::new(false);

/// How many times [`give_back_freed`] was asked; each thread remembers up
/// to which it collected.
static ASKED: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static COLLECTED: Cell<u64> = const { Cell::new(0) };
}

/// Tune mimalloc for a server and let [`give_back_freed`] collect its
/// heap. For a binary whose global allocator is [`Allocator`], before its
/// first allocation: the first arena is committed as the options say when
/// it is made (`main.rs` calls this from an `.init_array` entry, which runs
/// before the Rust runtime allocates). Calling it again changes nothing.
pub fn use_mimalloc() {
    // SAFETY: setting an option is a store into mimalloc's option table.
    #[allow(unsafe_code)]
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_ARENA_EAGER_COMMIT, 0);
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0);
    }
    MIMALLOC.store(true, Ordering::Relaxed);
}

/// Hand the allocators' free pages back to the OS: this thread's at once,
/// each Tokio worker's when it next parks.
pub(crate) fn give_back_freed() {
    if MIMALLOC.load(Ordering::Relaxed) {
        ASKED.fetch_add(1, Ordering::Relaxed);
        collect_here();
        // Wakes a sleeping worker (it may take the task), which parks
        // again and collects.
        if tokio::runtime::Handle::try_current().is_ok() {
            tokio::spawn(async {});
        }
    }
    // SQLite allocates with the C library's malloc whatever Rust uses.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    // SAFETY: `malloc_trim` only releases free memory of the allocator; it
    // touches no memory in use and takes the allocator's own locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// For the runtime's `on_thread_park`: collect this worker's free pages if
/// [`give_back_freed`] was asked since it last did. Otherwise a load and a
/// compare, so a busy worker parking often pays nothing.
pub fn on_worker_park() {
    if MIMALLOC.load(Ordering::Relaxed) && COLLECTED.get() < ASKED.load(Ordering::Relaxed) {
        collect_here();
    }
}

/// Free this thread's empty mimalloc pages (and abandoned threads' ones).
fn collect_here() {
    COLLECTED.set(ASKED.load(Ordering::Relaxed));
    // SAFETY: `mi_collect` frees mimalloc's own free pages; it touches no
    // memory in use.
    #[allow(unsafe_code)]
    unsafe {
        libmimalloc_sys::mi_collect(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unnamed_options_are_the_ones_mimalloc_documents() {
        // mimalloc's options.c gives each option's default: 2 to commit
        // arenas eagerly where the OS overcommits, a purge delay of 1000 ms.
        // A renumbered enum would read another option's value here (no test
        // calls `use_mimalloc`, and this binary's allocator is glibc's).
        #[allow(unsafe_code)]
        // SAFETY: reading an option has no precondition.
        let (arena_eager_commit, purge_delay) = unsafe {
            (
                libmimalloc_sys::mi_option_get(MI_OPTION_ARENA_EAGER_COMMIT),
                libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY),
            )
        };
        assert_eq!((arena_eager_commit, purge_delay), (2, 1000));
    }
}
