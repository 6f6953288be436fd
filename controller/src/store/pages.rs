//! Status pages: one provider's failing words of one page (of 64, by a hash
//! of the consumer), rendered ahead of time as `status --json` lists them.
//!
//! The store keeps them beside the `failing` table (migration V2): the
//! `serve` command writes a page after its words changed, `status --json`
//! reads clean pages instead of every row. This module is the page format,
//! pure:
//!
//! - `said_at`: each standing's said_at in page order, little-endian `i64`
//!   microseconds since 1970 (read without decompressing, for the silence
//!   count that comes before the list).
//! - `body`: lz4 (block, size prepended) of the entries in consumer order,
//!   each `u16` consumer length, the consumer, `u32` JSON length, and the
//!   standing's JSON up to its `said_at` (the object still open).

use std::ops::Range;
use std::time::{Duration, UNIX_EPOCH};

use bytes::Bytes;
use mesh_sdk::Timestamp;

use super::FailingRow;
use crate::status::standing_json;

/// A page's body may not claim to decompress to more than this.
pub const MAX_PAGE_BYTES: usize = 256 << 20;

/// One clean page as the store holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageRow {
    /// The provider module.
    pub provider_module: String,
    /// The machine it ran on.
    pub provider_machine: String,
    /// Which page (0..64).
    pub page: i32,
    /// How many standings it holds.
    pub standings: usize,
    /// Their said_at (see the module docs).
    pub said_at: Bytes,
    /// Their entries, compressed.
    pub body: Bytes,
}

/// A page ready to be stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Encoded {
    /// How many standings it holds.
    pub standings: usize,
    /// Their said_at.
    pub said_at: Vec<u8>,
    /// Their entries, compressed.
    pub body: Vec<u8>,
}

/// A page that cannot be read.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum PageError {
    /// The said_at column does not hold one time per standing.
    #[error("{said_at} bytes of said_at for {standings} standings")]
    SaidAt {
        /// Bytes found.
        said_at: usize,
        /// Standings claimed.
        standings: usize,
    },
    /// The body does not decompress.
    #[error("the body does not decompress: {0}")]
    Body(String),
    /// The entries are cut or malformed.
    #[error("entry {0} is cut short or not UTF-8")]
    Entry(usize),
    /// The number of entries is not the number of standings.
    #[error("{found} entries for {standings} standings")]
    Count {
        /// Entries found.
        found: usize,
        /// Standings claimed.
        standings: usize,
    },
}

/// Microseconds since 1970 (negative before), saturating.
pub fn micros(t: Timestamp) -> i64 {
    match t.system_time().duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_micros()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_micros()).map_or(i64::MIN, |m| -m),
    }
}

/// The time `micros` microseconds after 1970.
pub fn from_micros(micros: i64) -> Timestamp {
    let d = Duration::from_micros(micros.unsigned_abs());
    Timestamp::from_system(if micros >= 0 {
        UNIX_EPOCH.checked_add(d).unwrap_or(UNIX_EPOCH)
    } else {
        UNIX_EPOCH.checked_sub(d).unwrap_or(UNIX_EPOCH)
    })
}

/// The `i`-th said_at of a page's said_at column (checked by [`check`]).
pub fn said_at(column: &[u8], i: usize) -> i64 {
    let mut le = [0u8; 8];
    le.copy_from_slice(&column[i * 8..i * 8 + 8]);
    i64::from_le_bytes(le)
}

/// Appends one entry (consumer and JSON) to an uncompressed page; returns
/// where its parts are.
pub fn push_entry(raw: &mut Vec<u8>, row: &FailingRow) -> Entry {
    let consumer = row.consumer.as_bytes();
    // Names are tokens of at most 63 bytes; anything longer is cut at a
    // character boundary (it only orders the entry).
    let mut cut = consumer.len().min(usize::from(u16::MAX));
    while !row.consumer.is_char_boundary(cut) {
        cut -= 1;
    }
    raw.extend_from_slice(&u16::try_from(cut).unwrap_or(u16::MAX).to_le_bytes());
    let consumer_at = raw.len();
    raw.extend_from_slice(&consumer[..cut]);
    let at = raw.len();
    raw.extend_from_slice(&[0; 4]);
    standing_json(raw, row);
    let len = u32::try_from(raw.len() - at - 4).unwrap_or(u32::MAX);
    raw[at..at + 4].copy_from_slice(&len.to_le_bytes());
    Entry {
        consumer: consumer_at..at,
        json: at + 4..raw.len(),
    }
}

/// Encodes a page's rows, ordering them by consumer.
pub fn encode(rows: &mut [FailingRow]) -> Encoded {
    rows.sort_unstable_by(|a, b| a.consumer.cmp(&b.consumer));
    let mut raw = Vec::new();
    let mut said_at = Vec::with_capacity(rows.len() * 8);
    for row in rows.iter() {
        push_entry(&mut raw, row);
        said_at.extend_from_slice(&micros(row.said_at).to_le_bytes());
    }
    Encoded {
        standings: rows.len(),
        said_at,
        body: lz4_flex::compress_prepend_size(&raw),
    }
}

/// One entry of an uncompressed page: where its consumer and JSON are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The consumer's bytes.
    pub consumer: Range<usize>,
    /// The JSON's bytes.
    pub json: Range<usize>,
}

/// Decompresses `body` onto the end of `raw`.
///
/// # Errors
/// [`PageError::Body`] when it does not decompress (on error `raw` is as it was).
pub fn decompress_onto(body: &[u8], raw: &mut Vec<u8>) -> Result<(), PageError> {
    let (size, rest) = body
        .split_first_chunk::<4>()
        .ok_or_else(|| PageError::Body("shorter than its size".into()))?;
    let size = u32::from_le_bytes(*size) as usize;
    if size > MAX_PAGE_BYTES {
        return Err(PageError::Body(format!("claims {size} bytes")));
    }
    let start = raw.len();
    raw.resize(start + size, 0);
    match lz4_flex::block::decompress_into(rest, &mut raw[start..]) {
        Ok(n) if n == size => Ok(()),
        Ok(n) => {
            raw.truncate(start);
            Err(PageError::Body(format!(
                "{n} bytes where {size} were claimed"
            )))
        }
        Err(e) => {
            raw.truncate(start);
            Err(PageError::Body(e.to_string()))
        }
    }
}

/// Calls `each` for every entry of `raw[from..]`, in order.
///
/// # Errors
/// [`PageError::Entry`] when an entry is cut short or its consumer is not
/// UTF-8 (entries before it were passed to `each`).
pub fn entries(raw: &[u8], from: usize, mut each: impl FnMut(Entry)) -> Result<usize, PageError> {
    let mut at = from;
    let mut n = 0;
    let take = |at: &mut usize, len: usize| -> Option<Range<usize>> {
        let end = at.checked_add(len).filter(|&end| end <= raw.len())?;
        let range = *at..end;
        *at = end;
        Some(range)
    };
    while at < raw.len() {
        let cut = PageError::Entry(n);
        let len = take(&mut at, 2).ok_or(cut.clone())?;
        let consumer_len = u16::from_le_bytes([raw[len.start], raw[len.start + 1]]);
        let consumer = take(&mut at, usize::from(consumer_len)).ok_or(cut.clone())?;
        std::str::from_utf8(&raw[consumer.clone()]).map_err(|_| cut.clone())?;
        let len = take(&mut at, 4).ok_or(cut.clone())?;
        let mut le = [0u8; 4];
        le.copy_from_slice(&raw[len]);
        let json = take(&mut at, u32::from_le_bytes(le) as usize).ok_or(cut)?;
        each(Entry { consumer, json });
        n += 1;
    }
    Ok(n)
}

/// Checks that a page reads whole: one said_at per standing, a body that
/// decompresses into exactly that many entries. `scratch` is reused.
///
/// # Errors
/// [`PageError`] saying what is wrong.
pub fn check(page: &PageRow, scratch: &mut Vec<u8>) -> Result<(), PageError> {
    if page.said_at.len() != page.standings.saturating_mul(8) {
        return Err(PageError::SaidAt {
            said_at: page.said_at.len(),
            standings: page.standings,
        });
    }
    scratch.clear();
    decompress_onto(&page.body, scratch)?;
    let found = entries(scratch, 0, |_| ())?;
    if found != page.standings {
        return Err(PageError::Count {
            found,
            standings: page.standings,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(consumer: &str, error: &str, said_at: &str) -> FailingRow {
        FailingRow {
            provider_module: "postgres".into(),
            provider_machine: "db-1".into(),
            consumer: consumer.into(),
            consumer_machine: Some("app-1".into()),
            provision: None,
            class: "credentials-rejected".into(),
            error: error.into(),
            since: Timestamp::parse("2026-10-05T00:04:00Z").unwrap(),
            attempts: 3,
            said_at: Timestamp::parse(said_at).unwrap(),
        }
    }

    fn page(encoded: &Encoded) -> PageRow {
        PageRow {
            provider_module: "postgres".into(),
            provider_machine: "db-1".into(),
            page: 7,
            standings: encoded.standings,
            said_at: Bytes::from(encoded.said_at.clone()),
            body: Bytes::from(encoded.body.clone()),
        }
    }

    #[test]
    fn a_page_reads_back_in_consumer_order() {
        let mut rows = vec![
            row("wiki", "quote \" and\nnewline", "2026-10-05T00:09:00Z"),
            row("forge", "é ✓", "1970-01-01T00:00:01Z"),
            row("a-b_c", "", "2026-10-05T00:10:00Z"),
        ];
        let encoded = encode(&mut rows);
        let page = page(&encoded);
        let mut raw = b"kept".to_vec();
        check(&page, &mut Vec::new()).unwrap();
        decompress_onto(&page.body, &mut raw).unwrap();
        let mut seen = Vec::new();
        let n = entries(&raw, 4, |e| {
            let consumer = std::str::from_utf8(&raw[e.consumer]).unwrap().to_owned();
            let mut json = raw[e.json].to_vec();
            json.extend_from_slice(b"}");
            let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
            seen.push((consumer, value));
        })
        .unwrap();
        assert_eq!(n, 3);
        assert_eq!(&raw[..4], b"kept");
        let consumers: Vec<&str> = seen.iter().map(|(c, _)| c.as_str()).collect();
        assert_eq!(consumers, ["a-b_c", "forge", "wiki"]);
        assert_eq!(seen[2].1["error"], "quote \" and\nnewline");
        assert_eq!(seen[1].1["error"], "é ✓");
        assert_eq!(seen[0].1["consumer_machine"], "app-1");
        assert_eq!(seen[0].1["provision"], serde_json::Value::Null);
        for (i, r) in rows.iter().enumerate() {
            assert_eq!(from_micros(said_at(&page.said_at, i)), r.said_at);
        }
    }

    #[test]
    fn push_entry_says_where_its_parts_are() {
        let mut raw = b"before".to_vec();
        let pushed = push_entry(&mut raw, &row("forge", "e", "2026-10-05T00:09:00Z"));
        let mut found = Vec::new();
        entries(&raw, 6, |e| found.push(e)).unwrap();
        assert_eq!(found, std::slice::from_ref(&pushed));
        assert_eq!(&raw[pushed.consumer], b"forge");
        assert!(raw[pushed.json].starts_with(b"{\"provider_module\":\"postgres\""));
    }

    #[test]
    fn micros_round_trip_both_sides_of_1970() {
        for m in [0, 1, -1, 1_764_000_000_123_456, -3_600_000_000] {
            assert_eq!(micros(from_micros(m)), m);
        }
    }

    #[test]
    fn broken_pages_say_what_is_wrong() {
        let mut rows = vec![row("forge", "e", "2026-10-05T00:09:00Z")];
        let good = page(&encode(&mut rows));
        let scratch = &mut Vec::new();
        let mut short_said = good.clone();
        short_said.said_at = good.said_at.slice(..4);
        assert_eq!(
            check(&short_said, scratch),
            Err(PageError::SaidAt {
                said_at: 4,
                standings: 1
            })
        );
        let mut more = good.clone();
        more.standings = 2;
        more.said_at = Bytes::from([good.said_at.to_vec(), good.said_at.to_vec()].concat());
        assert_eq!(
            check(&more, scratch),
            Err(PageError::Count {
                found: 1,
                standings: 2
            })
        );
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("empty", vec![]),
            ("huge claim", vec![0xff, 0xff, 0xff, 0x7f, 0]),
            ("garbage", vec![10, 0, 0, 0, 0xff, 0xff, 0xff]),
            ("cut", good.body[..good.body.len() - 3].to_vec()),
        ];
        for (what, body) in cases {
            let mut bad = good.clone();
            bad.body = Bytes::from(body);
            assert!(
                matches!(check(&bad, scratch), Err(PageError::Body(_))),
                "{what}"
            );
        }
        // A well-compressed body whose entry is cut.
        let mut cut = good.clone();
        cut.body = Bytes::from(lz4_flex::compress_prepend_size(&[5, 0, b'f']));
        assert_eq!(check(&cut, scratch), Err(PageError::Entry(0)));
        let mut not_utf8 = good;
        not_utf8.body = Bytes::from(lz4_flex::compress_prepend_size(&[
            1, 0, 0xff, 1, 0, 0, 0, b'{',
        ]));
        assert_eq!(check(&not_utf8, scratch), Err(PageError::Entry(0)));
    }
}
