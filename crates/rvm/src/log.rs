//! The redo log's format: records, the commit marker, their checksums, and the parser that
//! recovery runs.
//!
//! # Format
//! From its head, a log holds at most one transaction, then zeros — or, after a power loss that
//! dropped an unsynced trim, stale bytes of an older, longer transaction. Each commit writes at
//! the head, and the trim zeroes what it wrote, so the head is the only place a transaction is
//! ever written, and [`parse`] looks nowhere else: what follows the head transaction is never
//! replayed, even when it looks like a valid transaction (the bytes of an older transaction's
//! records are user data and may hold anything, a whole encoded transaction included; the
//! power-loss test builds exactly that). A transaction is one or more data records followed by
//! one commit record. All integers are little-endian; every record starts with a 32-byte
//! header.
//!
//! ```text
//! data record    magic "RVMD" u32 | len u32 | txid u64 | offset u64 | crc u32 | 0 u32 | len bytes
//!                crc = CRC-32C of the header's first 24 bytes, then the bytes
//! commit record  magic "RVMC" u32 | records u32 | txid u64 | payload u64 | crc u32 | "RVME" u32
//!                crc = CRC-32C of the header's first 24 bytes, then the crc of every data
//!                record of the transaction, in order (so it covers every byte of it)
//! ```
//!
//! `payload` is the sum of the data records' `len`. The head transaction counts only when its
//! commit record is present and every check passes: magics, the txid shared by its records,
//! `offset + len` inside the segment, each record's crc, the commit's record count, payload and
//! crc. If one fails, the log holds no transaction (a torn or corrupt head is ignored).
//!
//! A transaction ends with the non-zero end marker `"RVME"`, and the log beyond the
//! transactions is zeros, so a write cut short anywhere (a prefix of the transaction reached
//! the file) always lacks at least the marker's last byte and is never mistaken for a
//! complete one.

/// Bytes in every record header.
pub(crate) const HEADER: usize = 32;
const DATA_MAGIC: u32 = u32::from_le_bytes(*b"RVMD");
const COMMIT_MAGIC: u32 = u32::from_le_bytes(*b"RVMC");
const END_MARKER: u32 = u32::from_le_bytes(*b"RVME");

/// A changed byte range of the segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Range {
    /// Offset in the segment.
    pub offset: u64,
    /// Length in bytes.
    pub len: u32,
}

/// One data record found by [`parse`]: where its bytes go and where they are in the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Record {
    /// Offset in the segment.
    pub offset: u64,
    /// Position of the bytes in the log.
    pub at: usize,
    /// Length in bytes.
    pub len: usize,
}

/// One complete, valid transaction found by [`parse`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Txn {
    /// Its id.
    pub txid: u64,
    /// Its data records, in log order.
    pub records: Vec<Record>,
}

/// What [`parse`] found.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    /// The complete, valid transaction at the log's head, if there is one (never more than one).
    pub txns: Vec<Txn>,
    /// Bytes of the log they occupy; the rest was ignored.
    pub valid_len: usize,
}

/// Appends the records of transaction `txid` — one per range, bytes taken from `segment` —
/// and its commit record to `out` (cleared first).
pub(crate) fn encode(txid: u64, ranges: &[Range], segment: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut group = Crc32c::new();
    let mut payload = 0u64;
    for r in ranges {
        let bytes = &segment[r.offset as usize..r.offset as usize + r.len as usize];
        let start = out.len();
        put_u32(out, DATA_MAGIC);
        put_u32(out, r.len);
        put_u64(out, txid);
        put_u64(out, r.offset);
        let crc = Crc32c::new().update(&out[start..start + 24]).update(bytes).finish();
        put_u32(out, crc);
        put_u32(out, 0);
        out.extend_from_slice(bytes);
        group = group.update(&crc.to_le_bytes());
        payload += u64::from(r.len);
    }
    let start = out.len();
    put_u32(out, COMMIT_MAGIC);
    put_u32(out, ranges.len() as u32);
    put_u64(out, txid);
    put_u64(out, payload);
    let crc = Crc32c::new().update(&out[start..start + 24]).combine_after(group).finish();
    put_u32(out, crc);
    put_u32(out, END_MARKER);
}

/// The complete transaction at the head of `log` (if any), for a segment of `segment_len`
/// bytes. Nothing after it is looked at (see the module doc).
pub(crate) fn parse(log: &[u8], segment_len: u64) -> Parsed {
    let mut parsed = Parsed::default();
    if let Some((txn, end)) = parse_txn(log, 0, segment_len) {
        parsed.txns.push(txn);
        parsed.valid_len = end;
    }
    parsed
}

/// One transaction starting at `pos`: its records and where it ends, or `None` if it is
/// incomplete or fails a check.
fn parse_txn(log: &[u8], mut pos: usize, segment_len: u64) -> Option<(Txn, usize)> {
    let mut txn = Txn { txid: 0, records: Vec::new() };
    let mut group = Crc32c::new();
    let mut payload = 0u64;
    loop {
        let h = Header::read(log, pos)?;
        let first = txn.records.is_empty();
        if first {
            txn.txid = h.txid;
        } else if h.txid != txn.txid {
            return None;
        }
        match h.magic {
            DATA_MAGIC => {
                let at = pos + HEADER;
                let len = h.a as usize;
                let bytes = log.get(at..at.checked_add(len)?)?;
                let end_in_segment = h.b.checked_add(u64::from(h.a))?;
                let crc = Crc32c::new().update(&log[pos..pos + 24]).update(bytes).finish();
                if h.pad != 0 || end_in_segment > segment_len || crc != h.crc {
                    return None;
                }
                group = group.update(&crc.to_le_bytes());
                payload += u64::from(h.a);
                txn.records.push(Record { offset: h.b, at, len });
                pos = at + len;
            }
            COMMIT_MAGIC => {
                let crc = Crc32c::new().update(&log[pos..pos + 24]).combine_after(group).finish();
                let ok = h.pad == END_MARKER && h.a as usize == txn.records.len() && h.b == payload && crc == h.crc;
                return ok.then_some((txn, pos + HEADER));
            }
            _ => return None,
        }
    }
}

/// The fields of a record header; `a` and `b` are (len, offset) for data records and
/// (records, payload) for commit records; `pad` is 0 in data records and the end marker in
/// commit records.
struct Header {
    magic: u32,
    a: u32,
    txid: u64,
    b: u64,
    crc: u32,
    pad: u32,
}

impl Header {
    fn read(log: &[u8], pos: usize) -> Option<Header> {
        let h = log.get(pos..pos.checked_add(HEADER)?)?;
        let u32_at = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        let u64_at = |i: usize| u64::from(u32_at(i)) | (u64::from(u32_at(i + 4)) << 32);
        Some(Header {
            magic: u32_at(0),
            a: u32_at(4),
            txid: u64_at(8),
            b: u64_at(16),
            crc: u32_at(24),
            pad: u32_at(28),
        })
    }
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as used by iSCSI, ext4 and btrfs;
/// table-driven, one byte per step.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Crc32c(u32);

const CRC_TABLE: [u32; 256] = crc_table();

const fn crc_table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ 0x82F6_3B78 } else { c >> 1 };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

impl Crc32c {
    /// An empty checksum.
    pub(crate) fn new() -> Crc32c {
        Crc32c(!0)
    }

    /// Feeds `bytes`.
    pub(crate) fn update(self, bytes: &[u8]) -> Crc32c {
        let mut c = self.0;
        for &b in bytes {
            c = CRC_TABLE[((c ^ u32::from(b)) & 0xFF) as usize] ^ (c >> 8);
        }
        Crc32c(c)
    }

    /// Feeds the final value of `other` (a checksum of something else) as four bytes.
    fn combine_after(self, other: Crc32c) -> Crc32c {
        self.update(&other.finish().to_le_bytes())
    }

    /// The checksum.
    pub(crate) fn finish(self) -> u32 {
        !self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_matches_the_standard_check_value() {
        // The check value of CRC-32C ("123456789"), RFC 3720 appendix B.4.
        assert_eq!(Crc32c::new().update(b"123456789").finish(), 0xE306_9283);
    }

    fn segment() -> Vec<u8> {
        (0..8192u32).map(|i| (i * 7) as u8).collect()
    }

    #[test]
    fn encoded_transactions_parse_back() {
        let seg = segment();
        let mut a = Vec::new();
        encode(5, &[Range { offset: 10, len: 3 }, Range { offset: 4096, len: 100 }], &seg, &mut a);
        let mut log = a.clone();
        log.resize(a.len() + 100, 0);
        let p = parse(&log, seg.len() as u64);
        assert_eq!(p.txns.len(), 1);
        assert_eq!(p.valid_len, a.len());
        assert_eq!(p.txns[0].txid, 5);
        let r = &p.txns[0].records[1];
        assert_eq!((r.offset, r.len), (4096, 100));
        assert_eq!(&log[r.at..r.at + r.len], &seg[4096..4196]);
        assert_eq!(a.len(), 3 * HEADER + 103);
    }

    #[test]
    fn every_torn_prefix_over_an_older_transaction_is_ignored() {
        let seg = segment();
        let mut old = Vec::new();
        encode(1, &[Range { offset: 0, len: 500 }], &seg, &mut old);
        let mut b = Vec::new();
        encode(2, &[Range { offset: 100, len: 50 }, Range { offset: 300, len: 9 }], &seg, &mut b);
        for cut in 1..b.len() {
            let mut log = old.clone();
            log[..cut].copy_from_slice(&b[..cut]);
            // Either nothing, or (while b's prefix equals old's bytes) the older transaction whole.
            let p = parse(&log, seg.len() as u64);
            assert!(p.txns.is_empty() || (log == old && p.txns[0].txid == 1), "cut at {cut}");
        }
    }

    #[test]
    fn only_the_head_transaction_is_read_even_if_a_valid_one_follows() {
        // Stale bytes after the head (a lost trim) may hold a whole encoded transaction, with a
        // greater id, in an older transaction's data: it must never be replayed.
        let seg = segment();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        encode(9, &[Range { offset: 0, len: 4 }], &seg, &mut a);
        encode(10, &[Range { offset: 8, len: 4 }], &seg, &mut b);
        let p = parse(&[a.clone(), b].concat(), seg.len() as u64);
        assert_eq!(p.txns.len(), 1);
        assert_eq!((p.txns[0].txid, p.valid_len), (9, a.len()));
    }

    #[test]
    fn a_cut_short_write_over_zeros_never_parses() {
        let seg = segment();
        let mut a = Vec::new();
        encode(4, &[Range { offset: 0, len: 8 }], &seg, &mut a);
        for cut in 0..a.len() {
            let mut log = a[..cut].to_vec();
            log.resize(a.len() + 100, 0);
            assert!(parse(&log, seg.len() as u64).txns.is_empty(), "cut at {cut}");
        }
    }

    #[test]
    fn any_flipped_bit_voids_the_transaction() {
        let seg = segment();
        let mut a = Vec::new();
        encode(3, &[Range { offset: 8, len: 20 }, Range { offset: 5000, len: 4 }], &seg, &mut a);
        for byte in 0..a.len() {
            let mut log = a.clone();
            log[byte] ^= 0x10;
            assert!(parse(&log, seg.len() as u64).txns.is_empty(), "flip in byte {byte}");
        }
    }

    #[test]
    fn out_of_bounds_transactions_are_refused() {
        let seg = segment();
        let mut a = Vec::new();
        encode(9, &[Range { offset: 0, len: 4 }], &seg, &mut a);
        assert_eq!(parse(&a, seg.len() as u64).txns.len(), 1);
        assert!(parse(&a, 3).txns.is_empty());
    }
}
