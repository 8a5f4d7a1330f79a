//! Vectors: L2 normalisation, quantisation with one scale per vector (int8, or 4- or 1-bit codes
//! packed in the file and unpacked to int8 levels on load; the packing also handles 2 bits), and the int8 dot product the cosine
//! search runs on (a SIMD128 path on wasm32 when built with `+simd128`).

/// L2-normalise in place. A zero (or non-finite) vector stays/becomes all zeros.
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        for x in v.iter_mut() {
            *x /= norm;
        }
    } else {
        v.iter_mut().for_each(|x| *x = 0.0);
    }
}

/// Quantise a (normalised) vector to int8: `x ≈ q * scale`, `scale = max|x| / 127`.
/// Non-finite components count as 0. Written with plain compares: `f32::max`/`clamp` keep
/// Rust's NaN rules, which the wasm build turns into a libm call per component.
pub fn quantize(v: &[f32], out: &mut Vec<i8>) -> f32 {
    let mut max = 0.0f32;
    for &x in v {
        let a = x.abs();
        if a > max && a < f32::INFINITY {
            max = a;
        }
    }
    out.clear();
    if max == 0.0 {
        out.resize(v.len(), 0);
        return 0.0;
    }
    let scale = max / 127.0;
    out.reserve(v.len());
    for &x in v {
        let x = if x.abs() < f32::INFINITY { x } else { 0.0 };
        // Ties to even: one wasm `f32.nearest` (`round` is a libm call). The two differ only on
        // exact .5 ties.
        let r = (x / scale).round_ties_even();
        out.push(if r > 127.0 {
            127
        } else if r < -127.0 {
            -127
        } else {
            r as i8
        });
    }
    scale
}

/// Quantise a (normalised) vector to the levels of a `bits`-bit code (8, 4, 2 or 1), one scale
/// per vector: `x ≈ level * scale`. 8 is [`quantize`]. 4 and 2 bits keep the symmetric levels
/// `-(2^(bits-1) - 1)..=2^(bits-1) - 1` of `x / (max|x| / that)`, and the scale that makes the
/// stored vector unit length (`1 / |levels|`), so cosines are cosines to the stored direction and
/// re-indexing a reused vector gives back the same levels and scale. 1 bit keeps the sign
/// (`+1` for `x ≥ 0`) scaled to unit length, `1 / sqrt(dims)`, for the same reasons; on the eval
/// set these cosines put the default relevance floor where int8's do (BENCHMARKS.md §2). The
/// levels are what the search multiplies, so a coarser code costs no search speed once unpacked.
pub fn quantize_levels(v: &[f32], bits: u32, out: &mut Vec<i8>) -> f32 {
    if bits >= 8 {
        return quantize(v, out);
    }
    out.clear();
    let finite = |x: f32| if x.abs() < f32::INFINITY { x } else { 0.0 };
    if bits <= 1 {
        out.extend(v.iter().map(|&x| if finite(x) >= 0.0 { 1 } else { -1 }));
        return if v.is_empty() { 0.0 } else { 1.0 / (v.len() as f32).sqrt() };
    }
    let top = ((1i32 << (bits - 1)) - 1) as f32;
    let max = v.iter().fold(0.0f32, |m, &x| if finite(x).abs() > m { finite(x).abs() } else { m });
    if max == 0.0 {
        out.resize(v.len(), 0);
        return 0.0;
    }
    let step = max / top;
    let mut norm2 = 0i32;
    for &x in v {
        let r = (finite(x) / step).round_ties_even();
        let l = if r > top {
            top as i8
        } else if r < -top {
            -top as i8
        } else {
            r as i8
        };
        norm2 += l as i32 * l as i32;
        out.push(l);
    }
    1.0 / (norm2 as f32).sqrt()
}

/// The mean of unit-length copies of `vectors` (all of length `dims`): the common component
/// an anisotropic model (e5, bge) gives every text. Subtracted before packing below 8 bits
/// ([`quantize_centered`]), so the few bits per component carry what tells texts apart.
pub fn mean_vector(vectors: &[Vec<f32>], dims: usize) -> Vec<f32> {
    let mut sum = vec![0.0f64; dims];
    let mut n = 0usize;
    let mut v = Vec::with_capacity(dims);
    for x in vectors.iter().filter(|x| x.len() == dims) {
        v.clear();
        v.extend_from_slice(x);
        normalize(&mut v);
        sum.iter_mut().zip(&v).for_each(|(s, &c)| *s += f64::from(c));
        n += 1;
    }
    sum.iter().map(|s| if n == 0 { 0.0 } else { (s / n as f64) as f32 }).collect()
}

/// Quantise `v - center` to the levels of a `bits`-bit code (4, 2 or 1) and return the scale
/// `a` for which `center + a × levels` best approximates `v` (1 bit: the mean |component| of
/// `v - center`, the least-squares scale of a sign code; 4 and 2 bits: the step). Searching
/// then scores `q · (center + a × levels) / |center + a × levels|`, a cosine to a
/// reconstruction of `v` rather than to its signs, so the cosines keep their scale.
pub fn quantize_centered(v: &[f32], center: &[f32], bits: u32, out: &mut Vec<i8>) -> f32 {
    out.clear();
    let finite = |x: f32| if x.abs() < f32::INFINITY { x } else { 0.0 };
    let r: Vec<f32> = v
        .iter()
        .zip(center.iter().chain(std::iter::repeat(&0.0)))
        .map(|(&x, &c)| finite(x) - c)
        .collect();
    if bits <= 1 {
        out.extend(r.iter().map(|&x| if x >= 0.0 { 1 } else { -1 }));
        return if r.is_empty() {
            0.0
        } else {
            r.iter().map(|x| x.abs()).sum::<f32>() / r.len() as f32
        };
    }
    let top = ((1i32 << (bits.min(7) - 1)) - 1) as f32;
    let max = r.iter().fold(0.0f32, |m, &x| if x.abs() > m { x.abs() } else { m });
    if max == 0.0 {
        out.resize(r.len(), 0);
        return 0.0;
    }
    let step = max / top;
    out.extend(r.iter().map(|&x| (x / step).round_ties_even().clamp(-top, top) as i8));
    step
}

/// `1 / |center + scale × levels|` (0 for a zero reconstruction): with it, the search turns
/// `q · center + scale × (q · levels)` into a cosine.
pub fn centered_inv_norm(center: &[f32], levels: &[i8], scale: f32) -> f32 {
    let n2: f32 = center
        .iter()
        .zip(levels)
        .map(|(&c, &l)| {
            let x = c + scale * l as f32;
            x * x
        })
        .sum();
    if n2 > 0.0 && n2.is_finite() {
        1.0 / n2.sqrt()
    } else {
        0.0
    }
}

/// How well a quantisation keeps the ranking of `vectors`: up to `samples` of them (spread
/// evenly) serve as pseudo-queries, and the result is the mean share of each one's exact top
/// 10 neighbours (itself excluded, float cosine) that the quantised vectors also put in their
/// top 10. 1.0 = the same neighbours. `center` is used below 8 bits when given, as the index
/// writer does.
pub fn ranking_agreement(
    vectors: &[Vec<f32>],
    bits: u32,
    center: Option<&[f32]>,
    samples: usize,
) -> f32 {
    const K: usize = 10;
    let n = vectors.len();
    let dims = vectors.first().map(Vec::len).unwrap_or(0);
    if n <= K + 1 || dims == 0 || samples == 0 {
        return 1.0;
    }
    let unit: Vec<Vec<f32>> = vectors
        .iter()
        .map(|v| {
            let mut v = v.clone();
            v.resize(dims, 0.0);
            normalize(&mut v);
            v
        })
        .collect();
    // The stored approximation of every vector, as floats.
    let mut levels = Vec::with_capacity(dims);
    let approx: Vec<Vec<f32>> = unit
        .iter()
        .map(|v| {
            let mut a: Vec<f32> = match center.filter(|_| bits < 8) {
                Some(c) => {
                    let s = quantize_centered(v, c, bits, &mut levels);
                    c.iter().zip(&levels).map(|(&c, &l)| c + s * l as f32).collect()
                }
                None => {
                    let s = quantize_levels(v, bits, &mut levels);
                    levels.iter().map(|&l| l as f32 * s).collect()
                }
            };
            normalize(&mut a);
            a
        })
        .collect();
    let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    let top = |q: usize, set: &[Vec<f32>]| -> Vec<usize> {
        let mut scored: Vec<(f32, usize)> =
            (0..n).filter(|&j| j != q).map(|j| (dot(&unit[q], &set[j]), j)).collect();
        scored.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.into_iter().take(K).map(|(_, j)| j).collect()
    };
    let samples = samples.min(n);
    let mut total = 0.0f32;
    for s in 0..samples {
        let q = s * n / samples;
        let exact = top(q, &unit);
        let got = top(q, &approx);
        total += exact.iter().filter(|j| got.contains(j)).count() as f32 / K as f32;
    }
    total / samples as f32
}

/// `a · b`.
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// A unit-length copy of `v`.
fn unit(v: &[f32]) -> Vec<f32> {
    let mut v = v.to_vec();
    normalize(&mut v);
    v
}

/// The mean cosine between `probes` (vectors of texts about nothing the docs cover) and up to
/// `samples` of `vectors` (spread evenly): where an off-topic question lands with this model.
/// `None` without probes or vectors.
pub fn off_topic_cosine(probes: &[Vec<f32>], vectors: &[Vec<f32>], samples: usize) -> Option<f32> {
    let n = vectors.len();
    if probes.is_empty() || n == 0 || samples == 0 {
        return None;
    }
    let probes: Vec<Vec<f32>> = probes.iter().map(|p| unit(p)).collect();
    let take = samples.min(n);
    let mut sum = 0.0f64;
    let mut count = 0usize;
    for s in 0..take {
        let v = unit(&vectors[s * n / take]);
        for p in &probes {
            if p.len() == v.len() {
                sum += f64::from(dot(p, &v));
                count += 1;
            }
        }
    }
    (count > 0).then(|| (sum / count as f64) as f32)
}

/// The median over `probes` of each one's best cosine among `vectors` (every one): where an
/// off-topic question's best match lands on this site. `None` without probes or vectors.
pub fn off_topic_top(probes: &[Vec<f32>], vectors: &[Vec<f32>]) -> Option<f32> {
    let probes: Vec<Vec<f32>> = probes.iter().map(|p| unit(p)).collect();
    let mut best = vec![f32::NEG_INFINITY; probes.len()];
    for v in vectors {
        let v = unit(v);
        for (p, b) in probes.iter().zip(&mut best) {
            if p.len() == v.len() {
                *b = b.max(dot(p, &v));
            }
        }
    }
    let mut best: Vec<f32> = best.into_iter().filter(|b| b.is_finite()).collect();
    best.sort_unstable_by(f32::total_cmp);
    let n = best.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(best[n / 2]),
        _ => Some((best[n / 2 - 1] + best[n / 2]) / 2.0),
    }
}

/// Append `levels` packed at `bits` bits each (4, 2 or 1; 8 copies the bytes): component `j` takes
/// bits `j*bits..(j+1)*bits` of the little-endian bit stream, as a two's-complement code (1 bit:
/// set = +1, clear = -1). The last byte is zero-padded.
pub fn pack_levels(levels: &[i8], bits: u32, out: &mut Vec<u8>) {
    if bits >= 8 {
        out.extend(levels.iter().map(|&x| x as u8));
        return;
    }
    let per_byte = (8 / bits) as usize;
    let mask = (1u8 << bits) - 1;
    for group in levels.chunks(per_byte) {
        let mut byte = 0u8;
        for (k, &x) in group.iter().enumerate() {
            let code = if bits == 1 { u8::from(x > 0) } else { x as u8 & mask };
            byte |= code << (k as u32 * bits);
        }
        out.push(byte);
    }
}

/// Unpack `count` levels of `bits` bits each (see [`pack_levels`]) onto `out`. Returns false
/// when a code lies outside the symmetric range (-2^(bits-1), e.g. -8 for 4 bits, or -128 for
/// 8: the SIMD kernels rely on |level| ≤ 127) or `packed` is too short.
pub fn unpack_levels(packed: &[u8], bits: u32, count: usize, out: &mut Vec<i8>) -> bool {
    if bits >= 8 {
        if packed.len() < count || packed[..count].contains(&0x80) {
            return false;
        }
        out.extend(packed[..count].iter().map(|&b| b as i8));
        return true;
    }
    let per_byte = (8 / bits) as usize;
    let bytes = count.div_ceil(per_byte);
    if packed.len() < bytes {
        return false;
    }
    let shift = 8 - bits;
    let mask = (1u8 << bits) - 1;
    let forbidden = 1u8 << (bits - 1);
    let mut left = count;
    // Byte by byte (no division per component: the widget's wasm runs this at load).
    for &byte in &packed[..bytes] {
        let mut b = byte;
        let take = if left < per_byte { left } else { per_byte };
        for _ in 0..take {
            let code = b & mask;
            b >>= bits;
            out.push(if bits == 1 {
                (code as i8) * 2 - 1
            } else if code == forbidden {
                return false;
            } else {
                // Sign-extend the `bits`-bit two's-complement code.
                ((code << shift) as i8) >> shift
            });
        }
        left -= take;
    }
    true
}

/// Dot product of two int8 vectors of equal length, accumulated in i32.
#[inline]
pub fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    {
        dot_i8_simd128(a, b)
    }
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    {
        dot_i8_scalar(a, b)
    }
}

/// Portable version (LLVM auto-vectorises it on x86_64 and aarch64).
#[inline]
pub fn dot_i8_scalar(a: &[i8], b: &[i8]) -> i32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    // Sum in i16 pairs inside chunks of 16 then widen: mirrors pmaddwd-style codegen.
    let mut acc = 0i32;
    let mut ca = a.chunks_exact(16);
    let mut cb = b.chunks_exact(16);
    for (x, y) in (&mut ca).zip(&mut cb) {
        let mut s = 0i32;
        for k in 0..16 {
            s += x[k] as i32 * y[k] as i32;
        }
        acc += s;
    }
    for (x, y) in ca.remainder().iter().zip(cb.remainder()) {
        acc += *x as i32 * *y as i32;
    }
    acc
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
fn dot_i8_simd128(a: &[i8], b: &[i8]) -> i32 {
    use core::arch::wasm32::*;
    let n = a.len().min(b.len());
    let mut acc = i32x4_splat(0);
    let mut i = 0;
    while i + 16 <= n {
        // SAFETY: i + 16 <= n bounds both loads; v128_load has no alignment requirement.
        let (va, vb) = unsafe {
            (
                v128_load(a.as_ptr().add(i) as *const v128),
                v128_load(b.as_ptr().add(i) as *const v128),
            )
        };
        let lo = i32x4_dot_i16x8(i16x8_extend_low_i8x16(va), i16x8_extend_low_i8x16(vb));
        let hi = i32x4_dot_i16x8(i16x8_extend_high_i8x16(va), i16x8_extend_high_i8x16(vb));
        acc = i32x4_add(acc, i32x4_add(lo, hi));
        i += 16;
    }
    let mut sum = i32x4_extract_lane::<0>(acc)
        + i32x4_extract_lane::<1>(acc)
        + i32x4_extract_lane::<2>(acc)
        + i32x4_extract_lane::<3>(acc);
    while i < n {
        sum += a[i] as i32 * b[i] as i32;
        i += 1;
    }
    sum
}

/// Dot products of the int8 query `q` with every `dims`-long vector in `all` (back to back).
/// Uses AVX2 when the CPU has it (checked at run time), SIMD128 on wasm32 builds with
/// `+simd128`, and the portable loop otherwise; all three give identical results.
pub fn dot_i8_many(q: &[i8], all: &[i8], dims: usize) -> Vec<i32> {
    if dims == 0 || q.len() != dims {
        return Vec::new();
    }
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            return unsafe { dot_many_avx2(q, all, dims) };
        }
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    {
        dot_many_simd128(q, all, dims)
    }
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    {
        all.chunks_exact(dims).map(|v| dot_i8(q, v)).collect()
    }
}

/// SIMD128 batch kernel: the query is sign-extended to i16 once, so each 16-byte block of a
/// stored vector costs one load, two extends and two `i32x4.dot_i16x8`, into two accumulators.
/// Plain `while` loops over raw pointers: the widget's wasm is built at opt-level "z", which
/// does not inline iterator adapters, and a call per block would cost more than the block.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
fn dot_many_simd128(q: &[i8], all: &[i8], dims: usize) -> Vec<i32> {
    use core::arch::wasm32::*;
    let blocks = dims / 16;
    let body = blocks * 16;
    let n = all.len() / dims;
    let mut qe: Vec<v128> = Vec::with_capacity(blocks * 2);
    let mut k = 0;
    while k < blocks {
        // SAFETY: k * 16 + 16 <= body <= q.len(); v128_load has no alignment requirement.
        let v = unsafe { v128_load(q.as_ptr().add(k * 16) as *const v128) };
        qe.push(i16x8_extend_low_i8x16(v));
        qe.push(i16x8_extend_high_i8x16(v));
        k += 1;
    }
    let mut out = Vec::with_capacity(n);
    let mut i = 0;
    while i < n {
        let base = i * dims;
        let (mut a0, mut a1) = (i32x4_splat(0), i32x4_splat(0));
        let mut k = 0;
        while k < blocks {
            // SAFETY: base + k * 16 + 16 <= base + body <= (i + 1) * dims <= all.len(), and
            // 2k + 1 < qe.len() == 2 * blocks.
            unsafe {
                let b = v128_load(all.as_ptr().add(base + k * 16) as *const v128);
                a0 = i32x4_add(
                    a0,
                    i32x4_dot_i16x8(*qe.get_unchecked(2 * k), i16x8_extend_low_i8x16(b)),
                );
                a1 = i32x4_add(
                    a1,
                    i32x4_dot_i16x8(*qe.get_unchecked(2 * k + 1), i16x8_extend_high_i8x16(b)),
                );
            }
            k += 1;
        }
        let a = i32x4_add(a0, a1);
        let mut total = i32x4_extract_lane::<0>(a)
            + i32x4_extract_lane::<1>(a)
            + i32x4_extract_lane::<2>(a)
            + i32x4_extract_lane::<3>(a);
        let mut t = body;
        while t < dims {
            total += q[t] as i32 * all[base + t] as i32;
            t += 1;
        }
        out.push(total);
        i += 1;
    }
    out
}

/// AVX2 kernel: `|q| · (v × sign q)` with `vpmaddubsw` (pairs of u8×i8 into i16: at most
/// 2 × 127 × 127, no saturation) then `vpmaddwd` into i32 lanes. Needs components in
/// -127..=127 (negating -128 wraps): the quantiser never emits -128 and the reader rejects it.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_many_avx2(q: &[i8], all: &[i8], dims: usize) -> Vec<i32> {
    use std::arch::x86_64::*;
    let body = dims / 32 * 32;
    let ones = _mm256_set1_epi16(1);
    let mut out = Vec::with_capacity(all.len() / dims);
    for v in all.chunks_exact(dims) {
        let mut acc = _mm256_setzero_si256();
        let mut i = 0;
        while i < body {
            // SAFETY: i + 32 <= body <= dims == q.len() == v.len(); loadu has no alignment needs.
            let (a, b) = unsafe {
                (
                    _mm256_loadu_si256(q.as_ptr().add(i) as *const __m256i),
                    _mm256_loadu_si256(v.as_ptr().add(i) as *const __m256i),
                )
            };
            let p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(a, a), _mm256_sign_epi8(b, a));
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p16, ones));
            i += 32;
        }
        let s = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256::<1>(acc));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b01_00_11_10>(s));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b10_11_00_01>(s));
        let mut total = _mm_cvtsi128_si32(s);
        for k in body..dims {
            total += q[k] as i32 * v[k] as i32;
        }
        out.push(total);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Unit vectors sharing a large common component (as e5's do), deterministic.
    fn anisotropic(n: usize, dims: usize) -> Vec<Vec<f32>> {
        let mut x: u32 = 0x9E37_79B9;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x as f32 / u32::MAX as f32) - 0.5
        };
        let common: Vec<f32> = (0..dims).map(|j| 0.1 + (j % 5) as f32 * 0.05).collect();
        (0..n)
            .map(|_| {
                let mut v: Vec<f32> = common.iter().map(|c| c + 0.15 * rnd()).collect();
                normalize(&mut v);
                v
            })
            .collect()
    }

    #[test]
    fn sign_bits_relative_to_the_mean_keep_the_neighbours_of_an_anisotropic_model() {
        let vs = anisotropic(300, 128);
        let mean = mean_vector(&vs, 128);
        let int8 = ranking_agreement(&vs, 8, None, 50);
        let centered = ranking_agreement(&vs, 1, Some(&mean), 50);
        let raw = ranking_agreement(&vs, 1, None, 50);
        assert!(int8 > 0.9, "int8 {int8}");
        assert!(centered > raw + 0.3, "centered {centered} vs raw {raw}");
        // Unrelated texts of such a model meet far above zero.
        let off = off_topic_cosine(&anisotropic(5, 128), &vs, 100).unwrap();
        assert!(off > 0.7, "{off}");
        assert_eq!(off_topic_cosine(&[], &vs, 100), None);
        // The best match of each probe lies above the mean one.
        let top = off_topic_top(&anisotropic(5, 128), &vs).unwrap();
        assert!(top > off, "{top} {off}");
        // Best matches 1.0, 0.6 and 0.96: the median is 0.96.
        let probes = vec![vec![1.0, 0.0], vec![0.0, 1.0], vec![0.6, 0.8]];
        let docs = vec![vec![2.0, 0.0], vec![0.8, 0.6]];
        assert!((off_topic_top(&probes, &docs).unwrap() - 0.96).abs() < 1e-6);
        assert_eq!(off_topic_top(&probes, &[]), None);
        assert_eq!(off_topic_top(&[], &docs), None);
    }

    #[test]
    fn centered_codes_reconstruct_the_vector() {
        let vs = anisotropic(50, 64);
        let mean = mean_vector(&vs, 64);
        let mut levels = Vec::new();
        for bits in [1, 4] {
            let s = quantize_centered(&vs[3], &mean, bits, &mut levels);
            let inv = centered_inv_norm(&mean, &levels, s);
            let cos: f32 = vs[3]
                .iter()
                .zip(mean.iter().zip(&levels))
                .map(|(x, (c, &l))| x * (c + s * l as f32) * inv)
                .sum();
            assert!(cos > if bits == 1 { 0.95 } else { 0.99 }, "{bits} bits: {cos}");
        }
    }

    #[test]
    fn quantised_cosine_stays_close_to_float_cosine() {
        let mut a: Vec<f32> = (0..384).map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0).collect();
        let mut b: Vec<f32> = (0..384).map(|i| ((i * 53 % 97) as f32 - 48.0) / 48.0).collect();
        normalize(&mut a);
        normalize(&mut b);
        let exact: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        let (mut qa, mut qb) = (Vec::new(), Vec::new());
        let sa = quantize(&a, &mut qa);
        let sb = quantize(&b, &mut qb);
        let approx = dot_i8(&qa, &qb) as f32 * sa * sb;
        assert!((exact - approx).abs() < 0.01, "{exact} vs {approx}");
    }

    #[test]
    fn the_batched_kernel_agrees_with_the_portable_loop() {
        // Odd dims exercise the tail; extremes exercise the sign trick. Components are in
        // -127..=127 (the quantiser's range; the reader rejects -128).
        for dims in [1usize, 31, 32, 33, 384, 385] {
            let mut seed = dims as u32;
            let mut next = || {
                seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                ((seed >> 16) as i8).max(-127)
            };
            let q: Vec<i8> = (0..dims).map(|i| if i % 7 == 0 { 127 } else { next() }).collect();
            let all: Vec<i8> =
                (0..dims * 5).map(|i| if i % 11 == 0 { -127 } else { next() }).collect();
            let want: Vec<i32> = all.chunks_exact(dims).map(|v| dot_i8_scalar(&q, v)).collect();
            assert_eq!(dot_i8_many(&q, &all, dims), want, "dims {dims}");
        }
        assert!(
            dot_i8_many(&[1, 2], &[1, 2, 3], 3).is_empty(),
            "a query of the wrong size gives no scores"
        );
    }

    #[test]
    fn zero_and_nan_vectors_do_not_poison_scores() {
        let mut v = vec![f32::NAN, 1.0];
        normalize(&mut v);
        assert_eq!(v, vec![0.0, 0.0]);
        let mut q = Vec::new();
        assert_eq!(quantize(&[0.0, 0.0], &mut q), 0.0);
        assert_eq!(q, vec![0, 0]);
    }

    #[test]
    fn packed_levels_round_trip_at_every_width() {
        let v: Vec<f32> = (0..387).map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0).collect();
        for bits in [8u32, 4, 2, 1] {
            let mut levels = Vec::new();
            let scale = quantize_levels(&v, bits, &mut levels);
            assert!(scale > 0.0);
            let top = if bits == 1 { 1 } else { (1i32 << (bits - 1)) - 1 };
            assert!(levels.iter().all(|&l| (l as i32).abs() <= top), "bits {bits}");
            let mut packed = Vec::new();
            pack_levels(&levels, bits, &mut packed);
            assert_eq!(packed.len(), (387 * bits as usize).div_ceil(8), "bits {bits}");
            let mut back = Vec::new();
            assert!(unpack_levels(&packed, bits, levels.len(), &mut back), "bits {bits}");
            assert_eq!(back, levels, "bits {bits}");
        }
    }

    #[test]
    fn coarse_levels_keep_signs_and_stay_within_half_a_step() {
        let mut v: Vec<f32> = (0..384).map(|i| ((i * 53 % 97) as f32 - 48.0) / 48.0).collect();
        normalize(&mut v);
        for bits in [4u32, 2] {
            let mut levels = Vec::new();
            let scale = quantize_levels(&v, bits, &mut levels);
            let step =
                v.iter().fold(0.0f32, |m, x| m.max(x.abs())) / ((1 << (bits - 1)) - 1) as f32;
            for (x, &l) in v.iter().zip(&levels) {
                assert!(
                    (x - l as f32 * step).abs() <= step / 2.0 + 1e-6,
                    "bits {bits}: {x} -> {l}"
                );
                assert!(x * l as f32 >= 0.0, "bits {bits}: sign of {x} lost");
            }
            // The stored vector (levels × scale) is unit length; re-quantising it is a no-op.
            let back: Vec<f32> = levels.iter().map(|&l| l as f32 * scale).collect();
            assert!((back.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-5, "bits {bits}");
            let mut again = Vec::new();
            assert_eq!(quantize_levels(&back, bits, &mut again), scale, "bits {bits}");
            assert_eq!(again, levels, "bits {bits}");
        }
        let mut signs = Vec::new();
        let scale = quantize_levels(&[0.5, -0.25, 0.0, f32::NAN], 1, &mut signs);
        assert_eq!(signs, vec![1, -1, 1, 1]);
        assert_eq!(scale, 0.5, "1 / sqrt(4)");
    }

    #[test]
    fn unpacking_rejects_codes_outside_the_symmetric_range() {
        let mut out = Vec::new();
        assert!(!unpack_levels(&[0x08], 4, 2, &mut out), "4-bit code 0b1000 (-8)");
        assert!(!unpack_levels(&[0b10], 2, 1, &mut out), "2-bit code 0b10 (-2)");
        assert!(!unpack_levels(&[0x80], 8, 1, &mut out), "int8 -128");
        assert!(!unpack_levels(&[0x11], 4, 3, &mut out), "too short");
        out.clear();
        assert!(unpack_levels(&[0x9f], 4, 2, &mut out));
        assert_eq!(out, vec![-1, -7]);
        out.clear();
        assert!(unpack_levels(&[0b0100_1101], 1, 8, &mut out));
        assert_eq!(out, vec![1, -1, 1, 1, -1, -1, 1, -1]);
    }

    #[test]
    fn requantising_a_dequantised_vector_is_stable() {
        let mut a: Vec<f32> = (0..64).map(|i| (i as f32).sin()).collect();
        normalize(&mut a);
        let mut q1 = Vec::new();
        let s1 = quantize(&a, &mut q1);
        let back: Vec<f32> = q1.iter().map(|&x| x as f32 * s1).collect();
        let mut q2 = Vec::new();
        let s2 = quantize(&back, &mut q2);
        assert_eq!(q1, q2);
        assert!((s1 - s2).abs() < 1e-6);
    }
}
