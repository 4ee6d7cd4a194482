//! Exact decimal parsing of Kineto's microsecond numbers into integer ns.
//!
//! Kineto writes `"ts": 1712195495519689.047` (µs since the epoch with ns
//! digits). Near 1.7e15 an `f64` steps by 0.25 µs, so going through `f64`
//! loses up to ~125 ns. This module reads the
//! number's text instead: `digits × 10^exponent`, scaled by 1000 and rounded
//! half away from zero on the first dropped digit, in checked integer
//! arithmetic.

/// Converts the JSON text of a microsecond number (`123`, `1.5`, `-2`,
/// `1.5e3`, or the same inside quotes) to whole nanoseconds. `None` when the
/// text is not a number or the result does not fit an `i64`.
///
/// ```text
/// "1712195495519689.047" -> 1712195495519689047
/// "0.0005"               -> 1   (half rounds away from zero)
/// "1e-3"                 -> 1
/// ```
pub fn micros_to_ns(text: &[u8]) -> Option<i64> {
    if let Some(ns) = plain_micros_to_ns(text) {
        return Some(ns);
    }
    let text = trim(text);
    let text = strip_quotes(text);
    let dec = Decimal::parse(text)?;
    dec.scaled_to_integer(3)
}

/// The usual form, `digits[.ddd]` (no sign, at most 3 fraction digits, at
/// most 16 integer digits: µs since the epoch), read in one pass; `None`
/// for anything else, which [`micros_to_ns`] reads in full.
#[inline]
fn plain_micros_to_ns(text: &[u8]) -> Option<i64> {
    let mut int: u64 = 0;
    let mut i = 0;
    while let Some(&d @ b'0'..=b'9') = text.get(i) {
        int = int.wrapping_mul(10).wrapping_add(u64::from(d - b'0'));
        i += 1;
    }
    // 16 digits × 1000 + 999 stays below u64::MAX, so nothing wrapped.
    if i == 0 || i > 16 {
        return None;
    }
    let frac = match &text[i..] {
        [] => 0,
        [b'.', f @ ..] if f.len() <= 3 && f.iter().all(u8::is_ascii_digit) => {
            // `1.5` is 1500 ns, `1.05` 1050, `1.005` 1005, `1.` 1000.
            f.iter()
                .chain([b'0'; 3].iter())
                .take(3)
                .fold(0, |n, &d| n * 10 + u64::from(d - b'0'))
        }
        _ => return None,
    };
    i64::try_from(int * 1000 + frac).ok()
}

fn trim(t: &[u8]) -> &[u8] {
    let start = t.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(t.len());
    let end = t
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &t[start..end]
}

fn strip_quotes(t: &[u8]) -> &[u8] {
    match t {
        [b'"', inner @ .., b'"'] => trim(inner),
        _ => t,
    }
}

/// A decimal number split into its digits and a power of ten:
/// value = sign × int(`int_digits` ++ `frac_digits`) × 10^(exp − frac len).
struct Decimal<'t> {
    negative: bool,
    int_digits: &'t [u8],
    frac_digits: &'t [u8],
    exp: i64,
}

impl<'t> Decimal<'t> {
    fn parse(t: &'t [u8]) -> Option<Self> {
        let (negative, t) = match t {
            [b'-', rest @ ..] => (true, rest),
            [b'+', rest @ ..] => (false, rest),
            _ => (false, t),
        };
        let int_len = t.iter().take_while(|b| b.is_ascii_digit()).count();
        let (int_digits, t) = t.split_at(int_len);
        let (frac_digits, t) = match t {
            [b'.', rest @ ..] => {
                let n = rest.iter().take_while(|b| b.is_ascii_digit()).count();
                (&rest[..n], &rest[n..])
            }
            _ => (&t[..0], t),
        };
        if int_digits.is_empty() && frac_digits.is_empty() {
            return None;
        }
        let exp = match t {
            [] => 0,
            [b'e' | b'E', rest @ ..] => parse_exponent(rest)?,
            _ => return None,
        };
        Some(Decimal {
            negative,
            int_digits,
            frac_digits,
            exp,
        })
    }

    /// The value × 10^`shift`, rounded half away from zero to an integer.
    fn scaled_to_integer(&self, shift: i64) -> Option<i64> {
        let digits = || {
            self.int_digits
                .iter()
                .chain(self.frac_digits)
                .map(|b| u64::from(b - b'0'))
        };
        let n = (self.int_digits.len() + self.frac_digits.len()) as i64;
        // How many leading digits form the integer part after scaling.
        let scale = self.exp + shift - self.frac_digits.len() as i64;
        let keep = n + scale;
        let mut acc: u64 = 0;
        for d in digits().take(keep.clamp(0, n) as usize) {
            acc = acc.checked_mul(10)?.checked_add(d)?;
        }
        if scale > 0 {
            if acc != 0 {
                acc = acc.checked_mul(10u64.checked_pow(u32::try_from(scale).ok()?)?)?;
            }
        } else if (0..n).contains(&keep) && digits().nth(keep as usize)? >= 5 {
            acc = acc.checked_add(1)?;
        }
        let v = i64::try_from(acc).ok()?;
        Some(if self.negative { -v } else { v })
    }
}

/// An exponent's digits, saturated far beyond any meaningful range (the
/// scaling then overflows to `None` or rounds to 0 as it should).
fn parse_exponent(t: &[u8]) -> Option<i64> {
    let (neg, t) = match t {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, t),
    };
    if t.is_empty() || !t.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let v = t
        .iter()
        .fold(0i64, |a, &b| (a * 10 + i64::from(b - b'0')).min(1_000_000));
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::micros_to_ns;

    fn ns(s: &str) -> Option<i64> {
        micros_to_ns(s.as_bytes())
    }

    #[test]
    fn keeps_nanosecond_digits_exactly() {
        assert_eq!(ns("1712195495519689.047"), Some(1712195495519689047));
        assert_eq!(ns("1712195495519695.812"), Some(1712195495519695812));
        assert_eq!(ns("63.813"), Some(63813));
        assert_eq!(ns("53.090"), Some(53090));
        assert_eq!(ns("1623142623460111"), Some(1623142623460111000));
        assert_eq!(ns("0"), Some(0));
        assert_eq!(ns("7."), Some(7000));
        assert_eq!(ns(".5"), Some(500));
    }

    #[test]
    fn rounds_half_away_from_zero_beyond_the_third_digit() {
        assert_eq!(ns("1.0004"), Some(1000));
        assert_eq!(ns("1.0005"), Some(1001));
        assert_eq!(ns("1.00049999"), Some(1000));
        assert_eq!(ns("0.0005"), Some(1));
        assert_eq!(ns("0.00049"), Some(0));
        assert_eq!(ns("-1.0005"), Some(-1001));
        assert_eq!(ns("1712195495519689.0479"), Some(1712195495519689048));
    }

    #[test]
    fn handles_exponents_signs_and_quotes() {
        assert_eq!(ns("1.5e3"), Some(1_500_000));
        assert_eq!(ns("1.5E+3"), Some(1_500_000));
        assert_eq!(ns("1712195495519689047e-3"), Some(1712195495519689047));
        assert_eq!(ns("1e-3"), Some(1));
        assert_eq!(ns("1e-4"), Some(0));
        assert_eq!(ns("5e-4"), Some(1));
        assert_eq!(ns("0e999999999"), Some(0));
        assert_eq!(ns("1e-999999999"), Some(0));
        assert_eq!(ns("-42"), Some(-42_000));
        assert_eq!(ns("-0.0"), Some(0));
        assert_eq!(ns(" \"12.5\" "), Some(12_500));
    }

    #[test]
    fn rejects_non_numbers_and_overflow() {
        for bad in [
            "", "-", ".", "e3", "1e", "1e+", "abc", "1.2.3", "null", "true", "\"\"", "1x", "--1", "1e3.5",
        ] {
            assert_eq!(ns(bad), None, "{bad:?}");
        }
        assert_eq!(ns("9223372036854775.807"), Some(i64::MAX));
        assert_eq!(ns("9223372036854775.808"), None);
        assert_eq!(ns("1e300"), None);
        assert_eq!(ns("99999999999999999999999"), None);
    }

    /// The one-pass reading of the usual form agrees with the full one, on
    /// the forms it takes and at its limits.
    #[test]
    fn the_plain_form_reads_as_the_full_reading_does() {
        let full = |s: &str| {
            let d = super::Decimal::parse(s.as_bytes())?;
            d.scaled_to_integer(3)
        };
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let int = x % 10_000_000_000_000_000;
            for frac in ["", ".", ".5", ".05", ".123", ".007", ".1234", "e3", ".5e1"] {
                let s = format!("{int}{frac}");
                let plain = super::plain_micros_to_ns(s.as_bytes());
                if let Some(v) = plain {
                    assert_eq!(Some(v), full(&s), "{s}");
                }
                assert_eq!(ns(&s), full(&s), "{s}");
            }
        }
        assert_eq!(
            super::plain_micros_to_ns(b"999999999999999.999"),
            Some(999_999_999_999_999_999)
        );
        assert_eq!(super::plain_micros_to_ns(b"9223372036854775.807"), Some(i64::MAX));
        assert_eq!(super::plain_micros_to_ns(b"9223372036854775.808"), None);
        assert_eq!(super::plain_micros_to_ns(b"9999999999999999.999"), None);
        assert_eq!(super::plain_micros_to_ns(b"10000000000000000"), None);
        assert_eq!(super::plain_micros_to_ns(b".5"), None);
        assert_eq!(super::plain_micros_to_ns(b"\"1.5\""), None);
        assert_eq!(ns("\"1.5\""), Some(1500));
    }

    /// Random ns values written the ways Kineto and other writers do
    /// (plain, fewer/more fraction digits, exponent form) read back exactly.
    #[test]
    fn round_trips_random_values() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = (x % 4_000_000_000_000_000_000) as i64;
            let (us, frac) = (v / 1000, v % 1000);
            assert_eq!(ns(&format!("{us}.{frac:03}")), Some(v));
            assert_eq!(ns(&format!("{us}.{frac:03}4999")), Some(v));
            assert_eq!(ns(&format!("{us}.{frac:03}5")), Some(v + 1));
            assert_eq!(ns(&format!("-{us}.{frac:03}")), Some(-v));
            assert_eq!(ns(&format!("{v}e-3")), Some(v));
            assert_eq!(ns(&format!("{us}{frac:03}0E-4")), Some(v));
            if frac == 0 {
                assert_eq!(ns(&us.to_string()), Some(v));
            }
        }
    }
}
