//! The byte framing of a checkpoint section: [`Writer`] and [`Reader`]
//! (little-endian numbers, `f32`/`f64` as bit patterns, tensors with their
//! domain checked), shared by every algorithm's checkpoint section.

use crate::error::Error;
use crate::params::{Params, TensorData};

/// Writes a checkpoint section: little-endian numbers, `f32`/`f64` as bit
/// patterns. A dry writer (`commit = false`) writes nothing and only checks
/// and counts, so [`Trainer::save`](crate::train::Trainer::save) refuses before writing a byte.
#[derive(Debug)]
pub struct Writer<'a> {
    pub(super) buf: &'a mut [u8],
    pub(super) pos: usize,
    pub(super) commit: bool,
}

impl Writer<'_> {
    pub(super) fn bytes(&mut self, b: &[u8]) {
        let end = self.pos.saturating_add(b.len());
        if self.commit
            && let Some(dst) = self.buf.get_mut(self.pos..end)
        {
            dst.copy_from_slice(b);
        }
        self.pos = end;
    }

    /// A `u32`.
    pub fn u32(&mut self, x: u32) {
        self.bytes(&x.to_le_bytes());
    }

    /// A `u64`.
    pub fn u64(&mut self, x: u64) {
        self.bytes(&x.to_le_bytes());
    }

    /// A finite `f32` (its bits).
    ///
    /// # Errors
    /// [`Error::NonFinite`] for NaN or ±∞ (a checkpoint that could not be
    /// resumed is not written).
    pub fn f32(&mut self, x: f32) -> Result<(), Error> {
        crate::error::check_finite(x)?;
        self.u32(x.to_bits());
        Ok(())
    }

    /// A finite `f64` (its bits).
    ///
    /// # Errors
    /// [`Error::NonFinite`] for NaN or ±∞.
    pub fn f64(&mut self, x: f64) -> Result<(), Error> {
        if !x.is_finite() {
            return Err(Error::NonFinite);
        }
        self.u64(x.to_bits());
        Ok(())
    }

    /// Every scalar of `p`, tensor by tensor; with `domain`, `p` must also
    /// lie in its domain ([`Params::check_domain`]) — true for weights,
    /// normalisers and action spaces, false for optimiser moments.
    ///
    /// # Errors
    /// [`Error::NonFinite`], [`Error::OutOfDomain`].
    pub fn params<P: Params>(&mut self, p: &P, domain: bool) -> Result<(), Error> {
        if !p.is_finite() {
            return Err(Error::NonFinite);
        }
        if domain {
            p.check_domain()?;
        }
        for i in 0..P::TENSORS {
            for &x in p.tensor(i) {
                self.u32(x.to_bits());
            }
        }
        Ok(())
    }
}

/// Reads a checkpoint section written by [`Writer`]. A dry reader
/// (`commit = false`) parses and checks without writing into the
/// destination: [`AgentState::load_state`](crate::checkpoint::AgentState::load_state) runs once dry, then for real.
#[derive(Debug)]
pub struct Reader<'a> {
    pub(super) buf: &'a [u8],
    pub(super) pos: usize,
    pub(super) commit: bool,
}

impl<'a> Reader<'a> {
    /// Whether this pass writes into the destination.
    pub fn commit(&self) -> bool {
        self.commit
    }

    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        let end = self.pos.checked_add(n).ok_or(Error::Truncated)?;
        let b = self.buf.get(self.pos..end).ok_or(Error::Truncated)?;
        self.pos = end;
        Ok(b)
    }

    /// A `u16`.
    ///
    /// # Errors
    /// [`Error::Truncated`] past the end.
    pub fn u16(&mut self) -> Result<u16, Error> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    /// A `u32`.
    ///
    /// # Errors
    /// [`Error::Truncated`] past the end.
    pub fn u32(&mut self) -> Result<u32, Error> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A `u64`.
    ///
    /// # Errors
    /// [`Error::Truncated`] past the end.
    pub fn u64(&mut self) -> Result<u64, Error> {
        let lo = u64::from(self.u32()?);
        let hi = u64::from(self.u32()?);
        Ok((hi << 32) | lo)
    }

    /// A flag stored as a `u32` 0 or 1.
    ///
    /// # Errors
    /// [`Error::Truncated`]; [`Error::InvalidState`] for another value.
    pub fn flag(&mut self) -> Result<bool, Error> {
        match self.u32()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(Error::InvalidState {
                what: "flag is neither 0 nor 1",
            }),
        }
    }

    /// A finite `f32`.
    ///
    /// # Errors
    /// [`Error::Truncated`], [`Error::NonFinite`].
    pub fn f32(&mut self) -> Result<f32, Error> {
        let x = f32::from_bits(self.u32()?);
        crate::error::check_finite(x)?;
        Ok(x)
    }

    /// A finite `f64`.
    ///
    /// # Errors
    /// [`Error::Truncated`], [`Error::NonFinite`].
    pub fn f64(&mut self) -> Result<f64, Error> {
        let x = f64::from_bits(self.u64()?);
        if x.is_finite() {
            Ok(x)
        } else {
            Err(Error::NonFinite)
        }
    }

    /// `P::LEN` finite scalars into `dst` (only when committing); with
    /// `domain`, they must lie in `P`'s domain ([`Params::check_values`]).
    ///
    /// # Errors
    /// [`Error::Truncated`], [`Error::NonFinite`], [`Error::OutOfDomain`];
    /// `dst` is unchanged then.
    pub fn params<P: Params>(&mut self, dst: &mut P, domain: bool) -> Result<(), Error> {
        let bytes = self.take(4 * P::LEN)?;
        let words = bytes.chunks_exact(4);
        if !words
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .all(f32::is_finite)
        {
            return Err(Error::NonFinite);
        }
        let tensor_bytes = |dst: &P, i: usize| {
            let start: usize = (0..i).map(|j| dst.tensor(j).len()).sum();
            let len = dst.tensor(i).len();
            bytes.get(4 * start..4 * (start + len)).unwrap_or(&[])
        };
        if domain {
            let view = |i: usize| TensorData::from_le_bytes(tensor_bytes(dst, i));
            P::check_values(0, &view)?;
        }
        if self.commit {
            let mut k = 0;
            for i in 0..P::TENSORS {
                for x in dst.tensor_mut(i) {
                    if let Some(b) = bytes.get(k..k + 4) {
                        *x = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                    }
                    k += 4;
                }
            }
        }
        Ok(())
    }
}
