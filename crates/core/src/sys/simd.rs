//! The SSE2 operations the text readers use (`stats::ministat::lines`), as safe functions: SSE2
//! is part of every x86_64 CPU, so the build enables it and its intrinsics are always sound to
//! call; only their calls (and one unaligned load) need `unsafe`, and that lives here.

use std::arch::x86_64::*;

/// Sixteen bytes in an SSE2 register.
#[derive(Clone, Copy)]
pub(crate) struct V16(__m128i);

// Every `unsafe` below calls an SSE2 intrinsic. SAFETY (for all of them): the module is only
// compiled with `target_feature = "sse2"` (see sys/mod.rs), so the CPU has SSE2; the arguments
// are plain values (and, for the load, 16 readable bytes).
impl V16 {
    /// The 16 bytes of `s`.
    #[inline(always)]
    pub(crate) fn load(s: &[u8; 16]) -> V16 {
        // SAFETY: `s` is 16 readable bytes; `loadu` needs no alignment.
        V16(unsafe { _mm_loadu_si128(s.as_ptr().cast()) })
    }

    /// Every byte `b`.
    #[inline(always)]
    pub(crate) fn splat(b: u8) -> V16 {
        V16(unsafe { _mm_set1_epi8(b as i8) })
    }

    /// All ones in the bytes equal in `self` and `o`, zero elsewhere.
    #[inline(always)]
    pub(crate) fn eq(self, o: V16) -> V16 {
        V16(unsafe { _mm_cmpeq_epi8(self.0, o.0) })
    }

    /// Bytewise `self - o`, wrapping.
    #[inline(always)]
    pub(crate) fn wrapping_sub(self, o: V16) -> V16 {
        V16(unsafe { _mm_sub_epi8(self.0, o.0) })
    }

    /// Bytewise unsigned minimum.
    #[inline(always)]
    pub(crate) fn min(self, o: V16) -> V16 {
        V16(unsafe { _mm_min_epu8(self.0, o.0) })
    }

    /// `self & o`.
    #[inline(always)]
    pub(crate) fn and(self, o: V16) -> V16 {
        V16(unsafe { _mm_and_si128(self.0, o.0) })
    }

    /// `!self & o`.
    #[inline(always)]
    pub(crate) fn and_not(self, o: V16) -> V16 {
        V16(unsafe { _mm_andnot_si128(self.0, o.0) })
    }

    /// `self | o`.
    #[inline(always)]
    pub(crate) fn or(self, o: V16) -> V16 {
        V16(unsafe { _mm_or_si128(self.0, o.0) })
    }

    /// Byte i moved to byte i + 1 (byte 0 zero, byte 15 dropped).
    #[inline(always)]
    pub(crate) fn shift_up(self) -> V16 {
        V16(unsafe { _mm_slli_si128::<1>(self.0) })
    }

    /// Bit i set when the top bit of byte i is.
    #[inline(always)]
    pub(crate) fn mask(self) -> u32 {
        unsafe { _mm_movemask_epi8(self.0) as u32 }
    }

    /// The number written by the 16 bytes as decimal digits (each 0..=9, byte 0 the most
    /// significant), as its high and low eight digits: pairs, then quads, then eights are
    /// combined by multiply-adds.
    #[inline(always)]
    pub(crate) fn decimal_halves(self) -> (u32, u32) {
        unsafe {
            let zero = _mm_setzero_si128();
            let w10 = _mm_setr_epi16(10, 1, 10, 1, 10, 1, 10, 1);
            let pairs = _mm_packs_epi32(
                _mm_madd_epi16(_mm_unpacklo_epi8(self.0, zero), w10),
                _mm_madd_epi16(_mm_unpackhi_epi8(self.0, zero), w10),
            );
            let w100 = _mm_setr_epi16(100, 1, 100, 1, 100, 1, 100, 1);
            let quads = _mm_madd_epi16(pairs, w100);
            let quads = _mm_packs_epi32(quads, quads);
            let w1e4 = _mm_setr_epi16(10_000, 1, 10_000, 1, 10_000, 1, 10_000, 1);
            let eights = _mm_cvtsi128_si64(_mm_madd_epi16(quads, w1e4)) as u64;
            (eights as u32, (eights >> 32) as u32)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_halves_and_masks() {
        let b = *b"1234567890123456";
        let d = V16::load(&b).wrapping_sub(V16::splat(b'0'));
        assert_eq!(d.decimal_halves(), (12_345_678, 90_123_456));
        assert_eq!(V16::load(&b).eq(V16::splat(b'1')).mask(), 1 | 1 << 10);
        let up = V16::load(&b).shift_up().eq(V16::splat(b'1')).mask();
        assert_eq!(up, 1 << 1 | 1 << 11);
    }
}
