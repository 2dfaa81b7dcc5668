//! Fixed-size statistics of a real-time loop's timings, kept inside the
//! loop without allocation: a [`Histogram`] of durations (worst and median)
//! and a [`Spread`] (minimum to maximum, for jitter).
//!
//! Durations are in clock counts (one bin per count: under `-icount
//! shift=0` on `mps2-an386` a count is 40 instructions, so the median is
//! exact to the clock's resolution). A duration beyond the last bin still
//! counts — in an overflow bin, and in the exact worst case — so the median
//! is the worst case when more than half overflow. Counts saturate at
//! `u16::MAX` per bin.

/// Counts of durations `0 ..= BINS − 1`, an overflow count and the worst.
#[derive(Clone, Debug)]
pub struct Histogram<const BINS: usize> {
    counts: [u16; BINS],
    overflow: u32,
    samples: u32,
    worst: u32,
}

impl<const BINS: usize> Default for Histogram<BINS> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const BINS: usize> Histogram<BINS> {
    /// No samples.
    pub const fn new() -> Self {
        Self {
            counts: [0; BINS],
            overflow: 0,
            samples: 0,
            worst: 0,
        }
    }

    /// Counts one duration.
    #[inline]
    pub fn record(&mut self, x: u32) {
        match self.counts.get_mut(x as usize) {
            Some(c) => *c = c.saturating_add(1),
            None => self.overflow = self.overflow.saturating_add(1),
        }
        self.samples = self.samples.saturating_add(1);
        self.worst = self.worst.max(x);
    }

    /// Durations counted.
    pub fn samples(&self) -> u32 {
        self.samples
    }

    /// The largest duration counted (0 without samples).
    pub fn worst(&self) -> u32 {
        self.worst
    }

    /// The lower median: the smallest `x` with at least half the samples
    /// `≤ x` (0 without samples; the worst when it lies in the overflow).
    pub fn median(&self) -> u32 {
        let half = self.samples.div_ceil(2);
        let mut seen = 0u32;
        for (x, &c) in self.counts.iter().enumerate() {
            seen += u32::from(c);
            if seen >= half && half > 0 {
                return x as u32;
            }
        }
        if half == 0 { 0 } else { self.worst }
    }
}

/// The range of a signed quantity: the jitter of tick start times is the
/// spread of their offsets from the ideal grid.
#[derive(Clone, Copy, Debug)]
pub struct Spread {
    min: i32,
    max: i32,
}

impl Default for Spread {
    fn default() -> Self {
        Self::new()
    }
}

impl Spread {
    /// Empty.
    pub const fn new() -> Self {
        Self {
            min: i32::MAX,
            max: i32::MIN,
        }
    }

    /// Takes `x` in.
    #[inline]
    pub fn record(&mut self, x: i32) {
        self.min = self.min.min(x);
        self.max = self.max.max(x);
    }

    /// `max − min` (0 when empty).
    pub fn spread(&self) -> u32 {
        if self.max < self.min {
            0
        } else {
            self.max.abs_diff(self.min)
        }
    }

    /// The smallest and the largest value (0, 0 when empty).
    pub fn range(&self) -> (i32, i32) {
        if self.max < self.min {
            (0, 0)
        } else {
            (self.min, self.max)
        }
    }
}
