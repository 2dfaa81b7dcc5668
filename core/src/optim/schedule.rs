//! Hyper-parameter schedules over training progress (learning rate, PPO clip range).
//!
//! A schedule is evaluated at `progress ∈ [0, 1]`, the fraction of training
//! already done (CleanRL anneals with `frac = 1 − (update − 1) / num_updates`,
//! i.e. `progress = (update − 1) / num_updates`).

/// A value that may change over training.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Schedule {
    /// The same value throughout.
    Constant(f32),
    /// Linear interpolation from `start` (progress 0) to `end` (progress 1).
    Linear {
        /// Value at the start of training.
        start: f32,
        /// Value at the end of training.
        end: f32,
    },
}

impl Schedule {
    /// Linear decay from `start` to zero (SB3's and CleanRL's `anneal_lr`).
    pub const fn linear_to_zero(start: f32) -> Self {
        Self::Linear { start, end: 0.0 }
    }

    /// The value at `progress` (clamped to `[0, 1]`; NaN counts as 0).
    pub fn value(&self, progress: f32) -> f32 {
        match *self {
            Self::Constant(v) => v,
            Self::Linear { start, end } => {
                let p = if progress > 0.0 {
                    progress.min(1.0)
                } else {
                    0.0
                };
                start + (end - start) * p
            }
        }
    }

    /// The value after `step` of `total` steps.
    pub fn at(&self, step: u64, total: u64) -> f32 {
        if total == 0 {
            return self.value(1.0);
        }
        self.value(step as f32 / total as f32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_to_zero_anneals() {
        let s = Schedule::linear_to_zero(3e-4);
        assert_eq!(s.value(0.0), 3e-4);
        assert!((s.value(0.5) - 1.5e-4).abs() < 1e-10);
        assert_eq!(s.value(1.0), 0.0);
        assert_eq!(s.value(2.0), 0.0);
        assert_eq!(s.value(-1.0), 3e-4);
        assert_eq!(s.value(f32::NAN), 3e-4);
        assert_eq!(s.at(25, 100), s.value(0.25));
        assert_eq!(s.at(0, 0), 0.0);
    }

    #[test]
    fn constant_is_constant() {
        assert_eq!(Schedule::Constant(0.2).value(0.7), 0.2);
    }
}
