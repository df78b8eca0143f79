//! The bookkeeping that proves a parallel run's output whole before it is kept: [`Placed`] for
//! chunks written at their offsets (every range written exactly once, no gap that would read
//! as zeros), [`InOrder`] for chunks put back in order for a stream.

use std::collections::BTreeMap;
use std::io;
use std::sync::Mutex;

use super::{Chunk, PipelineError};

/// Which chunks were written at their offsets: chunk `i` covers `record_len` bytes from
/// `i * record_len`, except the last, which may be shorter.
pub(super) struct Placed {
    record_len: usize,
    /// For a run of chunks that does not end its stream, how many there are: none is marked
    /// last, and the final one (`count - 1`) may be shorter.
    count: Option<u64>,
    state: Mutex<PlacedState>,
}

#[derive(Default)]
struct PlacedState {
    /// Bit `i` is set once chunk `i` is written.
    written: Vec<u64>,
    /// The index of the chunk marked last.
    last: Option<u64>,
    /// The highest index written.
    highest: Option<u64>,
}

impl Placed {
    /// Nothing written yet, of chunks of `record_len` output bytes.
    pub(super) fn new(record_len: usize) -> Self {
        Placed {
            record_len,
            count: None,
            state: Mutex::new(PlacedState::default()),
        }
    }

    /// Nothing written yet, of `count` chunks of `record_len` output bytes that do not end
    /// their stream (the final one may be shorter, none is marked last).
    pub(super) fn counted(record_len: usize, count: u64) -> Self {
        Placed {
            count: Some(count),
            ..Placed::new(record_len)
        }
    }

    /// Records that chunk `index` (the last one when `last`) was written, `len` bytes. A chunk
    /// written twice, or one before the last that does not fill its range, is an error.
    pub(super) fn record(&self, index: u64, last: bool, len: usize) -> Result<(), PipelineError> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (word, bit) = ((index / 64) as usize, 1u64 << (index % 64));
        if state.written.len() <= word {
            state.written.resize(word + 1, 0);
        }
        if state.written[word] & bit != 0 {
            return Err(hole(format!(
                "chunk {index} of the output was written twice"
            )));
        }
        state.written[word] |= bit;
        let final_of_count = self.count == Some(index + 1);
        if self.count.is_some_and(|count| last || index >= count) {
            return Err(hole(format!(
                "chunk {index} of the output is not one of the {} it has",
                self.count.unwrap_or_default()
            )));
        }
        if !last && !final_of_count && len != self.record_len {
            return Err(hole(format!(
                "chunk {index} of the output was {len} bytes where its range is {}",
                self.record_len
            )));
        }
        if last {
            if state.last.is_some() {
                return Err(hole("two chunks of the output were marked last".into()));
            }
            state.last = Some(index);
        }
        state.highest = state.highest.max(Some(index));
        Ok(())
    }

    /// Checks that every chunk up to the last was written, and none past it.
    pub(super) fn check(self) -> Result<(), PipelineError> {
        let state = self.state.into_inner().unwrap_or_else(|e| e.into_inner());
        let last = match self.count {
            Some(0) => return Ok(()),
            Some(count) => Some(count - 1),
            None => state.last,
        };
        let Some(last) = last else {
            return Err(hole("the output's last chunk was never written".into()));
        };
        if state.highest != Some(last) {
            return Err(hole(format!("a chunk past the last ({last}) was written")));
        }
        let missing = (0..=last).find(|&i| state.written[(i / 64) as usize] & (1 << (i % 64)) == 0);
        match missing {
            Some(i) => Err(hole(format!("chunk {i} of the output was never written"))),
            None => Ok(()),
        }
    }
}

/// Chunks that arrive in any order, released in order of index from 0.
#[derive(Default)]
pub(super) struct InOrder {
    waiting: BTreeMap<u64, Chunk>,
    next: u64,
    last_released: bool,
    /// For a run of chunks that does not end its stream, how many there are.
    count: Option<u64>,
}

impl InOrder {
    /// Nothing arrived yet, of `count` chunks that do not end their stream (`None`: a whole
    /// stream, ended by the chunk marked last).
    pub(super) fn counted(count: Option<u64>) -> Self {
        InOrder {
            count,
            ..InOrder::default()
        }
    }

    /// Takes `chunk`; returns the chunks now due, in order (none until the next index comes).
    pub(super) fn arrived(&mut self, chunk: Chunk) -> Vec<Chunk> {
        self.waiting.insert(chunk.index, chunk);
        let mut due = Vec::new();
        while let Some(chunk) = self.waiting.remove(&self.next) {
            self.next += 1;
            self.last_released |= chunk.last;
            due.push(chunk);
        }
        due
    }

    /// Checks that the stream's last chunk was released and nothing is left waiting.
    pub(super) fn check(self) -> Result<(), PipelineError> {
        if let Some(index) = self.waiting.keys().next() {
            return Err(hole(format!(
                "chunk {} of the output never came, so chunk {index} and those after it were not written",
                self.next
            )));
        }
        if let Some(count) = self.count {
            if self.next != count || self.last_released {
                return Err(hole(format!(
                    "{} chunks of the output were written where it has {count}",
                    self.next
                )));
            }
            return Ok(());
        }
        if !self.last_released {
            return Err(hole("the output's last chunk was never written".into()));
        }
        Ok(())
    }
}

/// A gap or overlap in the output: a fault of paraes itself, never of the input.
fn hole(what: String) -> PipelineError {
    PipelineError::Write(io::Error::other(format!(
        "{what} (a fault in paraes: please report it; the output was not kept)"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(index: u64, last: bool) -> Chunk {
        Chunk {
            index,
            last,
            data: vec![index as u8],
        }
    }

    #[test]
    fn placed_accepts_every_chunk_once_in_any_order() {
        for order in [[0, 1, 2], [2, 0, 1], [1, 2, 0]] {
            let placed = Placed::new(8);
            for i in order {
                placed
                    .record(i, i == 2, if i == 2 { 3 } else { 8 })
                    .unwrap();
            }
            placed.check().unwrap();
        }
        let single = Placed::new(8);
        single.record(0, true, 0).unwrap();
        single.check().unwrap();
    }

    #[test]
    fn placed_refuses_a_gap_a_repeat_a_short_range_and_a_chunk_past_the_last() {
        let gap = Placed::new(8);
        gap.record(0, false, 8).unwrap();
        gap.record(2, true, 1).unwrap();
        assert!(gap.check().unwrap_err().to_string().contains("chunk 1"));

        let twice = Placed::new(8);
        twice.record(1, false, 8).unwrap();
        assert!(twice.record(1, false, 8).is_err());

        let short = Placed::new(8);
        assert!(short.record(0, false, 7).is_err());

        let past = Placed::new(8);
        past.record(0, true, 3).unwrap();
        past.record(1, false, 8).unwrap();
        assert!(past.check().is_err());

        let no_last = Placed::new(8);
        no_last.record(0, false, 8).unwrap();
        assert!(no_last.check().is_err());
    }

    #[test]
    fn in_order_releases_by_index_and_refuses_a_gap() {
        let mut order = InOrder::default();
        assert!(order.arrived(chunk(1, false)).is_empty());
        let due: Vec<u64> = order
            .arrived(chunk(0, false))
            .iter()
            .map(|c| c.index)
            .collect();
        assert_eq!(due, [0, 1]);
        assert_eq!(order.arrived(chunk(2, true)).len(), 1);
        order.check().unwrap();

        let mut gap = InOrder::default();
        gap.arrived(chunk(0, false));
        gap.arrived(chunk(2, true));
        assert!(gap.check().is_err());

        let mut no_last = InOrder::default();
        no_last.arrived(chunk(0, false));
        assert!(no_last.check().is_err());
    }

    #[test]
    fn a_counted_run_ends_at_its_count_with_no_chunk_marked_last() {
        // Three chunks that do not end their stream: the final one may be short.
        let placed = Placed::counted(8, 3);
        for (i, len) in [(2, 5), (0, 8), (1, 8)] {
            placed.record(i, false, len).unwrap();
        }
        placed.check().unwrap();
        Placed::counted(8, 0).check().unwrap();
        let missing = Placed::counted(8, 3);
        missing.record(0, false, 8).unwrap();
        missing.record(2, false, 8).unwrap();
        assert!(missing.check().unwrap_err().to_string().contains("chunk 1"));
        assert!(Placed::counted(8, 3).record(3, false, 8).is_err());
        assert!(Placed::counted(8, 3).record(2, true, 8).is_err());
        assert!(Placed::counted(8, 3).record(1, false, 5).is_err());

        let mut order = InOrder::counted(Some(2));
        order.arrived(chunk(1, false));
        order.arrived(chunk(0, false));
        order.check().unwrap();
        let mut short = InOrder::counted(Some(2));
        short.arrived(chunk(0, false));
        assert!(short.check().is_err());
    }
}
