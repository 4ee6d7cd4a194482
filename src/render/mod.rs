//! Writers of [`Analysis`](gapscope_analyzers::analysis::Analysis) results:
//! they format, they never compute metrics (DESIGN.md: one direction of flow).

pub mod job;
pub mod json;
pub mod table;
pub mod text;

use gapscope_collectors::trace::Ns;

/// `ns` as milliseconds with two decimals: `12.34`.
pub fn ms(ns: Ns) -> String {
    format!("{:.2}", ns as f64 / 1e6)
}

/// A duration with a unit that keeps 3 significant-ish digits: `850 ns`,
/// `12.3 µs`, `4.56 ms`, `1.23 s`.
pub fn human(ns: Ns) -> String {
    let a = ns.unsigned_abs() as f64;
    let v = ns as f64;
    if a < 1e3 {
        format!("{ns} ns")
    } else if a < 1e6 {
        format!("{:.1} µs", v / 1e3)
    } else if a < 1e9 {
        format!("{:.2} ms", v / 1e6)
    } else {
        format!("{:.2} s", v / 1e9)
    }
}

/// `part` as a percentage of `whole` with one decimal: `45.6%` (`-` when
/// `whole` is 0).
pub fn pct(part: Ns, whole: Ns) -> String {
    if whole <= 0 {
        return "-".to_string();
    }
    format!("{:.1}%", part as f64 * 100.0 / whole as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(ms(12_345_678), "12.35");
        assert_eq!(human(850), "850 ns");
        assert_eq!(human(12_340), "12.3 µs");
        assert_eq!(human(4_560_000), "4.56 ms");
        assert_eq!(human(1_230_000_000), "1.23 s");
        assert_eq!(pct(1, 4), "25.0%");
        assert_eq!(pct(1, 0), "-");
    }
}
