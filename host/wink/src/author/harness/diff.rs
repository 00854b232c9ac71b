//! A line diff for `wink test`: expected lines missing are marked `-`,
//! lines that came instead `+`, lines in both (in order) ` `. A longest
//! common subsequence; cases are small.

/// The difference between `expected` and `got`, one line each, indented.
pub fn lines(expected: &[String], got: &[String]) -> String {
    let (n, m) = (expected.len(), got.len());
    // lcs[i][j]: the common length of expected[i..] and got[j..].
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if expected[i] == got[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut out = String::new();
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && expected[i] == got[j] {
            out.push_str(&format!("    {}\n", expected[i]));
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push_str(&format!("  + {}\n", got[j]));
            j += 1;
        } else {
            out.push_str(&format!("  - {}\n", expected[i]));
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_what_is_missing_and_what_came_instead() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let d = lines(&s(&["a", "b", "c"]), &s(&["a", "x", "c", "d"]));
        assert_eq!(d, "    a\n  + x\n  - b\n    c\n  + d\n");
    }
}
