//! Freeing big tables off the thread that goes on.

/// Below this many rows (the trace's, or a detector table's) parts are
/// freed in place: a thread costs more than freeing them, and one still
/// running when the caller is done shows up as a leak to a leak checker.
pub(crate) const BIG_ROWS: usize = 1 << 16;

/// Drops `parts` on a thread of its own when `rows` (how many rows they
/// hold, roughly) is at least [`BIG_ROWS`], so the caller goes on at once:
/// freeing hundreds of MB is the kernel unmapping pages for tens of ms.
/// Here otherwise, or should no thread start.
pub(crate) fn free_beside<T: Send + 'static>(parts: T, rows: usize) {
    if rows < BIG_ROWS {
        drop(parts);
        return;
    }
    // A thread that fails to start drops its closure, and `parts` in it,
    // here.
    let _ = std::thread::Builder::new()
        .name("gapscope-free".into())
        .spawn(move || drop(parts));
}
