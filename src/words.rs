//! Counts in the words of messages: `12,345 entries`, `1 entry`, as the
//! CLI and the page print them.

/// `"1 entry"`, `"12,345 entries"`.
pub(crate) fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{} {}", grouped(n), if n == 1 { one } else { many })
}

/// `n` with its thousands grouped by commas (12,345).
pub(crate) fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_grouped_by_thousands() {
        for (n, said) in [
            (0, "0"),
            (999, "999"),
            (1000, "1,000"),
            (1234567, "1,234,567"),
        ] {
            assert_eq!(grouped(n), said);
        }
    }

    #[test]
    fn one_is_counted_in_the_singular() {
        assert_eq!(counted(1, "entry", "entries"), "1 entry");
        assert_eq!(counted(0, "entry", "entries"), "0 entries");
        assert_eq!(counted(1500, "entry", "entries"), "1,500 entries");
    }
}
