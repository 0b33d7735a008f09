//! Timestamps: everything is microseconds since the Unix epoch, UTC (`Micros`).
//! This module owns reading them (numbers by magnitude, ISO 8601 strings),
//! truncating them to bucket starts, and writing the DATETIME form.

use time::{Date, Month};

pub type Micros = i64;

pub const SECOND: Micros = 1_000_000;
pub const MINUTE: Micros = 60 * SECOND;
pub const HOUR: Micros = 60 * MINUTE;
pub const DAY: Micros = 24 * HOUR;

/// BigQuery's TIMESTAMP range: 0001-01-01 00:00:00 to 9999-12-31 23:59:59.999999 UTC.
pub const MIN_MICROS: Micros = -62_135_596_800 * SECOND;
pub const MAX_MICROS: Micros = 253_402_300_800 * SECOND - 1;

/// The latest time an entry may have: the largest integer a JS number holds
/// exactly (2^53 − 1 µs, 2255-06-05T23:47:34.740991Z), so that every stored
/// time reaches JavaScript (reports, catalogs) as the number it is.
pub const MAX_ENTRY_MICROS: Micros = (1 << 53) - 1;
/// The earliest, for the same reason (1684-07-28T00:12:25.259009Z).
pub const MIN_ENTRY_MICROS: Micros = -MAX_ENTRY_MICROS;

const UNIX_EPOCH_JULIAN_DAY: i64 = 2_440_588;

fn in_range(us: i128) -> Option<Micros> {
    if (MIN_MICROS as i128..=MAX_MICROS as i128).contains(&us) {
        Some(us as Micros)
    } else {
        None
    }
}

/// An integer timestamp whose magnitude says its unit: below 1e11 seconds, below
/// 1e14 milliseconds, below 1e17 microseconds, otherwise nanoseconds.
pub fn from_integer(value: i128) -> Option<Micros> {
    let magnitude = value.unsigned_abs();
    let us = if magnitude < 100_000_000_000 {
        value.checked_mul(1_000_000)?
    } else if magnitude < 100_000_000_000_000 {
        value.checked_mul(1_000)?
    } else if magnitude < 100_000_000_000_000_000 {
        value
    } else {
        value.div_euclid(1_000)
    };
    in_range(us)
}

/// A fractional number read by the same magnitude rule; sub-microsecond digits are dropped.
pub fn from_float(value: f64) -> Option<Micros> {
    if !value.is_finite() {
        return None;
    }
    let magnitude = value.abs();
    let us = if magnitude < 1e11 {
        value * 1e6
    } else if magnitude < 1e14 {
        value * 1e3
    } else if magnitude < 1e17 {
        value
    } else {
        value / 1e3
    };
    if !(MIN_MICROS as f64..=MAX_MICROS as f64).contains(&us) {
        return None;
    }
    in_range(us.floor() as i128)
}

/// Days since 1970-01-01 of a calendar date, validating it (no 30 February).
fn days_from_civil(year: i32, month: u8, day: u8) -> Option<i64> {
    let month = Month::try_from(month).ok()?;
    let date = Date::from_calendar_date(year, month, day).ok()?;
    Some(i64::from(date.to_julian_day()) - UNIX_EPOCH_JULIAN_DAY)
}

/// Reads an ISO 8601 / RFC 3339 timestamp in the forms the contract accepts:
/// `2026-11-20`, `2026-11-20 10:00`, `2026-11-20T10:00:00`, `…:00.123456`, each
/// optionally followed by `Z`, `UTC` or an offset `±HH:MM` / `±HHMM` / `±HH`.
/// No zone means UTC. A string of digits is read as a number by magnitude.
pub fn parse_iso(text: &str) -> Result<Micros, String> {
    let s = text.trim();
    if s.is_empty() {
        return Err("empty timestamp".into());
    }
    if s.bytes().all(|b| b.is_ascii_digit())
        || (s.starts_with('-') && s.len() > 1 && s[1..].bytes().all(|b| b.is_ascii_digit()))
    {
        let n: i128 = s.parse().map_err(|_| format!("`{s}` is not a timestamp"))?;
        return from_integer(n)
            .ok_or_else(|| format!("`{s}` is outside the supported range (years 1 to 9999)"));
    }
    let mut p = Cursor {
        bytes: s.as_bytes(),
        at: 0,
    };
    let bad = || {
        format!("`{s}` is not an ISO 8601 timestamp (expected e.g. 2026-11-20T10:00:00Z, 2026-11-20 10:00:00 or 2026-11-20)")
    };
    let year = p.digits(4).ok_or_else(bad)? as i32;
    p.expect(b'-').ok_or_else(bad)?;
    let month = p.digits(2).ok_or_else(bad)? as u8;
    p.expect(b'-').ok_or_else(bad)?;
    let day = p.digits(2).ok_or_else(bad)? as u8;
    let days = days_from_civil(year, month, day)
        .ok_or_else(|| format!("`{s}` is not a valid calendar date"))?;
    let mut us: i128 = i128::from(days) * i128::from(DAY);
    if p.eat(b'T') || p.eat(b't') || p.eat(b' ') {
        let hour = p.digits(2).ok_or_else(bad)?;
        p.expect(b':').ok_or_else(bad)?;
        let minute = p.digits(2).ok_or_else(bad)?;
        let mut second = 0;
        let mut fraction_us = 0;
        if p.eat(b':') {
            second = p.digits(2).ok_or_else(bad)?;
            if p.eat(b'.') || p.eat(b',') {
                let (value, count) = p.fraction().ok_or_else(bad)?;
                fraction_us = value;
                if count == 0 {
                    return Err(bad());
                }
            }
        }
        if hour > 23 || minute > 59 || second > 60 {
            return Err(format!("`{s}` has an out-of-range time of day"));
        }
        // A leap second (:60) is read as the first instant of the next minute, as BigQuery does.
        us += i128::from(hour * 3600 + minute * 60 + second) * i128::from(SECOND)
            + i128::from(fraction_us);
        p.eat(b' ');
        let rest = &s[p.at..];
        let offset_seconds: i64 = match rest {
            "" | "Z" | "z" | "UTC" | "+00:00" => 0,
            _ => parse_offset(rest).ok_or_else(bad)?,
        };
        us -= i128::from(offset_seconds) * i128::from(SECOND);
    } else if p.at != s.len() {
        return Err(bad());
    }
    in_range(us).ok_or_else(|| format!("`{s}` is outside the supported range (years 1 to 9999)"))
}

fn parse_offset(rest: &str) -> Option<i64> {
    let bytes = rest.as_bytes();
    let sign = match bytes.first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let mut p = Cursor { bytes, at: 1 };
    let hours = p.digits(2)?;
    let minutes = if p.at == bytes.len() {
        0
    } else {
        p.eat(b':');
        p.digits(2)?
    };
    if p.at != bytes.len() || hours > 23 || minutes > 59 {
        return None;
    }
    Some(sign * (hours * 3600 + minutes * 60))
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn digits(&mut self, count: usize) -> Option<i64> {
        let slice = self.bytes.get(self.at..self.at + count)?;
        let mut value = 0i64;
        for &b in slice {
            if !b.is_ascii_digit() {
                return None;
            }
            value = value * 10 + i64::from(b - b'0');
        }
        self.at += count;
        Some(value)
    }

    /// Fractional seconds: microseconds (extra digits truncated) and the digit count.
    fn fraction(&mut self) -> Option<(i64, usize)> {
        let mut value = 0i64;
        let mut count = 0usize;
        while let Some(&b) = self.bytes.get(self.at) {
            if !b.is_ascii_digit() {
                break;
            }
            if count < 6 {
                value = value * 10 + i64::from(b - b'0');
            }
            count += 1;
            self.at += 1;
        }
        for _ in count..6 {
            value *= 10;
        }
        Some((value, count))
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.bytes.get(self.at) == Some(&b) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, b: u8) -> Option<()> {
        self.eat(b).then_some(())
    }
}

/// Start of the unit-wide bucket holding `us` (floor, so times before 1970 work too).
pub fn truncate(us: Micros, unit: Micros) -> Micros {
    us - us.rem_euclid(unit)
}

/// BigQuery's DATETIME wire form: `2026-11-20T12:00:00` (UTC, whole seconds; a
/// fraction only when there is one).
pub fn format_datetime(us: Micros) -> String {
    let days = us.div_euclid(DAY);
    let in_day = us.rem_euclid(DAY);
    let (year, month, day) = match i32::try_from(days + UNIX_EPOCH_JULIAN_DAY)
        .ok()
        .and_then(|jd| Date::from_julian_day(jd).ok())
    {
        Some(date) => (date.year(), u8::from(date.month()), date.day()),
        None => (1970, 1, 1),
    };
    let seconds = in_day / SECOND;
    let micros = in_day % SECOND;
    let mut out = format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    );
    if micros != 0 {
        out.push_str(&format!(".{micros:06}"));
    }
    out
}

/// RFC 3339 with microseconds, for messages and the demo.
pub fn format_rfc3339(us: Micros) -> String {
    let mut s = format_datetime(us);
    if !s.contains('.') {
        s.push_str(".000000");
    }
    s.push('Z');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Micros = 1_795_177_796_000_000; // 2026-11-20T12:29:56Z

    #[test]
    fn integers_by_magnitude() {
        assert_eq!(from_integer(1_795_177_796), Some(T));
        assert_eq!(from_integer(1_795_177_796_000), Some(T));
        assert_eq!(from_integer(1_795_177_796_000_000), Some(T));
        assert_eq!(from_integer(1_795_177_796_000_000_000), Some(T));
        assert_eq!(from_integer(0), Some(0));
        assert_eq!(from_integer(-1), Some(-SECOND));
        assert_eq!(from_integer(i128::from(i64::MAX) * 1000), None);
    }

    #[test]
    fn floats_by_magnitude() {
        assert_eq!(from_float(1_795_177_796.5), Some(T + 500_000));
        assert_eq!(from_float(1e300), None);
        assert_eq!(from_float(f64::NAN), None);
    }

    #[test]
    fn iso_forms() {
        assert_eq!(parse_iso("2026-11-20T12:29:56Z"), Ok(T));
        assert_eq!(parse_iso("2026-11-20T12:29:56.000001Z"), Ok(T + 1));
        assert_eq!(
            parse_iso("2026-11-20T14:29:56.123456+02:00"),
            Ok(T + 123_456)
        );
        assert_eq!(parse_iso("2026-11-20T14:29:56+0200"), Ok(T));
        assert_eq!(parse_iso("2026-11-20 12:29:56"), Ok(T));
        assert_eq!(parse_iso("2026-11-20 12:29:56 UTC"), Ok(T));
        assert_eq!(parse_iso("2026-11-20"), Ok(truncate(T, DAY)));
        assert_eq!(
            parse_iso("2026-11-20T12:29:56.1234567891Z"),
            Ok(T + 123_456)
        );
        assert_eq!(parse_iso("1795177796000000"), Ok(T));
    }

    #[test]
    fn iso_rejects() {
        for bad in [
            "",
            "yesterday",
            "2026-02-30",
            "2026-11-21T25:00:00Z",
            "2026-11-21T09:09:56+25:00",
            "2026-11-21X",
            "2026-11-21T09:09:56Zjunk",
            "99999-01-01",
        ] {
            assert!(parse_iso(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn truncation_and_datetime() {
        assert_eq!(format_datetime(truncate(T, HOUR)), "2026-11-20T12:00:00");
        assert_eq!(format_datetime(truncate(T, DAY)), "2026-11-20T00:00:00");
        assert_eq!(
            format_datetime(truncate(T + 999, MINUTE)),
            "2026-11-20T12:29:00"
        );
        assert_eq!(truncate(-1, SECOND), -SECOND);
        assert_eq!(format_datetime(-1), "1969-12-31T23:59:59.999999");
        assert_eq!(format_rfc3339(T), "2026-11-20T12:29:56.000000Z");
    }
}
