//! Freeing big tables off the thread that goes on.

/// Drops `parts` on a thread of its own, so the caller goes on at once:
/// freeing hundreds of MB is the kernel unmapping pages for tens of ms.
/// Here, should no thread start.
pub(crate) fn free_beside<T: Send + 'static>(parts: T) {
    // A thread that fails to start drops its closure, and `parts` in it,
    // here.
    let _ = std::thread::Builder::new()
        .name("gapscope-free".into())
        .spawn(move || drop(parts));
}
