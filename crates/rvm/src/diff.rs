//! Page diffing: which bytes of a dirty page differ from its pre-image.
//!
//! Equal 64-byte blocks are skipped with one slice comparison; inside an unequal block bytes
//! are compared one by one. Runs of changed bytes separated by fewer than [`MERGE_GAP`] equal
//! bytes become one range, since a separate record would cost a 32-byte header. Ranges never
//! cross a page boundary.

use super::log::Range;

/// Changed runs closer than this many bytes are merged into one range (a record header is 32).
pub(crate) const MERGE_GAP: usize = 32;
const BLOCK: usize = 64;

/// Appends to `out` the changed ranges of the page at segment offset `base`, whose current
/// bytes are `now` and pre-image `before` (same length).
pub(crate) fn page_ranges(base: u64, now: &[u8], before: &[u8], out: &mut Vec<Range>) {
    debug_assert_eq!(now.len(), before.len());
    let mut open: Option<(usize, usize)> = None;
    let mut i = 0;
    while i < now.len() {
        if i.is_multiple_of(BLOCK) && i + BLOCK <= now.len() && now[i..i + BLOCK] == before[i..i + BLOCK] {
            i += BLOCK;
            continue;
        }
        if now[i] != before[i] {
            open = match open {
                Some((start, end)) if i - end < MERGE_GAP => Some((start, i + 1)),
                Some(run) => {
                    push(base, run, out);
                    Some((i, i + 1))
                }
                None => Some((i, i + 1)),
            };
        }
        i += 1;
    }
    if let Some(run) = open {
        push(base, run, out);
    }
}

fn push(base: u64, (start, end): (usize, usize), out: &mut Vec<Range>) {
    out.push(Range { offset: base + start as u64, len: (end - start) as u32 });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(now: &[u8], before: &[u8]) -> Vec<(u64, u32)> {
        let mut out = Vec::new();
        page_ranges(4096, now, before, &mut out);
        out.into_iter().map(|r| (r.offset, r.len)).collect()
    }

    #[test]
    fn equal_pages_have_no_ranges() {
        let p = vec![3u8; 4096];
        assert!(ranges(&p, &p).is_empty());
    }

    #[test]
    fn close_changes_merge_and_far_ones_do_not() {
        let before = vec![0u8; 4096];
        let mut now = before.clone();
        now[10] = 1;
        now[20] = 1; // 9 equal bytes between: merged
        now[200] = 1; // far: its own range
        now[4095] = 1; // last byte
        assert_eq!(ranges(&now, &before), vec![(4106, 11), (4296, 1), (8191, 1)]);
    }

    #[test]
    fn eight_changed_bytes_are_one_range_of_eight() {
        let before = vec![0u8; 4096];
        let mut now = before.clone();
        now[1000..1008].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(ranges(&now, &before), vec![(5096, 8)]);
    }

    #[test]
    fn ranges_cover_exactly_the_changed_bytes() {
        // A pseudo-random page pair: applying the ranges to `before` must give `now`.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let before: Vec<u8> = (0..4096).map(|_| 0).collect();
        let mut now = before.clone();
        for _ in 0..40 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            now[(x % 4096) as usize] = (x >> 32) as u8 | 1;
        }
        let mut rebuilt = before.clone();
        for (off, len) in ranges(&now, &before) {
            let s = (off - 4096) as usize;
            rebuilt[s..s + len as usize].copy_from_slice(&now[s..s + len as usize]);
        }
        assert_eq!(rebuilt, now);
    }
}
