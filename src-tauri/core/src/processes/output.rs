//! What a background process printed: the last megabyte of it, addressed by byte offsets from
//! its start, so that a reader can ask for what came after what it last saw and be told
//! plainly when some of that was dropped.

/// Kept at most (a little more between trims).
pub const KEPT: usize = 1024 * 1024;

/// The output kept, and how much was dropped from its front.
#[derive(Debug, Default)]
pub struct OutputLog {
    text: String,
    /// Bytes dropped from the front since the process started.
    dropped: u64,
}

/// What came after an offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Since {
    pub text: String,
    /// Bytes between the offset asked for and the oldest byte still kept, not shown.
    pub missed: u64,
    /// The offset to ask from next time.
    pub next: u64,
}

impl OutputLog {
    pub fn push(&mut self, chunk: &str) {
        self.text.push_str(chunk);
        // Trimmed by a quarter at a time: a chatty process does not move a megabyte per line.
        if self.text.len() > KEPT + KEPT / 4 {
            let cut = ceil_boundary(&self.text, self.text.len() - KEPT);
            self.text.drain(..cut);
            self.dropped += cut as u64;
        }
    }

    /// Bytes printed since the start.
    pub fn total(&self) -> u64 {
        self.dropped + self.text.len() as u64
    }

    /// Everything after `offset` that is still kept (from the next whole character).
    pub fn since(&self, offset: u64) -> Since {
        let missed = self.dropped.saturating_sub(offset);
        let from = offset
            .saturating_sub(self.dropped)
            .min(self.text.len() as u64) as usize;
        let from = ceil_boundary(&self.text, from);
        Since {
            text: self.text[from..].to_string(),
            missed,
            next: self.total(),
        }
    }

    /// The last `max` bytes (from a whole character).
    pub fn tail(&self, max: usize) -> &str {
        let from = ceil_boundary(&self.text, self.text.len().saturating_sub(max));
        &self.text[from..]
    }
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i.min(s.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_gets_what_came_after_its_offset_and_is_told_what_was_dropped() {
        let mut log = OutputLog::default();
        log.push("ready on :3000\n");
        let first = log.since(0);
        assert_eq!(first.text, "ready on :3000\n");
        assert_eq!((first.missed, first.next), (0, 15));
        log.push("GET / 200\n");
        assert_eq!(log.since(first.next).text, "GET / 200\n");
        assert_eq!(log.since(log.total()).text, "");
        // A megabyte and a half later the start is gone: the reader is told how much it missed.
        let line = "é".repeat(511) + "\n";
        for _ in 0..1600 {
            log.push(&line);
        }
        let late = log.since(first.next);
        assert!(late.missed > 0);
        assert!(late.text.len() <= KEPT + KEPT / 4);
        assert_eq!(late.next, log.total());
        assert_eq!(
            u64::from(late.missed > 0) * (late.missed + late.text.len() as u64),
            log.total() - first.next
        );
        // An offset inside a character starts at the next whole one.
        let mut small = OutputLog::default();
        small.push("aé b");
        assert_eq!(small.since(2).text, " b");
        assert_eq!(small.tail(3), " b");
    }
}
