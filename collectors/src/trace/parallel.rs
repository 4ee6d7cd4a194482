//! When and how work uses a second thread: finishing a trace's tables
//! (the builder, the row links) and the analyzers' longest passes.

/// Below this many rows (or detector pieces), the work is quicker done on
/// one thread than a second thread is started for it.
pub const PARALLEL_ROWS: usize = 1 << 16;

/// Runs `a` and `b`, on two threads when `parallel`, and returns both
/// results.
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
