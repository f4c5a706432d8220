//! Normalising and comparing outputs, and rendering readable diffs.

/// Replaces every `0x` followed by hex digits with `0xADDR`, so addresses in
/// libomptarget's messages compare equal across runs and runtimes.
pub fn normalise_addresses(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i + 1 < bytes.len() {
        let starts_hex = bytes[i] == b'0'
            && bytes[i + 1] == b'x'
            && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
            // Not the tail of a longer word/number such as "10x3".
            && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric());
        if starts_hex {
            let mut j = i + 2;
            while j < bytes.len() && bytes[j].is_ascii_hexdigit() {
                j += 1;
            }
            out.push_str(&text[copied..i]);
            out.push_str("0xADDR");
            copied = j;
            i = j;
        } else {
            i += 1;
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// A unified-style line diff of `expected` (reference, `-`) against `actual`
/// (ours, `+`), with `context` unchanged lines around each change. Empty when
/// equal.
pub fn line_diff(expected: &str, actual: &str, context: usize) -> String {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    if a == b && expected.ends_with('\n') == actual.ends_with('\n') {
        return String::new();
    }
    // Outputs are small; cap the quadratic table and fall back to listing.
    if a.len().saturating_mul(b.len()) > 4_000_000 {
        let mut out = String::from("(too long to diff; reference then ours)\n");
        a.iter().for_each(|l| out.push_str(&format!("-{l}\n")));
        b.iter().for_each(|l| out.push_str(&format!("+{l}\n")));
        return out;
    }
    // lcs[i][j] = LCS length of a[i..] and b[j..].
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut ops: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', a[i]));
            i += 1;
        } else {
            ops.push(('+', b[j]));
            j += 1;
        }
    }
    let changed: Vec<bool> = ops.iter().map(|(k, _)| *k != ' ').collect();
    let near_change = |idx: usize| {
        let lo = idx.saturating_sub(context);
        let hi = (idx + context + 1).min(ops.len());
        changed[lo..hi].iter().any(|c| *c)
    };
    let mut out = String::new();
    let mut skipped = false;
    for (idx, (kind, line)) in ops.iter().enumerate() {
        if near_change(idx) {
            if skipped {
                out.push_str("  ...\n");
                skipped = false;
            }
            out.push(*kind);
            out.push_str(line);
            out.push('\n');
        } else {
            skipped = true;
        }
    }
    if out.is_empty() {
        out.push_str("(outputs differ only in the final newline)\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_normalised() {
        assert_eq!(
            normalise_addresses("at 0x00007ffd12ab (4 bytes), 0x1 and 10x3 0x"),
            "at 0xADDR (4 bytes), 0xADDR and 10x3 0x"
        );
    }

    #[test]
    fn diff_marks_changes() {
        let d = line_diff("a\nb\nc\n", "a\nB\nc\n", 1);
        assert_eq!(d, " a\n-b\n+B\n c\n");
        assert!(line_diff("x\n", "x\n", 3).is_empty());
    }
}
