//! Splitting a cache answer's keys (`ns/name\n` each) into spans, eight bytes
//! at a time. Guest code runs without SIMD, so a byte-by-byte scan of an
//! answer's keys costs more than the host call that produced them; reading a
//! word per step makes the split about as cheap as building the objects.
//! Owns only this arithmetic; knows nothing of handles.

/// Where one key lies in the answer's string: `start..end`, its name starting
/// at `name` (`name == start` for a cluster-scoped key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub start: u32,
    pub name: u32,
    pub end: u32,
}

const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
const ONES: u64 = 0x0101_0101_0101_0101;

/// 0x80 in each byte of `x` that is zero, 0 elsewhere (exact: no borrow
/// crosses bytes).
fn zero_bytes(x: u64) -> u64 {
    !(((x & LOW7).wrapping_add(LOW7)) | x | LOW7)
}

/// Calls `f(position, byte)` for every `\n` and `/` in `bytes`, in order.
fn separators(bytes: &[u8], mut f: impl FnMut(usize, u8)) {
    let (newline, slash) = (ONES * u64::from(b'\n'), ONES * u64::from(b'/'));
    let mut chunks = bytes.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        let mut found = zero_bytes(word ^ newline) | zero_bytes(word ^ slash);
        while found != 0 {
            let i = at + (found.trailing_zeros() / 8) as usize;
            f(i, bytes[i]);
            found &= found - 1;
        }
        at += 8;
    }
    for (i, &b) in chunks.remainder().iter().enumerate() {
        if b == b'\n' || b == b'/' {
            f(at + i, b);
        }
    }
}

/// How many keys `keys` holds (its `\n` count).
pub(crate) fn count(keys: &str) -> usize {
    let newline = ONES * u64::from(b'\n');
    let mut chunks = keys.as_bytes().chunks_exact(8);
    let mut n = 0;
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        n += zero_bytes(word ^ newline).count_ones() as usize;
    }
    n + chunks.remainder().iter().filter(|&&b| b == b'\n').count()
}

/// Calls `f` with the span of each key in `keys` (each ended by `\n`).
pub(crate) fn spans(keys: &str, mut f: impl FnMut(Span)) {
    let (mut start, mut name) = (0u32, 0u32);
    separators(keys.as_bytes(), |i, b| {
        let i = i as u32;
        if b == b'/' {
            name = i + 1;
        } else {
            f(Span {
                start,
                name: name.max(start),
                end: i,
            });
            start = i + 1;
            name = start;
        }
    });
}

/// The position of the `/` in a single key, if it is namespaced. Keys are
/// short and the slash comes early, so a plain scan beats `memchr`'s setup.
pub(crate) fn slash(key: &str) -> Option<usize> {
    key.bytes().position(|b| b == b'/')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(keys: &str) -> Vec<(&str, &str, &str)> {
        let mut out = Vec::new();
        spans(keys, |s| {
            let key = &keys[s.start as usize..s.end as usize];
            let ns = if s.name == s.start {
                ""
            } else {
                &keys[s.start as usize..s.name as usize - 1]
            };
            out.push((key, ns, &keys[s.name as usize..s.end as usize]));
        });
        out
    }

    #[test]
    fn splits_keys_of_every_length_across_word_boundaries() {
        // Every split position relative to the 8-byte words, namespaced and not.
        for ns_len in 0..12 {
            for name_len in 1..12 {
                let ns = "n".repeat(ns_len);
                let name = "x".repeat(name_len);
                let key = if ns_len == 0 {
                    name.clone()
                } else {
                    format!("{ns}/{name}")
                };
                let keys = format!("{key}\n{key}\nc\n{key}\n");
                let got = all(&keys);
                let want = (key.as_str(), ns.as_str(), name.as_str());
                assert_eq!(got, vec![want, want, ("c", "", "c"), want], "{keys:?}");
                assert_eq!(count(&keys), 4);
            }
        }
    }

    #[test]
    fn finds_nothing_in_an_empty_answer_and_no_false_matches() {
        assert_eq!(all(""), vec![]);
        assert_eq!(count(""), 0);
        // Bytes one off the separators ('\n' = 0x0a, '/' = 0x2f) and a
        // separator followed by 0x01 (the classic borrow false positive).
        let keys = "\u{b}\u{9}.0\u{1}/\u{1}\n";
        assert_eq!(all(keys), vec![(&keys[..7], &keys[..5], "\u{1}")]);
        assert_eq!(count(keys), 1);
        assert_eq!(slash("default/web"), Some(7));
        assert_eq!(slash("node-1"), None);
    }
}
