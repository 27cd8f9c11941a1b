//! Giving the heap's free pages back to the OS.
//!
//! glibc keeps what freed objects used (many small allocations across its
//! arenas) as resident memory until the process ends: after 50,000
//! conversations went idle the server stayed at its peak. Whatever frees
//! much at once on a timer (the task service's maintenance sweep, once its
//! idle workers stopped; the rate limiter's, once its full buckets are
//! forgotten) trims afterwards, which brings resident memory back to what
//! is live.

/// Hand the allocator's free pages back to the OS (a no-op off glibc).
pub(crate) fn give_back_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    // SAFETY: `malloc_trim` only releases free memory of the allocator; it
    // touches no memory in use and takes the allocator's own locks.
    unsafe {
        libc::malloc_trim(0);
    }
}
