//! The bounded buffer behind network and console capture, and reading it in pages.
//!
//! A page that logs in a loop or polls an API would otherwise grow the worker's memory without
//! end, so a buffer keeps the latest [`MAX_RECORDS`] records and counts the ones it dropped;
//! and an agent pays for every character it reads, so a read returns one page within a
//! character budget and says what it left out (`total`, `nextOffset`, `truncated`, `evicted`).
//!
//! Records are flat JSON objects; each carries its `seq`, which keeps increasing for the life of
//! the buffer so an agent can tell records apart across reads.

use std::collections::VecDeque;

use serde_json::{Map, Value};
use tabwire_protocol::RecordsRequest;
use tabwire_protocol::capture::MAX_RECORDS;

use crate::observation::cap;

/// A record: a flat JSON object.
pub type Record = Map<String, Value>;

/// Strings are never cut below this many characters to fit a budget: shorter ones say too
/// little to be worth keeping, and the budget gives way instead.
const MIN_FITTED_CHARS: usize = 16;

/// The latest records of one kind (network or console) of one tab.
#[derive(Debug)]
pub struct RecordBuffer {
    /// Oldest first, each with its `seq`.
    records: VecDeque<(u64, Record)>,
    /// The `seq` of the latest record pushed.
    last_seq: u64,
    /// Records dropped because the buffer was full.
    evicted: u32,
    /// At most this many records.
    capacity: usize,
}

impl Default for RecordBuffer {
    fn default() -> Self {
        Self::with_capacity(MAX_RECORDS)
    }
}

/// One page of a read.
#[derive(Debug, PartialEq)]
pub struct Page {
    /// The records returned, oldest first.
    pub records: Vec<Value>,
    /// How many records matched the filter in all (before `clear_after` removed any).
    pub total: u32,
    /// Where the next page starts, when there is more.
    pub next_offset: Option<u32>,
    /// The character budget cut the page short, or cut a record's strings.
    pub truncated: bool,
}

impl RecordBuffer {
    /// An empty buffer keeping at most `capacity` records.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            records: VecDeque::new(),
            last_seq: 0,
            evicted: 0,
            capacity: capacity.max(1),
        }
    }

    /// Appends a record, giving it the next `seq` (which it returns); the oldest record goes
    /// when the buffer is full.
    pub fn push(&mut self, mut record: Record) -> u64 {
        self.last_seq += 1;
        let seq = self.last_seq;
        record.insert("seq".to_owned(), Value::from(seq));
        if self.records.len() >= self.capacity {
            self.records.pop_front();
            self.evicted = self.evicted.saturating_add(1);
        }
        self.records.push_back((seq, record));
        seq
    }

    /// The record with `seq`, unless it was evicted or cleared.
    pub fn get_mut(&mut self, seq: u64) -> Option<&mut Record> {
        let index = self.records.binary_search_by_key(&seq, |(s, _)| *s).ok()?;
        self.records.get_mut(index).map(|(_, record)| record)
    }

    /// The `seq` of the oldest record kept.
    pub fn oldest_seq(&self) -> Option<u64> {
        self.records.front().map(|(seq, _)| *seq)
    }

    /// Records kept.
    pub fn len(&self) -> u32 {
        u32::try_from(self.records.len()).unwrap_or(u32::MAX)
    }

    /// Records dropped because the buffer was full.
    pub fn evicted(&self) -> u32 {
        self.evicted
    }

    /// Reads one page of the records that `matches`: `offset`/`limit` over them oldest first,
    /// then the `max_chars` budget on the serialized page (see [`fill`]). With `clear_after`,
    /// the records returned are forgotten (and the next page starts where this one did).
    pub fn read(&mut self, request: &RecordsRequest, matches: impl Fn(&Record) -> bool) -> Page {
        let matching: Vec<usize> = self
            .records
            .iter()
            .enumerate()
            .filter(|(_, (_, record))| matches(record))
            .map(|(index, _)| index)
            .collect();
        let total = matching.len();
        let start = usize::try_from(request.offset).map_or(total, |offset| offset.min(total));
        let limit = usize::try_from(request.limit).unwrap_or(usize::MAX);
        let budget = usize::try_from(request.max_chars).unwrap_or(usize::MAX);

        let candidates: Vec<(u64, &Record)> = matching
            .iter()
            .skip(start)
            .take(limit)
            .filter_map(|&index| self.records.get(index))
            .map(|(seq, record)| (*seq, record))
            .collect();
        let (records, truncated) = fill(candidates.iter().map(|(_, r)| (*r).clone()), budget);
        let returned: Vec<u64> = candidates
            .iter()
            .take(records.len())
            .map(|(seq, _)| *seq)
            .collect();

        let end = start + records.len();
        let next_offset = (end < total).then(|| {
            let next = if request.clear_after { start } else { end };
            u32::try_from(next).unwrap_or(u32::MAX)
        });
        if request.clear_after {
            self.records
                .retain(|(seq, _)| returned.binary_search(seq).is_err());
        }
        Page {
            records,
            total: u32::try_from(total).unwrap_or(u32::MAX),
            next_offset,
            truncated,
        }
    }
}

/// Fills a page, a JSON array, with `items` in order while it stays within `budget`; says
/// whether the budget cut it short. The first item always goes in, its strings cut to fit when
/// it alone exceeds the budget.
///
/// Sizes are UTF-8 bytes of the JSON, brackets and commas included: never fewer than its
/// characters, so the page fits the budget however its reader counts.
pub fn fill(items: impl Iterator<Item = Record>, budget: usize) -> (Vec<Value>, bool) {
    const BRACKETS: usize = 2;
    let mut page = Vec::new();
    let mut used = BRACKETS;
    for item in items {
        let size = json_len(&item) + usize::from(!page.is_empty());
        if used + size > budget {
            if page.is_empty() {
                page.push(Value::Object(fit(item, budget.saturating_sub(BRACKETS))));
            }
            return (page, true);
        }
        used += size;
        page.push(Value::Object(item));
    }
    (page, false)
}

/// The length of `record` as JSON, in UTF-8 bytes.
pub fn json_len(record: &Record) -> usize {
    serde_json::to_string(record).map_or(0, |text| text.len())
}

/// Cuts the longest strings of `record` until its JSON fits `budget` bytes (or no string
/// is longer than [`MIN_FITTED_CHARS`]). Cut strings end with `…`.
pub fn fit(mut record: Record, budget: usize) -> Record {
    // Each round shortens one string by at least one character, so this ends; the bound only
    // guards against a surprise.
    for _ in 0..256 {
        let size = json_len(&record);
        if size <= budget {
            break;
        }
        let longest = record
            .iter()
            .filter_map(|(key, value)| Some((key.clone(), value.as_str()?.chars().count())))
            .filter(|(_, chars)| *chars > MIN_FITTED_CHARS)
            .max_by_key(|(_, chars)| *chars);
        let Some((key, chars)) = longest else {
            break;
        };
        let keep = chars
            .saturating_sub(size - budget)
            .clamp(MIN_FITTED_CHARS, chars - 1);
        if let Some(Value::String(text)) = record.get_mut(&key) {
            *text = cap(text, keep);
        }
    }
    record
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(value: Value) -> Record {
        match value {
            Value::Object(map) => map,
            _ => Record::new(),
        }
    }

    fn request(limit: u32, offset: u32, max_chars: u32) -> RecordsRequest {
        RecordsRequest {
            limit,
            offset,
            filter: None,
            levels: Vec::new(),
            max_chars,
            clear_after: false,
        }
    }

    /// The page's size as a reader measures it: bytes of the JSON array.
    fn size(page: &Page) -> usize {
        serde_json::to_string(&page.records).map_or(0, |s| s.len())
    }

    fn seqs(page: &Page) -> Vec<u64> {
        page.records
            .iter()
            .filter_map(|r| r.get("seq").and_then(Value::as_u64))
            .collect()
    }

    #[test]
    fn a_full_buffer_drops_the_oldest_and_counts_them() {
        let mut buffer = RecordBuffer::default();
        for n in 0..600 {
            buffer.push(record(json!({ "n": n })));
        }
        assert_eq!(buffer.len(), 500);
        assert_eq!(buffer.evicted(), 100);
        assert_eq!(buffer.oldest_seq(), Some(101));
        assert!(buffer.get_mut(100).is_none());
        assert_eq!(
            buffer.get_mut(101).and_then(|r| r.get("n").cloned()),
            Some(json!(100))
        );
        let page = buffer.read(&request(2, 0, 12_000), |_| true);
        assert_eq!(seqs(&page), [101, 102]);
        assert_eq!(page.total, 500);
        assert_eq!(page.next_offset, Some(2));
    }

    #[test]
    fn reads_filter_then_page_oldest_first() {
        let mut buffer = RecordBuffer::default();
        for n in 0..10 {
            buffer.push(record(json!({ "even": n % 2 == 0 })));
        }
        let even = |r: &Record| r.get("even") == Some(&json!(true));
        let first = buffer.read(&request(3, 0, 12_000), even);
        assert_eq!(seqs(&first), [1, 3, 5]);
        assert_eq!((first.total, first.next_offset), (5, Some(3)));
        let last = buffer.read(&request(3, 3, 12_000), even);
        assert_eq!(seqs(&last), [7, 9]);
        assert_eq!(last.next_offset, None);
        assert!(!last.truncated);
        let past = buffer.read(&request(3, 9, 12_000), even);
        assert!(past.records.is_empty());
        assert_eq!((past.total, past.next_offset), (5, None));
    }

    #[test]
    fn the_budget_stops_before_the_record_that_exceeds_it() {
        let mut buffer = RecordBuffer::default();
        for _ in 0..5 {
            buffer.push(record(json!({ "text": "x".repeat(80) })));
        }
        let one = json_len(&record(json!({ "seq": 1, "text": "x".repeat(80) })));
        // Room for two records, their comma and the brackets, not three records.
        let budget = 2 * one + 5;
        let page = buffer.read(&request(10, 0, budget as u32), |_| true);
        assert_eq!(seqs(&page), [1, 2]);
        assert!(page.truncated);
        assert_eq!(page.next_offset, Some(2));
        assert!(size(&page) <= budget);
        // Exactly enough room is enough.
        let exact = buffer.read(&request(2, 0, (2 * one + 3) as u32), |_| true);
        assert_eq!(seqs(&exact), [1, 2]);
        assert!(!exact.truncated);
    }

    #[test]
    fn a_record_alone_over_the_budget_comes_with_its_strings_cut() {
        let mut buffer = RecordBuffer::default();
        buffer.push(record(
            json!({ "url": "u".repeat(400), "text": "t".repeat(900), "n": 1 }),
        ));
        buffer.push(record(json!({ "text": "short" })));
        let page = buffer.read(&request(10, 0, 300), |_| true);
        assert_eq!(seqs(&page), [1]);
        assert!(page.truncated);
        assert_eq!(page.next_offset, Some(1));
        assert!(size(&page) <= 300, "{}", size(&page));
        let fitted = &page.records[0];
        assert!(fitted["text"].as_str().is_some_and(|t| t.ends_with('…')));
        assert_eq!(fitted["n"], json!(1));
        // Not ASCII: bytes count, so the page fits however its reader measures it.
        let mut wide = RecordBuffer::default();
        wide.push(record(json!({ "text": "é".repeat(1000) })));
        let page = wide.read(&request(1, 0, 1000), |_| true);
        assert!(size(&page) <= 1000, "{}", size(&page));
    }

    #[test]
    fn fitting_stops_at_short_strings() {
        let fitted = fit(record(json!({ "a": "x".repeat(40), "b": 7 })), 5);
        assert_eq!(
            fitted["a"].as_str().map(|s| s.chars().count()),
            Some(MIN_FITTED_CHARS)
        );
    }

    #[test]
    fn clear_after_forgets_the_records_returned() {
        let mut buffer = RecordBuffer::default();
        for n in 0..6 {
            buffer.push(record(json!({ "n": n })));
        }
        let mut clearing = request(2, 1, 12_000);
        clearing.clear_after = true;
        let page = buffer.read(&clearing, |_| true);
        assert_eq!(seqs(&page), [2, 3]);
        assert_eq!(page.total, 6);
        // The records after them moved up to where the page started.
        assert_eq!(page.next_offset, Some(1));
        assert_eq!(buffer.len(), 4);
        let rest = buffer.read(&request(10, 0, 12_000), |_| true);
        assert_eq!(seqs(&rest), [1, 4, 5, 6]);
        assert_eq!(buffer.evicted(), 0);
        // Sequence numbers keep increasing after a clear.
        assert_eq!(buffer.push(Record::new()), 7);
    }
}
