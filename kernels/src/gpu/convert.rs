//! Exact conversions between f32 and the 16-bit float formats in integer arithmetic (IEEE's
//! results; NaN stays NaN, made quiet). A leaf: the simulator's `cvt` instructions and the
//! 16-bit types (`crate::half`) both use it.

/// binary16 bits to the f32 with the same value (exact). Branch-free in effect (the choices
/// become `selp`): normal numbers rebias the exponent; inf/NaN keep the payload (NaN made
/// quiet); zero and subnormals come out of an exact f32 subtraction,
/// `(2^-14 + m*2^-24) - 2^-14` (both operands and the result are normal f32, so flushing modes
/// cannot touch it).
#[inline(always)]
pub const fn f16_bits_to_f32(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let em = ((h & 0x7fff) as u32) << 13;
    let exp = em & 0x0f80_0000;
    let bits = if exp == 0x0f80_0000 {
        let quiet = if em & 0x7f_e000 != 0 { 0x40_0000 } else { 0 };
        em | 0x7f80_0000 | quiet
    } else if exp == 0 {
        let magic = f32::from_bits(113 << 23); // 2^-14
        (f32::from_bits(em + (113 << 23)) - magic).to_bits()
    } else {
        em + (112 << 23)
    };
    f32::from_bits(sign | bits)
}

/// The f32 rounded to binary16 bits (nearest, ties to even; overflow to inf).
#[inline(always)]
pub const fn f32_to_f16_bits(x: f32) -> u16 {
    let x = x.to_bits();
    let sign = ((x >> 16) & 0x8000) as u16;
    let exp = ((x >> 23) & 0xff) as i32;
    let man = x & 0x7f_ffff;
    if exp == 0xff {
        return sign
            | 0x7c00
            | if man != 0 {
                0x200 | (man >> 13) as u16
            } else {
                0
            };
    }
    let e = exp - 112; // the binary16 biased exponent
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign; // below half the smallest subnormal
        }
        // Subnormal result: the 24-bit significand in units of 2^-24.
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let r = m >> shift;
        let rem = m & ((1 << shift) - 1);
        let half = 1 << (shift - 1);
        let up = rem > half || (rem == half && r & 1 == 1);
        return sign | (r + up as u32) as u16; // may carry into the smallest normal: right
    }
    let r = ((e as u32) << 10) | (man >> 13);
    let rem = man & 0x1fff;
    let up = rem > 0x1000 || (rem == 0x1000 && r & 1 == 1);
    sign | (r + up as u32) as u16 // a carry into the exponent may give inf: right
}

/// bfloat16 bits to the f32 with the same value (exact).
#[inline(always)]
pub const fn bf16_bits_to_f32(b: u16) -> f32 {
    f32::from_bits((b as u32) << 16)
}

/// The f32 rounded to bfloat16 bits (nearest, ties to even; overflow to inf).
#[inline(always)]
pub const fn f32_to_bf16_bits(x: f32) -> u16 {
    let x = x.to_bits();
    if x & 0x7fff_ffff > 0x7f80_0000 {
        return ((x >> 16) | 0x40) as u16; // NaN, made quiet
    }
    ((x + 0x7fff + ((x >> 16) & 1)) >> 16) as u16
}
