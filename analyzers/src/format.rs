//! How numbers read, once for every hint, table and message: durations,
//! shares, counts and sizes; and how long names are shortened for tables.
//!
//! | function | reads | used by |
//! | --- | --- | --- |
//! | [`duration`] | `850 ns`, `12.3 µs`, `4.56 ms`, `1.23 s` | hints, tables |
//! | [`duration_coarse`] | `12.0 ms`, `850 µs`, `40 ns` (about 2 significant digits) | job findings' sentences |
//! | [`duration_signed`] | `+1.20 ms`, `-850 ns`, `0 ns` | diffs |
//! | [`duration_exact`] | `1.234 s`, `12.5 ms`, `40 µs`, `7 ns` (no trailing zeros) | messages about times the user typed |
//! | [`ms`] | `12.35` (milliseconds, two decimals, no unit) | table columns headed `ms` |
//! | [`percent`] | `45.6%` (`-` of nothing) | tables |
//! | [`percent_whole`] | `25 %` (`0 %` of nothing) | hint sentences |
//! | [`times`] | `once`, `3 times` | hint sentences |
//! | [`bytes`] | `512 bytes`, `1.5 KiB`, `12.0 MiB`, `1.25 GiB` | sizes of files and memory |
//! | [`short_kernel_name`] | `foo<int>` for `void foo<int>(float*, int)`, cut to [`KERNEL_NAME_CHARS`] with `…` | kernel and operator names in tables |

use gapscope_collectors::trace::Ns;

/// A duration with a unit that keeps about 3 significant digits: `850 ns`,
/// `12.3 µs`, `4.56 ms`, `1.23 s`.
pub fn duration(ns: Ns) -> String {
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

/// A duration to about 2 significant digits, for sentences that compare
/// ranks: `12.0 ms`, `850 µs`, `40 ns`, `1.23 s`.
pub fn duration_coarse(ns: Ns) -> String {
    let a = ns.unsigned_abs() as f64;
    if a >= 1e9 {
        format!("{:.2} s", ns as f64 / 1e9)
    } else if a >= 1e6 {
        format!("{:.1} ms", ns as f64 / 1e6)
    } else if a >= 1e3 {
        format!("{:.0} µs", ns as f64 / 1e3)
    } else {
        format!("{ns} ns")
    }
}

/// A change of duration with its sign: `+1.20 ms`, `-850 ns`, `0 ns`.
pub fn duration_signed(ns: Ns) -> String {
    if ns > 0 {
        format!("+{}", duration(ns))
    } else {
        duration(ns)
    }
}

/// A duration to 3 decimals of its unit, trailing zeros dropped, for times
/// a user typed or must type back: `1.234 s`, `12.5 ms`, `40 µs`, `7 ns`.
pub fn duration_exact(ns: Ns) -> String {
    let a = ns.unsigned_abs() as f64;
    let (v, unit) = if a >= 1e9 {
        (ns as f64 / 1e9, "s")
    } else if a >= 1e6 {
        (ns as f64 / 1e6, "ms")
    } else if a >= 1e3 {
        (ns as f64 / 1e3, "µs")
    } else {
        return format!("{ns} ns");
    };
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s} {unit}")
}

/// `ns` as milliseconds with two decimals and no unit: `12.35`.
pub fn ms(ns: Ns) -> String {
    format!("{:.2}", ns as f64 / 1e6)
}

/// `part` as a percentage of `whole` with one decimal: `45.6%` (`-` when
/// `whole` is 0).
pub fn percent(part: Ns, whole: Ns) -> String {
    if whole <= 0 {
        return "-".to_string();
    }
    format!("{:.1}%", part as f64 * 100.0 / whole as f64)
}

/// `part` as a whole percentage of `whole`, as hint sentences write it:
/// `25 %` (`0 %` when `whole` is 0).
pub fn percent_whole(part: Ns, whole: Ns) -> String {
    if whole <= 0 {
        return "0 %".into();
    }
    format!("{:.0} %", 100.0 * part as f64 / whole as f64)
}

/// `once`, `2 times`.
pub fn times(n: usize) -> String {
    if n == 1 {
        "once".to_string()
    } else {
        format!("{n} times")
    }
}

/// The items as a list in prose: `a`, `a and b`, `a, b and c` (empty for
/// none).
pub fn and_list(items: impl IntoIterator<Item = String>) -> String {
    let items: Vec<String> = items.into_iter().collect();
    match items.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The article before the number `n` read aloud: `an` 8-, 11-, 18-, 80-
/// (eight, eleven, eighteen, eighty...), `a` otherwise.
pub fn a_or_an(n: u64) -> &'static str {
    let eleven_or_eighteen = |m: u64| m == 11 || m == 18;
    let mut lead = n;
    // 11,000 is "eleven thousand": the leading group decides.
    while lead >= 1000 {
        lead /= 1000;
    }
    if n.to_string().starts_with('8') || eleven_or_eighteen(lead) {
        "an"
    } else {
        "a"
    }
}

/// `n` and the noun for it: `count(1, "call", "calls")` is `1 call`,
/// `count(3, "call", "calls")` is `3 calls`.
pub fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A size in binary units: `512 bytes`, `1.5 KiB`, `12.0 MiB`, `1.25 GiB`.
pub fn bytes(n: u64) -> String {
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;
    match n {
        n if n >= GIB => format!("{:.2} GiB", n as f64 / GIB as f64),
        n if n >= MIB => format!("{:.1} MiB", n as f64 / MIB as f64),
        n if n >= KIB => format!("{:.1} KiB", n as f64 / KIB as f64),
        n => format!("{n} bytes"),
    }
}

/// Kernel (and operator) names in tables are cut to this many characters
/// (the full name is the report's hover text, and stays whole in JSON).
pub const KERNEL_NAME_CHARS: usize = 90;

/// A readable kernel name: no `void `, no trailing argument list (the last
/// balanced `(...)`, so `(anonymous namespace)` inside the name stays),
/// long template arguments cut.
pub fn short_kernel_name(name: &str) -> String {
    let n = name.strip_prefix("void ").unwrap_or(name).trim_end();
    let n = match trailing_args(n) {
        Some(i) if i > 0 => n[..i].trim_end(),
        _ => n,
    };
    if n.chars().count() <= KERNEL_NAME_CHARS {
        return n.to_string();
    }
    let cut: String = n.chars().take(KERNEL_NAME_CHARS - 1).collect();
    format!("{cut}…")
}

/// Byte index of the `(` that opens the parenthesised group `s` ends with.
fn trailing_args(s: &str) -> Option<usize> {
    if !s.ends_with(')') {
        return None;
    }
    let mut depth = 0usize;
    for (i, c) in s.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_join_with_commas_and_a_last_and() {
        let l = |v: &[&str]| and_list(v.iter().map(|s| s.to_string()));
        assert_eq!(l(&[]), "");
        assert_eq!(l(&["a"]), "a");
        assert_eq!(l(&["a", "b"]), "a and b");
        assert_eq!(l(&["a", "b", "c"]), "a, b and c");
    }

    #[test]
    fn numbers_take_the_article_they_are_read_with() {
        for n in [8, 11, 18, 80, 83, 800, 8192, 11_000, 18_500] {
            assert_eq!(a_or_an(n), "an", "{n}");
        }
        for n in [1, 2, 4, 16, 64, 100, 110, 180, 1100, 12_000] {
            assert_eq!(a_or_an(n), "a", "{n}");
        }
    }

    #[test]
    fn counts_take_the_singular_for_one() {
        assert_eq!(count(1, "call", "calls"), "1 call");
        assert_eq!(count(0, "call", "calls"), "0 calls");
        assert_eq!(count(2, "kernel launches", "kernels launch"), "2 kernels launch");
    }

    #[test]
    fn kernel_names_shortened() {
        assert_eq!(short_kernel_name("void foo<int>(float*, int)"), "foo<int>");
        assert_eq!(
            short_kernel_name("void at::native::(anonymous namespace)::k<float>(at::TensorIterator (*)[2])"),
            "at::native::(anonymous namespace)::k<float>"
        );
        assert_eq!(
            short_kernel_name("Memcpy HtoD (Pageable -> Device)"),
            "Memcpy HtoD"
        );
        assert_eq!(
            short_kernel_name("volta_sgemm_128x64_nn"),
            "volta_sgemm_128x64_nn"
        );
        let long = format!("k{}", "x".repeat(200));
        assert_eq!(short_kernel_name(&long).chars().count(), KERNEL_NAME_CHARS);
    }

    #[test]
    fn durations() {
        assert_eq!(duration(800), "800 ns");
        assert_eq!(duration(12_340), "12.3 µs");
        assert_eq!(duration(45_600), "45.6 µs");
        assert_eq!(duration(1_234_567), "1.23 ms");
        assert_eq!(duration(1_230_000_000), "1.23 s");
        assert_eq!(duration(-4_560_000), "-4.56 ms");
        assert_eq!(duration(i64::MIN), "-9223372036.85 s");
        assert_eq!(duration_coarse(12_040_000), "12.0 ms");
        assert_eq!(duration_coarse(850_400), "850 µs");
        assert_eq!(duration_coarse(40), "40 ns");
        assert_eq!(duration_signed(1_200_000), "+1.20 ms");
        assert_eq!(duration_signed(-850), "-850 ns");
        assert_eq!(duration_signed(0), "0 ns");
        assert_eq!(duration_exact(1_234_000_000), "1.234 s");
        assert_eq!(duration_exact(12_500_000), "12.5 ms");
        assert_eq!(duration_exact(40_000), "40 µs");
        assert_eq!(duration_exact(7), "7 ns");
        assert_eq!(ms(12_345_678), "12.35");
    }

    #[test]
    fn shares_counts_sizes() {
        assert_eq!(percent(1, 4), "25.0%");
        assert_eq!(percent(1, 0), "-");
        assert_eq!(percent_whole(1, 4), "25 %");
        assert_eq!(percent_whole(1, 0), "0 %");
        assert_eq!(times(1), "once");
        assert_eq!(times(3), "3 times");
        assert_eq!(bytes(512), "512 bytes");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(12 << 20), "12.0 MiB");
        assert_eq!(bytes(5 << 28), "1.25 GiB");
    }
}
