//! Vectors fetched by cluster (an inverted file, "IVF"): the entry of a split index with
//! vectors (format version 9) keeps a coarse quantiser, the `Clusters` section, and each
//! cluster's chunk numbers and packed vectors are in a vector shard. A question scores its
//! vector against the centroids, fetches the nearest clusters' shards (`nprobe` clusters'
//! worth of chunks, [`Coarse::probed`]) and scores exactly the vectors in them; chunks in
//! clusters not fetched have no vector score (a vector miss). Native readers attach every
//! shard, so their results are the one-file index's. Writer and reader side by side, as in
//! [`crate::format`].
//!
//! The clusters come from spherical k-means over the stored vectors' levels (the vectors
//! relative to the mean vector when the index has one): deterministic, so an unchanged index
//! gives the same clusters, shards and names.
//!
//! `Clusters` section:
//!
//! ```text
//! u32 layout version (2)
//! u32 cluster count K (≥ 1 unless the index is empty)
//! u32 centroid bits B (8, 4 or 1: levels as the index's vectors are packed)
//! u32 reserved 0
//! K × u32 vector shard name hashes ([`super::shard::name_hash`])
//! K × u32 chunk count of each cluster (≥ 1; they add up to the index's chunks)
//! K × f32 centroid scales
//! K × ceil(dims × B / 8) packed centroid levels (unit centroids, quantised as
//!     `vector::quantize_levels`)
//! ```
//!
//! Vector shard body (shard kind 3), `m` the cluster's chunk count in the entry:
//!
//! ```text
//! varint m
//! m × varint chunk numbers, ascending, as gaps (the first from 0)
//! m × f32 scales
//! m × the packed vectors, as in the one-file index's `Vectors` section
//! ```

use super::shard::{push_varint, Reader};
use crate::format::{rd_u32, FormatError};
use crate::model::Quantization;

/// The `Clusters` section's own layout version.
pub const CLUSTERS_VERSION: u32 = 2;
/// Clusters a question's vector fetches by default (`SearchOptions::nprobe` in the widget):
/// chosen by the recall against the exhaustive scan, BENCHMARKS.md §4.5.
pub const DEFAULT_NPROBE: usize = 16;

/// The coarse quantiser of a split entry: what to fetch for a question's vector.
#[derive(Debug, Clone, PartialEq)]
pub struct Coarse {
    /// Bits per centroid component (8, 4 or 1).
    pub bits: u32,
    /// Name hash of each cluster's vector shard.
    pub hashes: Vec<u32>,
    /// Chunks in each cluster.
    pub counts: Vec<u32>,
    /// Each centroid's scale.
    pub scales: Vec<f32>,
    /// The centroids' levels, back to back (K × dims), unpacked.
    pub levels: Vec<i8>,
}

// One message: the widget's size counts every string it ships.
fn bad(_: &str) -> FormatError {
    FormatError::Corrupt("the vector clusters do not match the index".into())
}

impl Coarse {
    /// Encode as a `Clusters` section.
    pub fn encode(&self, dims: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for v in [CLUSTERS_VERSION, self.hashes.len() as u32, self.bits, 0] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        self.hashes.iter().for_each(|c| out.extend_from_slice(&c.to_le_bytes()));
        self.counts.iter().for_each(|c| out.extend_from_slice(&c.to_le_bytes()));
        self.scales.iter().for_each(|s| out.extend_from_slice(&s.to_le_bytes()));
        for c in self.levels.chunks(dims.max(1)) {
            crate::vector::pack_levels(c, self.bits, &mut out);
        }
        out
    }

    /// Parse and validate a `Clusters` section of an index of `n` chunks of `dims` dimensions.
    pub fn parse(b: &[u8], n: usize, dims: usize) -> Result<Coarse, FormatError> {
        if b.len() < 16 {
            return Err(FormatError::Truncated("vector clusters"));
        }
        if rd_u32(b, 0) != CLUSTERS_VERSION {
            return Err(bad("unknown layout version; upgrade docent"));
        }
        let (k, bits) = (rd_u32(b, 4) as usize, rd_u32(b, 8));
        if ![8, 4, 1].contains(&bits) || (k == 0) != (n == 0) || k > n || dims == 0 {
            return Err(bad("bad counts"));
        }
        let per = (dims * bits as usize).div_ceil(8);
        let need =
            per.checked_add(12).and_then(|x| x.checked_mul(k)).and_then(|x| x.checked_add(16));
        if need != Some(b.len()) {
            return Err(FormatError::Truncated("vector clusters"));
        }
        let hashes = (0..k).map(|i| rd_u32(b, 16 + 4 * i)).collect();
        let at = 16 + 4 * k;
        let counts: Vec<u32> = (0..k).map(|i| rd_u32(b, at + 4 * i)).collect();
        if counts.contains(&0) || counts.iter().map(|&c| c as usize).sum::<usize>() != n {
            return Err(bad("the cluster sizes do not add up to the chunks"));
        }
        let at = at + 4 * k;
        let scales = (0..k).map(|i| f32::from_bits(rd_u32(b, at + 4 * i))).collect();
        let at = at + 4 * k;
        let mut levels = Vec::with_capacity(k * dims);
        for i in 0..k {
            if !crate::vector::unpack_levels(&b[at + i * per..], bits, dims, &mut levels) {
                return Err(bad("a centroid code is out of range"));
            }
        }
        Ok(Coarse { bits, hashes, counts, scales, levels })
    }

    /// The clusters a question with int8 levels `qq` scores, so fetches first: the nearest,
    /// until they hold as many chunks as `1.5 × nprobe` clusters of the mean size, at most
    /// `2 × nprobe` of them. Counting chunks, not clusters, keeps a question whose nearest
    /// clusters are big from fetching more than one whose nearest are small. At 16 probes, 1.5
    /// lost one validation question and found four more; 1 lost questions on five sets
    /// (BENCHMARKS.md §4.5).
    pub fn probed(&self, qq: &[i8], dims: usize, nprobe: usize) -> Vec<usize> {
        let total: usize = self.counts.iter().map(|&c| c as usize).sum();
        let budget = 3 * nprobe * total / (2 * self.counts.len().max(1));
        let mut have = 0;
        let mut ids = self.nearest(qq, dims);
        ids.truncate(nprobe * 2);
        ids.retain(|&j| {
            let take = have < budget;
            have += self.counts[j] as usize;
            take
        });
        ids
    }

    /// The clusters in order of their centroid's dot product with the (int8) query `qq`,
    /// nearest first; ties by number.
    pub fn nearest(&self, qq: &[i8], dims: usize) -> Vec<usize> {
        let dots = crate::vector::dot_i8_many(qq, &self.levels, dims);
        crate::search::best_first(
            dots.iter().zip(&self.scales).enumerate().map(|(j, (&d, &s))| (d as f32 * s, j)),
        )
    }
}

/// A decoded vector shard: one cluster's chunks and their vectors.
#[derive(Debug, Clone)]
pub struct VectorShard {
    /// Chunk numbers, ascending.
    pub chunks: Vec<u32>,
    /// Their int8 levels, back to back.
    pub levels: Vec<i8>,
    /// Their scales.
    pub scales: Vec<f32>,
    /// Their `1 / |center + scale × levels|` when the index has a mean vector, else empty.
    pub inv: Vec<f32>,
}

/// Encode a vector shard body: `chunks` ascending, `packed` their packed vectors back to
/// back, `scales` theirs.
pub fn vectors_body(chunks: &[u32], scales: &[f32], packed: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(packed.len() + 6 * chunks.len() + 4);
    push_varint(&mut out, chunks.len() as u64);
    let mut prev = 0;
    for &c in chunks {
        push_varint(&mut out, u64::from(c - prev));
        prev = c;
    }
    scales.iter().for_each(|s| out.extend_from_slice(&s.to_le_bytes()));
    out.extend_from_slice(packed);
    out
}

/// Decode a vector shard body that must hold `count` of the `n` chunks, vectors of `dims`
/// components stored as `q` (relative to `center`, if any). Anything malformed is corruption.
pub fn parse_vectors(
    body: &[u8],
    n: usize,
    count: usize,
    dims: usize,
    q: Quantization,
    center: Option<&[f32]>,
) -> Result<VectorShard, FormatError> {
    let bad = || FormatError::Corrupt("a vector shard does not match the index".into());
    let mut r = Reader::new(body);
    if r.varint()? != count as u64 {
        return Err(bad());
    }
    let mut chunks = Vec::with_capacity(count.min(body.len()));
    let mut c = 0usize;
    for i in 0..count {
        let gap = r.below(n)?;
        if i > 0 && gap == 0 {
            return Err(bad());
        }
        c = c.checked_add(gap).filter(|&c| c < n).ok_or_else(bad)?;
        chunks.push(c as u32);
    }
    let scales: Vec<f32> = r
        .bytes(count * 4)?
        .chunks_exact(4)
        .map(|s| f32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .collect();
    let per = q.vector_bytes(dims);
    let packed = r.bytes(per.checked_mul(count).ok_or_else(bad)?)?;
    if !r.done() {
        return Err(bad());
    }
    let mut levels = Vec::with_capacity(count * dims);
    for v in packed.chunks_exact(per.max(1)) {
        if !crate::vector::unpack_levels(v, q.bits(), dims, &mut levels) {
            return Err(bad());
        }
    }
    let inv = match center {
        Some(mu) => (0..count)
            .map(|i| {
                let l = &levels[i * dims..(i + 1) * dims];
                crate::vector::centered_inv_norm(mu, l, scales[i])
            })
            .collect(),
        None => Vec::new(),
    };
    Ok(VectorShard { chunks, levels, scales, inv })
}

/// How many clusters `n` vectors get: about √n, from 16 to 1,024, at most `n`.
pub fn cluster_count(n: usize) -> usize {
    ((n as f64).sqrt().round() as usize).clamp(16, 1024).min(n)
}

/// Spherical k-means over `n` vectors given as int8 levels (`n × dims`, back to back):
/// deterministic (a fixed seed), at most `iters` rounds, trained on at most 64 vectors per
/// cluster and then every vector assigned. Returns each vector's cluster (< k) and the unit
/// centroids (`k × dims`); a cluster may end up empty.
pub fn kmeans(levels: &[i8], dims: usize, k: usize, iters: usize) -> (Vec<u32>, Vec<f32>) {
    let n = levels.len().checked_div(dims).unwrap_or(0);
    if n == 0 || k == 0 {
        return (vec![0; n], Vec::new());
    }
    let k = k.min(n);
    // A fixed xorshift stream: the same input gives the same clusters.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, (next() % (i as u64 + 1)) as usize);
    }
    let mut train: Vec<usize> = order[..n.min(64 * k)].to_vec();
    train.sort_unstable();
    let unit = |i: usize| {
        let mut v: Vec<f32> = levels[i * dims..(i + 1) * dims].iter().map(|&x| x as f32).collect();
        crate::vector::normalize(&mut v);
        v
    };
    let mut centroids: Vec<f32> = order[..k].iter().flat_map(|&i| unit(i)).collect();
    let assign = |centroids: &[f32], points: &[i8]| -> Vec<u32> {
        let m = points.len() / dims;
        let mut best = vec![(f32::NEG_INFINITY, 0u32); m];
        let mut cq = Vec::with_capacity(dims);
        for (j, c) in centroids.chunks_exact(dims).enumerate() {
            let s = crate::vector::quantize(c, &mut cq);
            for (b, d) in best.iter_mut().zip(crate::vector::dot_i8_many(&cq, points, dims)) {
                let score = d as f32 * s;
                if score > b.0 {
                    *b = (score, j as u32);
                }
            }
        }
        best.into_iter().map(|b| b.1).collect()
    };
    let train_levels: Vec<i8> =
        train.iter().flat_map(|&i| levels[i * dims..(i + 1) * dims].iter().copied()).collect();
    let mut prev: Vec<u32> = Vec::new();
    for _ in 0..iters {
        let got = assign(&centroids, &train_levels);
        if got == prev {
            break;
        }
        let mut sums = vec![0.0f32; k * dims];
        for (&i, &c) in train.iter().zip(&got) {
            let s = &mut sums[c as usize * dims..(c as usize + 1) * dims];
            s.iter_mut().zip(unit(i)).for_each(|(a, b)| *a += b);
        }
        for (c, s) in centroids.chunks_exact_mut(dims).zip(sums.chunks_exact_mut(dims)) {
            // An empty cluster keeps its centroid.
            if s.iter().any(|&x| x != 0.0) {
                crate::vector::normalize(s);
                c.copy_from_slice(s);
            }
        }
        prev = got;
    }
    (assign(&centroids, levels), centroids)
}

/// [`kmeans`], then every cluster of more than `cap` quarters of the mean size (`n / k`)
/// split by k-means again into parts of about the mean size (`cap` 0: none), until none is
/// left or a split no longer divides one. Plain k-means clusters vary widely in size (60-fold on a synthetic
/// 10k-page site), and a question's nearest clusters are mostly the big ones, so capping them
/// caps the bytes a question fetches (BENCHMARKS.md §4.5). Deterministic like [`kmeans`]; the
/// parts of a split cluster keep its number and follow the other clusters.
pub fn balanced_kmeans(
    levels: &[i8],
    dims: usize,
    k: usize,
    cap: usize,
    iters: usize,
) -> (Vec<u32>, Vec<f32>) {
    let (mut assign, mut centroids) = kmeans(levels, dims, k, iters);
    let n = assign.len();
    if n == 0 || dims == 0 || cap == 0 {
        return (assign, centroids);
    }
    let target = n.div_ceil(k.clamp(1, n));
    let cap = (cap.saturating_mul(target) / 4).max(1);
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); centroids.len() / dims];
    for (i, &c) in assign.iter().enumerate() {
        members[c as usize].push(i);
    }
    let mut c = 0;
    while c < members.len() {
        if members[c].len() <= cap {
            c += 1;
            continue;
        }
        let these = std::mem::take(&mut members[c]);
        let sub: Vec<i8> =
            these.iter().flat_map(|&i| levels[i * dims..(i + 1) * dims].iter().copied()).collect();
        let (parts, sub_centroids) = kmeans(&sub, dims, these.len().div_ceil(target), iters);
        let mut split: Vec<Vec<usize>> = vec![Vec::new(); sub_centroids.len() / dims];
        for (&i, &p) in these.iter().zip(&parts) {
            split[p as usize].push(i);
        }
        if split.iter().all(|s| s.len() < these.len()) {
            centroids[c * dims..(c + 1) * dims].copy_from_slice(&sub_centroids[..dims]);
            centroids.extend_from_slice(&sub_centroids[dims..]);
            let mut split = split.into_iter();
            members[c] = split.next().unwrap_or_default();
            members.extend(split);
            // The first part keeps number `c` and is looked at again.
        } else {
            members[c] = these;
            c += 1;
        }
    }
    for (c, m) in members.iter().enumerate() {
        m.iter().for_each(|&i| assign[i] = c as u32);
    }
    (assign, centroids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_coarse_section_round_trips_and_refuses_bad_counts() {
        let dims = 10;
        for bits in [8, 4, 1] {
            let mut levels = Vec::new();
            let mut scales = Vec::new();
            for j in 0..3 {
                let v: Vec<f32> = (0..dims).map(|i| ((i * 7 + j * 3) % 5) as f32 - 2.0).collect();
                let mut l = Vec::new();
                scales.push(crate::vector::quantize_levels(&v, bits, &mut l));
                levels.extend(l);
            }
            let c = Coarse { bits, hashes: vec![1, 2, 3], counts: vec![4, 1, 2], scales, levels };
            let b = c.encode(dims);
            assert_eq!(Coarse::parse(&b, 7, dims).unwrap(), c);
            assert!(Coarse::parse(&b, 8, dims).is_err(), "sizes must add up");
            assert!(Coarse::parse(&b[..b.len() - 1], 7, dims).is_err());
            assert!(Coarse::parse(&b, 7, dims + 9).is_err());
        }
    }

    #[test]
    fn a_probe_fetches_the_chunks_nprobe_clusters_of_the_mean_size_hold() {
        // Six clusters, nearest first in number order (centroid j has j in its first slot less).
        let dims = 4;
        let levels: Vec<i8> = (0..6).flat_map(|j| [100 - 10 * j, 0, 0, 0]).collect();
        let coarse = |counts: Vec<u32>| Coarse {
            bits: 8,
            hashes: (0..6).collect(),
            counts,
            scales: vec![1.0; 6],
            levels: levels.clone(),
        };
        let q = [1, 0, 0, 0];
        assert_eq!(coarse(vec![2; 6]).nearest(&q, dims), [0, 1, 2, 3, 4, 5]);
        // Clusters of the mean size: two probes buy three clusters' chunks.
        assert_eq!(coarse(vec![2; 6]).probed(&q, dims, 2), [0, 1, 2]);
        // Big nearest clusters: two probes buy 1.5 × 2 × 3 = 9 chunks, which fewer hold.
        assert_eq!(coarse(vec![5, 5, 2, 2, 2, 2]).probed(&q, dims, 2), [0, 1]);
        assert_eq!(coarse(vec![9, 3, 2, 2, 1, 1]).probed(&q, dims, 2), [0]);
        // Small nearest clusters: more of them, up to twice nprobe.
        assert_eq!(coarse(vec![1, 1, 1, 1, 7, 7]).probed(&q, dims, 2), [0, 1, 2, 3]);
        assert_eq!(coarse(vec![1, 1, 1, 1, 1, 13]).probed(&q, dims, 1), [0, 1]);
        // Every cluster's worth of probes scores them all.
        assert_eq!(coarse(vec![1, 1, 1, 1, 1, 13]).probed(&q, dims, 6), [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn a_vector_shard_round_trips_and_refuses_what_does_not_fit() {
        let q = Quantization::Binary;
        let packed = [0b1010_1010u8, 0x01, 0xff, 0x00];
        let body = vectors_body(&[3, 9], &[0.5, 0.25], &packed);
        let v = parse_vectors(&body, 10, 2, 16, q, None).unwrap();
        assert_eq!(v.chunks, [3, 9]);
        assert_eq!(v.scales, [0.5, 0.25]);
        assert_eq!(&v.levels[..3], &[-1, 1, -1]);
        assert!(v.inv.is_empty());
        assert!(parse_vectors(&body, 9, 2, 16, q, None).is_err(), "chunk 9 of 9");
        assert!(parse_vectors(&body, 10, 1, 16, q, None).is_err());
        assert!(parse_vectors(&body, 10, 2, 17, q, None).is_err());
        assert!(parse_vectors(&body[..body.len() - 1], 10, 2, 16, q, None).is_err());
        let c = parse_vectors(&body, 10, 2, 16, q, Some(&[0.1; 16])).unwrap();
        assert_eq!(c.inv.len(), 2);
        for i in 0..body.len() {
            for x in [0x00, 0x7f, 0x80, 0xff] {
                let mut b = body.clone();
                b[i] = x;
                let _ = parse_vectors(&b, 10, 2, 16, Quantization::Int4, None);
            }
        }
    }

    #[test]
    fn kmeans_is_deterministic_and_separates_clear_groups() {
        let dims = 16;
        let mut levels = Vec::new();
        for i in 0..60 {
            let g = i % 3;
            levels.extend((0..dims).map(|j| if j / 5 == g { 100 } else { (i * j % 7) as i8 - 3 }));
        }
        let (a, c) = kmeans(&levels, dims, 6, 10);
        assert_eq!(kmeans(&levels, dims, 6, 10), (a.clone(), c));
        // Every cluster holds one group's vectors.
        for i in 0..60 {
            for j in 0..60 {
                assert!(a[i] != a[j] || i % 3 == j % 3, "vectors {i} and {j}");
            }
        }
    }

    #[test]
    fn balanced_kmeans_splits_a_crowded_cluster_and_keeps_the_rest() {
        let dims = 16;
        let mut levels = Vec::new();
        // 80 vectors near one direction (with some spread), then 20 in each of four others.
        for i in 0..160 {
            let g = if i < 80 { 0 } else { 1 + (i - 80) / 20 };
            levels.extend((0..dims).map(|j| {
                let spread = ((i * 7 + j * 13) % 11) as i8 - 5;
                if j / 3 == g {
                    60 + spread * 4
                } else {
                    spread * 3
                }
            }));
        }
        let k = 8; // mean size 20: cap 8 quarters splits what is over 40
        let plain = kmeans(&levels, dims, k, 10);
        let (a, c) = balanced_kmeans(&levels, dims, k, 8, 10);
        assert_eq!(balanced_kmeans(&levels, dims, k, 8, 10), (a.clone(), c.clone()));
        let size = |a: &[u32], c: usize| a.iter().filter(|&&x| x as usize == c).count();
        let biggest = |a: &[u32], k| (0..k).map(|c| size(a, c)).max().unwrap();
        assert!(biggest(&plain.0, plain.1.len() / dims) > 40, "the test needs a crowded cluster");
        let kk = c.len() / dims;
        assert!(kk > plain.1.len() / dims, "more clusters after the split");
        assert!(biggest(&a, kk) <= 40, "no cluster over twice the mean");
        assert!(a.iter().all(|&x| (x as usize) < kk), "every vector in a cluster");
        // The four small groups are not mixed with the crowd.
        for i in 80..160 {
            assert!((0..80).all(|j| a[i] != a[j]), "vector {i} shares a cluster with the crowd");
        }
        // 0 never splits; identical vectors cannot be split and end the loop.
        assert_eq!(balanced_kmeans(&levels, dims, k, 0, 10), plain);
        let same = vec![7i8; 50 * dims];
        let (a, c) = balanced_kmeans(&same, dims, 5, 8, 10);
        assert_eq!(a.len(), 50);
        assert!(a.iter().all(|&x| (x as usize) < c.len() / dims));
    }
}
