//! The bounded buffer behind network and console capture, and reading it in pages.
//!
//! A page that logs in a loop or polls an API would otherwise grow the worker's memory without
//! end, so a buffer keeps the latest [`MAX_RECORDS`] records and counts the ones it dropped;
//! and an agent pays for every character it reads, so a read returns one page within a
//! character budget (`ops::budget`) and says what it left out (`total`, `nextOffset`,
//! `truncated`, `evicted`).
//!
//! Every record carries its `seq`, which keeps increasing for the life of the buffer so an agent
//! can tell records apart across reads.

use std::collections::VecDeque;

use tabwire_protocol::capture::MAX_RECORDS;
use tabwire_protocol::{Records, RecordsRequest, TabId};

use crate::ops::budget::{Fitted, fill};

/// A record a buffer keeps: it can be cut to fit, and it carries its sequence number.
pub trait Record: Fitted + Clone {
    /// Sets the record's `seq`.
    fn set_seq(&mut self, seq: u64);
}

/// The latest records of one kind (network or console) of one tab.
#[derive(Debug)]
pub struct RecordBuffer<R> {
    /// Oldest first, each with its `seq`.
    records: VecDeque<(u64, R)>,
    /// The `seq` of the latest record pushed.
    last_seq: u64,
    /// Records dropped because the buffer was full.
    evicted: u32,
    /// At most this many records.
    capacity: usize,
}

impl<R> Default for RecordBuffer<R> {
    fn default() -> Self {
        Self::with_capacity(MAX_RECORDS)
    }
}

/// One page of a read.
#[derive(Debug, PartialEq)]
pub struct Page<R> {
    /// The records returned, oldest first.
    pub records: Vec<R>,
    /// How many records matched the filter in all (before `clear_after` removed any).
    pub total: u32,
    /// Where the next page starts, when there is more.
    pub next_offset: Option<u32>,
    /// The character budget cut the page short, or cut a record's strings.
    pub truncated: bool,
}

impl<R> Page<R> {
    /// The page as an answer about `tab`. Capture counts as on (`capturing`) only while the
    /// debugger is attached: without it no events arrive.
    pub fn into_records(
        self,
        tab: TabId,
        capturing: bool,
        request: &RecordsRequest,
        evicted: u32,
    ) -> Records<R> {
        Records {
            tab_id: tab,
            capturing,
            records: self.records,
            total: self.total,
            offset: request.offset,
            next_offset: self.next_offset,
            evicted,
            truncated: self.truncated,
        }
    }
}

impl<R> RecordBuffer<R> {
    /// An empty buffer keeping at most `capacity` records.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            records: VecDeque::new(),
            last_seq: 0,
            evicted: 0,
            capacity: capacity.max(1),
        }
    }

    /// The record with `seq`, unless it was evicted or cleared.
    pub fn get_mut(&mut self, seq: u64) -> Option<&mut R> {
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
}

impl<R: Record> RecordBuffer<R> {
    /// Appends a record, giving it the next `seq` (which it returns); the oldest record goes
    /// when the buffer is full.
    pub fn push(&mut self, mut record: R) -> u64 {
        self.last_seq += 1;
        let seq = self.last_seq;
        record.set_seq(seq);
        if self.records.len() >= self.capacity {
            self.records.pop_front();
            self.evicted = self.evicted.saturating_add(1);
        }
        self.records.push_back((seq, record));
        seq
    }

    /// Reads one page of the records that `matches`: `offset`/`limit` over them oldest first,
    /// then the `max_chars` budget on the serialized page (see `ops::budget::fill`). With
    /// `clear_after`, the records returned are forgotten (and the next page starts where this
    /// one did).
    pub fn read(&mut self, request: &RecordsRequest, matches: impl Fn(&R) -> bool) -> Page<R> {
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

        let candidates: Vec<(u64, &R)> = matching
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::budget::json_len;
    use serde::Serialize;

    /// A record with a few kinds of fields, as the tests need them.
    #[derive(Debug, Clone, Default, PartialEq, Serialize)]
    struct Note {
        seq: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        n: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        even: Option<bool>,
        #[serde(skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        url: Option<String>,
    }

    impl Fitted for Note {
        fn strings(&mut self) -> Vec<&mut String> {
            [&mut self.text, &mut self.url]
                .into_iter()
                .filter_map(Option::as_mut)
                .collect()
        }
    }

    impl Record for Note {
        fn set_seq(&mut self, seq: u64) {
            self.seq = seq;
        }
    }

    fn n(n: u64) -> Note {
        Note {
            n: Some(n),
            ..Note::default()
        }
    }

    fn text(text: String) -> Note {
        Note {
            text: Some(text),
            ..Note::default()
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
    fn size(page: &Page<Note>) -> usize {
        serde_json::to_string(&page.records).map_or(0, |s| s.len())
    }

    fn seqs(page: &Page<Note>) -> Vec<u64> {
        page.records.iter().map(|r| r.seq).collect()
    }

    #[test]
    fn a_full_buffer_drops_the_oldest_and_counts_them() {
        let mut buffer = RecordBuffer::default();
        for i in 0..600 {
            buffer.push(n(i));
        }
        assert_eq!(buffer.len(), 500);
        assert_eq!(buffer.evicted(), 100);
        assert_eq!(buffer.oldest_seq(), Some(101));
        assert!(buffer.get_mut(100).is_none());
        assert_eq!(buffer.get_mut(101).and_then(|r| r.n), Some(100));
        let page = buffer.read(&request(2, 0, 12_000), |_| true);
        assert_eq!(seqs(&page), [101, 102]);
        assert_eq!(page.total, 500);
        assert_eq!(page.next_offset, Some(2));
    }

    #[test]
    fn reads_filter_then_page_oldest_first() {
        let mut buffer = RecordBuffer::default();
        for i in 0..10 {
            buffer.push(Note {
                even: Some(i % 2 == 0),
                ..Note::default()
            });
        }
        let even = |r: &Note| r.even == Some(true);
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
            buffer.push(text("x".repeat(80)));
        }
        let one = json_len(&Note {
            seq: 1,
            ..text("x".repeat(80))
        });
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
        buffer.push(Note {
            url: Some("u".repeat(400)),
            text: Some("t".repeat(900)),
            n: Some(1),
            ..Note::default()
        });
        buffer.push(text("short".into()));
        let page = buffer.read(&request(10, 0, 300), |_| true);
        assert_eq!(seqs(&page), [1]);
        assert!(page.truncated);
        assert_eq!(page.next_offset, Some(1));
        assert!(size(&page) <= 300, "{}", size(&page));
        let fitted = &page.records[0];
        assert!(fitted.text.as_ref().is_some_and(|t| t.ends_with('…')));
        assert_eq!(fitted.n, Some(1));
        // Not ASCII: bytes count, so the page fits however its reader measures it.
        let mut wide = RecordBuffer::default();
        wide.push(text("é".repeat(1000)));
        let page = wide.read(&request(1, 0, 1000), |_| true);
        assert!(size(&page) <= 1000, "{}", size(&page));
    }

    #[test]
    fn clear_after_forgets_the_records_returned() {
        let mut buffer = RecordBuffer::default();
        for i in 0..6 {
            buffer.push(n(i));
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
        assert_eq!(buffer.push(Note::default()), 7);
    }
}
