//! When and how finishing a trace's tables uses a second thread (the
//! builder and the row links both do).

/// Below this many rows, finishing a table is quicker than starting a
/// thread for it.
pub const PARALLEL_ROWS: usize = 1 << 16;

/// Runs `a` and `b`, on two threads when `parallel`, and returns both
/// results. (The analyzers split their longest passes with it too.)
pub fn both<A: Send, B: Send>(
    parallel: bool,
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    if !parallel {
        return (a(), b());
    }
    std::thread::scope(|s| {
        let other = s.spawn(a);
        let rb = b();
        let ra = other.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        (ra, rb)
    })
}
