//! Gives the heap's free pages back to the OS after a list.
//!
//! A list decodes every object through transient buffers that end up
//! scattered between the objects the cache keeps; glibc's allocator keeps
//! those pages resident (it only returns memory at the top of a heap). Once
//! a list has been applied, `malloc_trim` hands every whole free page back
//! (`MADV_DONTNEED`), so the resident size is what the cache holds. It owns
//! nothing and touches no object; where the allocator is not glibc's it does
//! nothing.

/// Return free heap pages to the OS, off the caller's thread (it walks every
/// arena, a few milliseconds for a cache of 100,000 objects).
pub fn after_list() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let trim = || {
            // SAFETY: malloc_trim only walks the allocator's own free lists
            // under its locks; any thread may call it at any time.
            unsafe { libc::malloc_trim(0) };
        };
        if std::thread::Builder::new()
            .name("wink-trim".into())
            .spawn(trim)
            .is_err()
        {
            trim();
        }
    }
}
