//! The binary parameter format: how trained weights travel from the desktop to
//! the firmware.
//!
//! Writing and reading use a byte slice the caller provides (a `static` array,
//! a flash page, `include_bytes!`), never an allocator. All numbers are
//! little-endian:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `b"MRLP"` |
//! | 4 | 2 | format version ([`VERSION`]) |
//! | 6 | 2 | maths backend ([`MathBackend::code`]: 0 `fast-math`, 1 libm, 2 `micromath`; reserved and 0 before it existed) |
//! | 8 | 4 | number of tensors `T` |
//! | 12 | 4 | number of scalars `N` |
//! | 16 | 12·T | per tensor: rows, cols, tag ([`TensorShape`]) |
//! | 16 + 12·T | 4·N | the scalars as `f32`, tensor by tensor, column-major |
//! | end − 4 | 4 | CRC-32 (IEEE 802.3) of every preceding byte |
//!
//! [`load`] checks, in order: magic, version and a known backend code, exact total length, checksum,
//! tensor and scalar counts, every tensor's shape and kind, that every
//! scalar is finite, and that every tensor lies in its *domain*
//! ([`Params::check_values`]: a normaliser's variance and count `≥ 0`, a
//! Gaussian's `log_std` within
//! [`LOG_STD_MIN`](crate::policy::LOG_STD_MIN)`..=`[`LOG_STD_MAX`](crate::policy::LOG_STD_MAX),
//! actuator bounds `low ≤ high`) — and writes into the destination only if
//! all pass. The domain is checked on the blob's bytes in place, so `load`
//! needs neither an allocator nor a temporary copy of the destination (18 KB
//! for a 4-64-64-2 policy: too much for an MCU stack). The CRC-32 detects
//! every error burst of up to 32 bits, so any single corrupted byte is
//! rejected; a blob with a *recomputed* checksum around a value outside its
//! domain (one that would load and then fail every `act`) is refused with
//! [`Error::OutOfDomain`] naming the tensor. [`save`] refuses what `load`
//! would refuse.
//!
//! **The maths backend.** [`save`] records the build's
//! [`math::BACKEND`](crate::math::BACKEND). Last of all, [`load`] compares it
//! with the file's: another backend is [`Error::Backend`]`{ file, build }`
//! and nothing is written. That is an error rather than an `Ok` with a flag
//! because a flag is easy to drop, and a firmware that deploys a policy
//! evaluated under another backend should decide so in its source: the
//! actions differ by about 1 ulp in `exp`/`tanh`, which is enough for
//! another action where two are nearly tied, and for another action hash.
//! Because it is checked last, `Error::Backend` means "everything else is
//! valid": [`load_any_backend`] loads the same blob and returns the file's
//! backend. Files written before the field existed hold 0 and read as
//! `fast-math`, the backend of the `microrl` CLI and the firmware that wrote
//! them (see [`MathBackend`]), so their bytes are unchanged.

use crate::error::Error;
use crate::math::{BACKEND, MathBackend};
use crate::params::{Params, TensorData, TensorShape};

/// Magic number at the start of every blob.
pub const MAGIC: [u8; 4] = *b"MRLP";
/// Current format version. The maths backend took over the reserved `u16`
/// after it without a new version: 0, what format 1 always wrote, is
/// [`MathBackend::FastMath`].
pub const VERSION: u16 = 1;
/// Size of the fixed part of the header.
pub const HEADER_LEN: usize = 16;
/// Size of one tensor descriptor.
pub const TENSOR_DESCRIPTOR_LEN: usize = 12;

/// Size in bytes of the blob that stores a `P`. A `const fn`, so a buffer can
/// be declared as `[u8; encoded_len::<MyPolicy>()]`.
pub const fn encoded_len<P: Params>() -> usize {
    HEADER_LEN + TENSOR_DESCRIPTOR_LEN * P::TENSORS + 4 * P::LEN + 4
}

/// Writes `params` into the start of `out`; returns the number of bytes written.
///
/// # Errors
/// [`Error::BufferTooSmall`] if `out` is shorter than [`encoded_len::<P>()`](encoded_len),
/// [`Error::NonFinite`] if a parameter is NaN or infinite, [`Error::OutOfDomain`]
/// if a tensor is outside its domain ([`Params::check_domain`]; such blobs
/// could not be loaded). Nothing is written on error.
pub fn save<P: Params>(params: &P, out: &mut [u8]) -> Result<usize, Error> {
    let len = encoded_len::<P>();
    if out.len() < len {
        return Err(Error::BufferTooSmall);
    }
    if !params.is_finite() {
        return Err(Error::NonFinite);
    }
    params.check_domain()?;
    let mut w = Writer { buf: out, pos: 0 };
    w.bytes(&MAGIC);
    w.bytes(&VERSION.to_le_bytes());
    w.bytes(&BACKEND.code().to_le_bytes());
    w.u32(P::TENSORS as u32);
    w.u32(P::LEN as u32);
    for i in 0..P::TENSORS {
        let shape = P::shape(i);
        w.u32(shape.rows);
        w.u32(shape.cols);
        w.u32(shape.tag);
    }
    for i in 0..P::TENSORS {
        for &x in params.tensor(i) {
            w.bytes(&x.to_le_bytes());
        }
    }
    let crc = crc32(&w.buf[..w.pos]);
    w.u32(crc);
    Ok(w.pos)
}

/// Overwrites `params` with the blob in `bytes`, which must be exactly one
/// blob written by a build of the same maths backend.
///
/// # Errors
/// [`Error::Truncated`], [`Error::BadMagic`], [`Error::UnsupportedVersion`]
/// (also for an unknown backend code), [`Error::ShapeMismatch`] (different
/// layer dimensions, tensor kinds or activations), [`Error::TrailingBytes`],
/// [`Error::ChecksumMismatch`], [`Error::NonFinite`] or
/// [`Error::OutOfDomain`] (a finite value outside its tensor's domain, e.g. a
/// negative normaliser variance); last, [`Error::Backend`] if every other
/// check passed but the file's maths backend is not
/// [`math::BACKEND`](crate::math::BACKEND) ([`load_any_backend`] accepts it).
/// On any error `params` is unchanged.
pub fn load<P: Params>(params: &mut P, bytes: &[u8]) -> Result<(), Error> {
    load_checked(params, bytes, true).map(|_| ())
}

/// [`load`], accepting a blob of any maths backend; returns the file's
/// backend. For a caller that has decided the last-bit differences of
/// another backend are acceptable (an evaluation tool, a firmware that was
/// tested with the policy under its own backend).
///
/// # Errors
/// As [`load`], except [`Error::Backend`]. On any error `params` is
/// unchanged.
pub fn load_any_backend<P: Params>(params: &mut P, bytes: &[u8]) -> Result<MathBackend, Error> {
    load_checked(params, bytes, false)
}

fn load_checked<P: Params>(
    params: &mut P,
    bytes: &[u8],
    same_backend: bool,
) -> Result<MathBackend, Error> {
    let header = verify(bytes)?;
    if header.tensors as usize != P::TENSORS || header.scalars as usize != P::LEN {
        return Err(Error::ShapeMismatch);
    }
    if (0..P::TENSORS).any(|i| tensor_shape(bytes, i) != P::shape(i)) {
        return Err(Error::ShapeMismatch);
    }
    let body = &bytes[..bytes.len() - 4];
    let payload = &body[HEADER_LEN + TENSOR_DESCRIPTOR_LEN * P::TENSORS..];
    let scalars = payload
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]));
    if scalars.clone().any(|x| !x.is_finite()) {
        return Err(Error::NonFinite);
    }
    // Domains, read from the payload in place. Tensor `i` starts after the
    // destination's tensors `0..i` — the same lengths the write below uses.
    let dst: &P = params;
    let bytes_of = |j: usize| dst.tensor(j).len().saturating_mul(4);
    P::check_values(0, &|i| {
        let start = (0..i).fold(0usize, |at, j| at.saturating_add(bytes_of(j)));
        let end = start.saturating_add(bytes_of(i));
        TensorData::from_le_bytes(payload.get(start..end).unwrap_or(&[]))
    })?;
    if same_backend && header.backend != BACKEND {
        return Err(Error::Backend {
            file: header.backend,
            build: BACKEND,
        });
    }
    // Every check passed: now write.
    let mut scalars = scalars;
    for i in 0..P::TENSORS {
        for (dst, src) in params.tensor_mut(i).iter_mut().zip(&mut scalars) {
            *dst = src;
        }
    }
    Ok(header.backend)
}

/// The fixed part of a blob's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Header {
    /// Format version.
    pub version: u16,
    /// The maths backend of the build that wrote the blob.
    pub backend: MathBackend,
    /// Number of tensors.
    pub tensors: u32,
    /// Number of scalars.
    pub scalars: u32,
}

impl Header {
    /// Total blob length announced by this header, in `u64` so that a
    /// corrupted count cannot overflow a 32-bit `usize`.
    pub fn blob_len(&self) -> u64 {
        HEADER_LEN as u64
            + TENSOR_DESCRIPTOR_LEN as u64 * u64::from(self.tensors)
            + 4 * u64::from(self.scalars)
            + 4
    }
}

/// Reads and checks the fixed header (magic, version, backend code) without
/// knowing the destination type, e.g. to describe a file.
///
/// # Errors
/// [`Error::Truncated`], [`Error::BadMagic`] or [`Error::UnsupportedVersion`]
/// (another version, or a backend code this release does not know).
pub fn read_header(bytes: &[u8]) -> Result<Header, Error> {
    if bytes.len() < HEADER_LEN {
        return Err(Error::Truncated);
    }
    if bytes[..4] != MAGIC {
        return Err(Error::BadMagic);
    }
    let version = u16::from_le_bytes([bytes[4], bytes[5]]);
    let backend = MathBackend::from_code(u16::from_le_bytes([bytes[6], bytes[7]]));
    let (VERSION, Some(backend)) = (version, backend) else {
        return Err(Error::UnsupportedVersion);
    };
    Ok(Header {
        version,
        backend,
        tensors: read_u32(bytes, 8),
        scalars: read_u32(bytes, 12),
    })
}

/// Checks a complete blob's length and checksum without knowing the
/// destination type, and returns its header.
///
/// # Errors
/// As [`read_header`], plus [`Error::Truncated`], [`Error::TrailingBytes`] and
/// [`Error::ChecksumMismatch`].
pub fn verify(bytes: &[u8]) -> Result<Header, Error> {
    let header = read_header(bytes)?;
    let len = header.blob_len();
    if (bytes.len() as u64) < len {
        return Err(Error::Truncated);
    }
    if bytes.len() as u64 > len {
        return Err(Error::TrailingBytes);
    }
    // Here len == bytes.len() >= HEADER_LEN + 4.
    let len = bytes.len();
    let (body, crc) = bytes.split_at(len - 4);
    if crc32(body) != read_u32(crc, 0) {
        return Err(Error::ChecksumMismatch);
    }
    Ok(header)
}

/// Descriptor of tensor `i` in a blob whose header has been checked to hold
/// more than `i` tensors and whose length has been checked.
pub fn tensor_shape(bytes: &[u8], i: usize) -> TensorShape {
    let at = HEADER_LEN + TENSOR_DESCRIPTOR_LEN * i;
    TensorShape {
        rows: read_u32(bytes, at),
        cols: read_u32(bytes, at + 4),
        tag: read_u32(bytes, at + 8),
    }
}

/// Little-endian `u32` at `at`, or 0 if the slice is too short.
fn read_u32(bytes: &[u8], at: usize) -> u32 {
    match bytes.get(at..at + 4) {
        Some(b) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        None => 0,
    }
}

/// Sequential writer into a slice already checked to be long enough.
struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl Writer<'_> {
    fn bytes(&mut self, data: &[u8]) {
        if let Some(dst) = self.buf.get_mut(self.pos..self.pos + data.len()) {
            dst.copy_from_slice(data);
        }
        self.pos += data.len();
    }

    fn u32(&mut self, x: u32) {
        self.bytes(&x.to_le_bytes());
    }
}

/// CRC-32/ISO-HDLC (the zlib/PNG/Ethernet CRC), reflected polynomial
/// `0xEDB88320`, computed a nibble at a time with a 64-byte table — small
/// enough for flash-constrained firmware.
pub fn crc32(data: &[u8]) -> u32 {
    const fn nibble_table() -> [u32; 16] {
        let mut table = [0u32; 16];
        let mut i = 0;
        while i < 16 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 4 {
                c = if c & 1 != 0 {
                    (c >> 1) ^ 0xEDB8_8320
                } else {
                    c >> 1
                };
                k += 1;
            }
            table[i] = c;
            i += 1;
        }
        table
    }
    const TABLE: [u32; 16] = nibble_table();
    let mut crc = !0u32;
    for &byte in data {
        crc ^= u32::from(byte);
        crc = (crc >> 4) ^ TABLE[(crc & 0xF) as usize];
        crc = (crc >> 4) ^ TABLE[(crc & 0xF) as usize];
    }
    !crc
}

/// Serialises `params` into a new `Vec` (desktop convenience).
#[cfg(feature = "std")]
pub fn to_vec<P: Params>(params: &P) -> Result<std::vec::Vec<u8>, Error> {
    let mut out = std::vec![0u8; encoded_len::<P>()];
    save(params, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::{Layer, Mlp, Relu, fd, gain};
    use crate::policy::{CategoricalActor, Gaussian, GaussianActor};
    extern crate std;
    use std::vec;

    type Policy = CategoricalActor<Mlp<4, 8, 2>>;

    fn trained_like() -> Policy {
        let mut p = Policy::ZERO;
        p.net
            .init_orthogonal(&mut fd::rng(7), gain::HIDDEN, gain::POLICY);
        fd::randomise_biases(&mut p.net, &mut fd::rng(8));
        p
    }

    fn saved(p: &Policy) -> std::vec::Vec<u8> {
        let mut buf = vec![0u8; encoded_len::<Policy>()];
        assert_eq!(save(p, &mut buf), Ok(buf.len()));
        buf
    }

    #[test]
    fn crc32_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn round_trip_is_bit_exact() {
        let original = trained_like();
        let blob = saved(&original);
        let mut loaded = Policy::ZERO;
        load(&mut loaded, &blob).unwrap();
        for k in 0..Policy::LEN {
            assert_eq!(
                original.get_flat(k).unwrap().to_bits(),
                loaded.get_flat(k).unwrap().to_bits()
            );
        }
        assert_eq!(verify(&blob).unwrap().scalars as usize, Policy::LEN);
    }

    #[test]
    fn every_single_byte_corruption_is_rejected() {
        let blob = saved(&trained_like());
        let sentinel = {
            let mut s = Policy::ZERO;
            s.net.first.bias.fill(0.125);
            s
        };
        let mut corrupt = blob.clone();
        for at in 0..blob.len() {
            for flip in 1..=255u8 {
                corrupt[at] = blob[at] ^ flip;
                let mut dst = sentinel.clone();
                let result = load(&mut dst, &corrupt);
                assert!(result.is_err(), "byte {at} ^ {flip:#x} accepted");
                assert!(dst == sentinel, "byte {at}: destination modified on error");
            }
            corrupt[at] = blob[at];
        }
    }

    #[test]
    fn truncation_and_trailing_bytes_are_rejected() {
        let blob = saved(&trained_like());
        let mut dst = Policy::ZERO;
        for len in 0..blob.len() {
            assert!(load(&mut dst, &blob[..len]).is_err(), "truncated to {len}");
        }
        assert_eq!(load(&mut dst, &blob[..10]), Err(Error::Truncated));
        assert_eq!(
            load(&mut dst, &blob[..blob.len() - 1]),
            Err(Error::Truncated)
        );
        let mut longer = blob.clone();
        longer.push(0);
        assert_eq!(load(&mut dst, &longer), Err(Error::TrailingBytes));
        assert!(dst == Policy::ZERO);
    }

    #[test]
    fn wrong_dimensions_and_kinds_are_rejected() {
        let blob = saved(&trained_like());
        // Different hidden size: different scalar count.
        let mut wider = CategoricalActor {
            net: Mlp::<4, 9, 2>::ZERO,
        };
        assert_eq!(load(&mut wider, &blob), Err(Error::ShapeMismatch));
        // Same sizes, different activation.
        let mut relu = CategoricalActor {
            net: Mlp::<4, 8, 2, Relu>::ZERO,
        };
        assert_eq!(load(&mut relu, &blob), Err(Error::ShapeMismatch));
        // Same scalar count, transposed layout: 4-8-8-2 vs a Gaussian policy is
        // a different tensor count.
        let mut gaussian = GaussianActor {
            net: Mlp::<4, 8, 2>::ZERO,
            head: Gaussian::<2>::ZERO,
        };
        assert_eq!(load(&mut gaussian, &blob), Err(Error::ShapeMismatch));
    }

    #[test]
    fn bad_magic_version_and_buffer() {
        let blob = saved(&trained_like());
        let mut dst = Policy::ZERO;
        let mut bad = blob.clone();
        bad[0] = b'X';
        assert_eq!(load(&mut dst, &bad), Err(Error::BadMagic));
        let mut bad = blob.clone();
        bad[4] = 2;
        assert_eq!(load(&mut dst, &bad), Err(Error::UnsupportedVersion));
        let mut small = vec![0u8; encoded_len::<Policy>() - 1];
        assert_eq!(
            save(&trained_like(), &mut small),
            Err(Error::BufferTooSmall)
        );
        assert!(small.iter().all(|&b| b == 0));
    }

    #[test]
    fn non_finite_weights_are_refused_both_ways() {
        let mut p = trained_like();
        p.net.first.bias[0] = f32::NAN;
        let mut buf = vec![0u8; encoded_len::<Policy>()];
        assert_eq!(save(&p, &mut buf), Err(Error::NonFinite));
        // A blob with a valid checksum around a NaN weight.
        let mut blob = saved(&trained_like());
        let at = HEADER_LEN + TENSOR_DESCRIPTOR_LEN * Policy::TENSORS;
        blob[at..at + 4].copy_from_slice(&f32::NAN.to_le_bytes());
        let n = blob.len();
        let crc = crc32(&blob[..n - 4]);
        blob[n - 4..].copy_from_slice(&crc.to_le_bytes());
        let mut dst = Policy::ZERO;
        assert_eq!(load(&mut dst, &blob), Err(Error::NonFinite));
        assert!(dst == Policy::ZERO);
    }

    /// Writes `value` over scalar `k` of `blob` and recomputes the CRC.
    fn patch(blob: &mut [u8], tensors: usize, k: usize, value: f32) {
        let at = HEADER_LEN + TENSOR_DESCRIPTOR_LEN * tensors + 4 * k;
        blob[at..at + 4].copy_from_slice(&value.to_le_bytes());
        let n = blob.len();
        let crc = crc32(&blob[..n - 4]);
        blob[n - 4..].copy_from_slice(&crc.to_le_bytes());
    }

    /// A blob with a valid CRC around a negative normaliser variance used to
    /// load (and every `act` then failed); likewise a negative count, an
    /// absurd `log_std` and inverted actuator bounds.
    #[test]
    fn values_outside_their_domain_are_refused_both_ways() {
        use crate::env::Continuous;
        use crate::normalize::RunningNorm;
        use crate::policy::{LOG_STD_MAX, Policy as Deployed};
        type G = Deployed<GaussianActor<Mlp<3, 4, 1>, 1>, 3>;
        let mut good = G::ZERO;
        good.actor
            .net
            .init_orthogonal(&mut fd::rng(9), gain::HIDDEN, gain::POLICY);
        good.space = Continuous::symmetric(2.0);
        good.obs_norm = RunningNorm::ZERO;
        good.obs_norm
            .update(&nalgebra::SVector::<f32, 3>::new(1.0, 2.0, 3.0))
            .unwrap();
        let mut blob = vec![0u8; encoded_len::<G>()];
        save(&good, &mut blob).unwrap();
        let mut dst = G::ZERO;
        load(&mut dst, &blob).unwrap();
        assert!(dst == good);

        // Flat scalar index of each tensor's first value.
        let starts: std::vec::Vec<usize> = (0..G::TENSORS)
            .scan(0, |at, i| {
                let s = *at;
                *at += good.tensor(i).len();
                Some(s)
            })
            .collect();
        let actor_t = GaussianActor::<Mlp<3, 4, 1>, 1>::TENSORS;
        let (log_std_t, var_t, count_t, low_t, high_t) = (
            actor_t - 1,
            actor_t + 1,
            actor_t + 2,
            actor_t + 3,
            actor_t + 4,
        );
        for (tensor, offset, value) in [
            (var_t, 0, -1.0),
            (var_t, 2, -1e-30),
            (count_t, 0, -1.0),
            (log_std_t, 0, LOG_STD_MAX + 1.0),
            (log_std_t, 0, -100.0),
            (low_t, 0, 3.0),   // low 3 > high 2
            (high_t, 0, -2.5), // high −2.5 < low −2
        ] {
            let mut bad = blob.clone();
            patch(&mut bad, G::TENSORS, starts[tensor] + offset, value);
            let sentinel = good.clone();
            let mut dst = sentinel.clone();
            let expected_tensor = if tensor == low_t { high_t } else { tensor };
            match load(&mut dst, &bad) {
                Err(Error::OutOfDomain { tensor: t, .. }) => {
                    assert_eq!(t as usize, expected_tensor, "value {value}")
                }
                other => panic!("tensor {tensor} = {value}: {other:?}"),
            }
            assert!(dst == sentinel, "destination modified");
        }
        // Edge values are inside the domain.
        for (tensor, value) in [(var_t, 0.0), (count_t, 0.0), (log_std_t, LOG_STD_MAX)] {
            let mut edge = blob.clone();
            patch(&mut edge, G::TENSORS, starts[tensor], value);
            assert_eq!(load(&mut dst, &edge), Ok(()), "tensor {tensor} = {value}");
        }
        // `save` refuses what `load` would.
        let mut bad = good.clone();
        bad.obs_norm.var[0] = -1.0;
        let mut out = vec![0u8; encoded_len::<G>()];
        assert_eq!(
            save(&bad, &mut out),
            Err(Error::OutOfDomain {
                tensor: var_t as u32,
                reason: "normaliser variance must be >= 0"
            })
        );
        assert!(out.iter().all(|&b| b == 0));
    }

    /// `blob` with header backend code `code` and a recomputed CRC: what a
    /// build of that backend would have written.
    fn with_backend_code(blob: &[u8], code: u16) -> std::vec::Vec<u8> {
        let mut b = blob.to_vec();
        b[6..8].copy_from_slice(&code.to_le_bytes());
        let n = b.len();
        let crc = crc32(&b[..n - 4]);
        b[n - 4..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    #[test]
    fn save_records_the_build_backend() {
        let blob = saved(&trained_like());
        assert_eq!(blob[6..8], BACKEND.code().to_le_bytes());
        assert_eq!(verify(&blob).unwrap().backend, BACKEND);
    }

    /// A blob of each backend: the build's loads; another is
    /// `Error::Backend` naming both, with the destination untouched, and
    /// `load_any_backend` loads it and names the file's backend.
    #[test]
    fn another_backend_is_reported_and_accepted_only_explicitly() {
        let original = trained_like();
        let blob = saved(&original);
        let sentinel = {
            let mut s = Policy::ZERO;
            s.net.first.bias.fill(0.125);
            s
        };
        for backend in MathBackend::ALL {
            let file = with_backend_code(&blob, backend.code());
            assert_eq!(verify(&file).unwrap().backend, backend);
            let mut dst = sentinel.clone();
            if backend == BACKEND {
                assert_eq!(load(&mut dst, &file), Ok(()));
                assert!(dst == original);
            } else {
                assert_eq!(
                    load(&mut dst, &file),
                    Err(Error::Backend {
                        file: backend,
                        build: BACKEND
                    }),
                    "{backend}"
                );
                assert!(dst == sentinel, "{backend}: destination modified");
            }
            let mut dst = sentinel.clone();
            assert_eq!(load_any_backend(&mut dst, &file), Ok(backend));
            assert!(dst == original);
        }
        // A code this release does not know: a newer format, not a backend.
        for code in [3, 0x100, u16::MAX] {
            let file = with_backend_code(&blob, code);
            let mut dst = sentinel.clone();
            assert_eq!(load(&mut dst, &file), Err(Error::UnsupportedVersion));
            assert_eq!(
                load_any_backend(&mut dst, &file),
                Err(Error::UnsupportedVersion)
            );
            assert!(dst == sentinel);
        }
    }

    /// The backend is checked after everything else: a blob that is also
    /// damaged or of another shape says so, not `Backend`.
    #[test]
    fn backend_is_checked_last() {
        let other = BACKEND_OTHER;
        let file = with_backend_code(&saved(&trained_like()), other.code());
        let mut wider = CategoricalActor {
            net: Mlp::<4, 9, 2>::ZERO,
        };
        assert_eq!(load(&mut wider, &file), Err(Error::ShapeMismatch));
        let mut nan = file.clone();
        patch(&mut nan, Policy::TENSORS, 0, f32::NAN);
        let mut dst = Policy::ZERO;
        assert_eq!(load(&mut dst, &nan), Err(Error::NonFinite));
        let mut corrupt = file.clone();
        corrupt[20] ^= 1;
        assert_eq!(load(&mut dst, &corrupt), Err(Error::ChecksumMismatch));
        assert!(dst == Policy::ZERO);
    }

    /// A backend other than the build's.
    const BACKEND_OTHER: MathBackend = match BACKEND {
        MathBackend::Libm => MathBackend::FastMath,
        _ => MathBackend::Libm,
    };

    /// A format-1 blob from before the field (reserved = 0, today's bytes
    /// of every `fast-math` writer) reads as `fast-math`.
    #[test]
    fn a_file_from_before_the_backend_field_reads_as_fast_math() {
        let original = trained_like();
        let legacy = with_backend_code(&saved(&original), 0);
        assert_eq!(legacy[4..8], [1, 0, 0, 0]);
        assert_eq!(verify(&legacy).unwrap().backend, MathBackend::FastMath);
        let mut dst = Policy::ZERO;
        assert_eq!(
            load_any_backend(&mut dst, &legacy),
            Ok(MathBackend::FastMath)
        );
        assert!(dst == original);
        let mut dst = Policy::ZERO;
        let expected = if BACKEND == MathBackend::FastMath {
            Ok(())
        } else {
            Err(Error::Backend {
                file: MathBackend::FastMath,
                build: BACKEND,
            })
        };
        assert_eq!(load(&mut dst, &legacy), expected);
    }

    #[test]
    fn huge_counts_in_a_header_do_not_overflow() {
        let mut blob = saved(&trained_like());
        blob[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        blob[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(verify(&blob), Err(Error::Truncated));
        let mut dst = Policy::ZERO;
        assert_eq!(load(&mut dst, &blob), Err(Error::Truncated));
    }

    #[test]
    fn encoded_len_is_const() {
        const LEN: usize = encoded_len::<CategoricalActor<Mlp<4, 64, 2>>>();
        let _buffer = [0u8; LEN];
        assert_eq!(LEN, 16 + 12 * 6 + 4 * 4610 + 4);
    }
}
