//! SHA-256 of many ledger lines at once: each line's own hash (what the next line's `prev`
//! names) and its digest message (the line with its `"digest":"…",` member cut out).
//!
//! Verify hashes about 1.3 times the ledger's bytes, and one core's SHA instructions hash one
//! message at a time. With AVX-512, sixteen messages go through the compression function side
//! by side, one per 32-bit lane: about twice the bytes per second of the SHA instructions on
//! the machine of 2026-12-02, 1.1 to 1.2 times on a slower one (2026-12-03), where copying each
//! block and gathering its words one by one had made the lanes slower than the SHA instructions;
//! blocks are now read where they lie in the line and turned into words in the vector
//! registers. The digest message shares the line's first blocks: its lane takes
//! over the line's state where they part, so those blocks are hashed once. Without AVX-512, or
//! for fewer lines than fill the lanes, each line is hashed by `sha2`. The tests hold both paths
//! to `sha2` for every length and cut around block boundaries and for random batches.

use sha2::{Digest, Sha256};

/// One line to hash: the line, and where its digest member starts and ends (exclusive, the
/// member's trailing comma included).
#[derive(Clone, Copy)]
pub struct LineCut<'a> {
    pub line: &'a [u8],
    pub member_start: usize,
    pub member_end: usize,
}

/// For each line, (SHA-256 of the line, SHA-256 of the line without the cut).
pub fn hash_lines(cuts: &[LineCut<'_>]) -> Vec<([u8; 32], [u8; 32])> {
    #[cfg(target_arch = "x86_64")]
    if cuts.len() >= LANES_FROM {
        if let Some(hashes) = lanes::hash_lines(cuts) {
            return hashes;
        }
    }
    cuts.iter().map(|c| one_by_one(c)).collect()
}

/// Fewer lines than this leave most lanes idle: one line alone (`chain::link`, which hashes
/// the whole ledger line by line when it is opened) took about six times as long in the lanes
/// as on the SHA instructions; eight lines, sixteen messages, take about as long either way.
const LANES_FROM: usize = 8;

/// One line on the SHA instructions (or in software): the shared prefix hashed once, its state
/// copied for the two messages.
fn one_by_one(c: &LineCut<'_>) -> ([u8; 32], [u8; 32]) {
    let mut digest = Sha256::new();
    digest.update(&c.line[..c.member_start]);
    let mut line = digest.clone();
    line.update(&c.line[c.member_start..]);
    digest.update(&c.line[c.member_end..]);
    (line.finalize().into(), digest.finalize().into())
}

#[cfg(target_arch = "x86_64")]
mod lanes {
    use super::LineCut;
    use std::arch::x86_64::*;

    const LANES: usize = 16;

    /// The block an idle lane hashes (its state is not read).
    static IDLE: [u8; 64] = [0; 64];

    const IV: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];

    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];

    pub fn available() -> bool {
        static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *AVAILABLE.get_or_init(|| std::arch::is_x86_feature_detected!("avx512f"))
    }

    /// A message in a lane: its bytes from `base` on (two pieces: the line is cut), its whole
    /// length, how far it has been hashed, and where its result goes.
    #[derive(Clone, Copy)]
    struct Job<'a> {
        pieces: [&'a [u8]; 2],
        /// Bytes of the message hashed before this job (a digest message taking over a line's
        /// state); a multiple of 64.
        base: usize,
        len: usize,
        /// Bytes hashed by this job so far (from `base`).
        done: usize,
        out: usize,
        /// For a line: the line's index, and where its digest message parts from it (a
        /// multiple of 64, from the start) when that is past the first block.
        fork: Option<(usize, usize)>,
    }

    impl<'a> Job<'a> {
        fn blocks(&self) -> usize {
            (self.len + 9).div_ceil(64) - self.base / 64
        }

        /// The next block: in the message itself when it lies wholly in one piece (no copy),
        /// otherwise assembled in `room`, padding included.
        fn block<'r>(&self, room: &'r mut [u8; 64]) -> &'r [u8; 64]
        where
            'a: 'r,
        {
            let [first, second] = self.pieces;
            let at = self.done;
            let whole = match at.checked_sub(first.len()) {
                None => first[at..].first_chunk::<64>(),
                Some(at) => second.get(at..).and_then(<[u8]>::first_chunk::<64>),
            };
            // A block wholly of message bytes is never the last: that one holds the length.
            match whole {
                Some(block) => block,
                None => {
                    self.assemble(room);
                    room
                }
            }
        }

        /// The next block, padding included, into `block`.
        fn assemble(&self, block: &mut [u8; 64]) {
            let at = self.base + self.done;
            let [first, second] = self.pieces;
            let mut filled = 0;
            // Message bytes from position `done` of the pieces on.
            let mut skip = self.done;
            for piece in [first, second] {
                if skip >= piece.len() {
                    skip -= piece.len();
                    continue;
                }
                let take = (piece.len() - skip).min(64 - filled);
                block[filled..filled + take].copy_from_slice(&piece[skip..skip + take]);
                filled += take;
                skip = 0;
                if filled == 64 {
                    return;
                }
            }
            block[filled..].fill(0);
            if at + filled == self.len {
                block[filled] = 0x80;
            }
            if self.done / 64 + 1 == self.blocks() {
                block[56..].copy_from_slice(&(self.len as u64 * 8).to_be_bytes());
            }
        }
    }

    /// None on a machine without AVX-512F: the check sits here, next to the `unsafe` it
    /// makes sound, so that no caller can reach `compress` without it.
    pub fn hash_lines(cuts: &[LineCut<'_>]) -> Option<Vec<([u8; 32], [u8; 32])>> {
        if !available() {
            return None;
        }
        let mut out = vec![[0u8; 32]; 2 * cuts.len()];
        let mut lanes: [Option<Job>; LANES] = [None; LANES];
        let mut state = [[0u32; LANES]; 8];
        // Where blocks not wholly in one piece of their message are assembled, per lane.
        let mut rooms = [[0u8; 64]; LANES];
        // Digest messages ready to run: their job and the state they start from.
        let mut ready: Vec<(Job, [u32; 8])> = Vec::new();
        let mut next = 0;
        loop {
            for (lane, slot) in lanes.iter_mut().enumerate() {
                if slot.is_some() {
                    continue;
                }
                let (job, start) = if let Some(r) = ready.pop() {
                    r
                } else if next < cuts.len() {
                    let (line, digest) = jobs(&cuts[next], next);
                    next += 1;
                    if let Some(d) = digest {
                        ready.push((d, IV));
                    }
                    (line, IV)
                } else {
                    continue;
                };
                for (w, v) in start.iter().enumerate() {
                    state[w][lane] = *v;
                }
                *slot = Some(job);
            }
            if lanes.iter().all(Option::is_none) {
                break;
            }
            let mut blocks: [&[u8; 64]; LANES] = [&IDLE; LANES];
            for (lane, (slot, room)) in lanes.iter_mut().zip(rooms.iter_mut()).enumerate() {
                let Some(job) = slot.as_mut() else {
                    continue;
                };
                if let Some((n, at)) = job.fork {
                    if job.done == at {
                        let c = &cuts[n];
                        let digest = Job {
                            pieces: [&c.line[at..c.member_start], &c.line[c.member_end..]],
                            base: at,
                            len: c.line.len() - (c.member_end - c.member_start),
                            done: 0,
                            out: 2 * n + 1,
                            fork: None,
                        };
                        ready.push((digest, std::array::from_fn(|w| state[w][lane])));
                        job.fork = None;
                    }
                }
                blocks[lane] = job.block(room);
            }
            // SAFETY: `available` found AVX-512F on this machine (checked above).
            unsafe { compress(&mut state, &blocks) };
            for (lane, slot) in lanes.iter_mut().enumerate() {
                let Some(job) = slot.as_mut() else {
                    continue;
                };
                job.done += 64;
                if job.done / 64 == job.blocks() {
                    let result = &mut out[job.out];
                    for w in 0..8 {
                        result[4 * w..4 * w + 4].copy_from_slice(&state[w][lane].to_be_bytes());
                    }
                    *slot = None;
                }
            }
        }
        Some(out.chunks_exact(2).map(|p| (p[0], p[1])).collect())
    }

    /// The line's job, and its digest message's when that parts from the line in its first
    /// block (otherwise the line's job hands its state over at the fork).
    fn jobs<'a>(c: &LineCut<'a>, n: usize) -> (Job<'a>, Option<Job<'a>>) {
        let at = c.member_start / 64 * 64;
        let line = Job {
            pieces: [c.line, &[]],
            base: 0,
            len: c.line.len(),
            done: 0,
            out: 2 * n,
            fork: (at > 0).then_some((n, at)),
        };
        let digest = (at == 0).then(|| Job {
            pieces: [&c.line[..c.member_start], &c.line[c.member_end..]],
            base: 0,
            len: c.line.len() - (c.member_end - c.member_start),
            done: 0,
            out: 2 * n + 1,
            fork: None,
        });
        (line, digest)
    }

    macro_rules! ror_xor3 {
        ($x:expr, $a:literal, $b:literal, $c:literal) => {
            _mm512_ternarylogic_epi32::<0x96>(
                _mm512_ror_epi32::<$a>($x),
                _mm512_ror_epi32::<$b>($x),
                _mm512_ror_epi32::<$c>($x),
            )
        };
    }

    /// The sixteen blocks as rows in, their words as columns out: `rows[lane]` holds lane's
    /// block; the result's `[t]` holds word t of every lane, read big-endian.
    #[target_feature(enable = "avx512f")]
    unsafe fn words_of(rows: [__m512i; LANES]) -> [__m512i; 16] {
        let mut r = rows;
        let mut t = [_mm512_setzero_si512(); 16];
        for k in 0..8 {
            t[2 * k] = _mm512_unpacklo_epi32(r[2 * k], r[2 * k + 1]);
            t[2 * k + 1] = _mm512_unpackhi_epi32(r[2 * k], r[2 * k + 1]);
        }
        for b in [0, 4, 8, 12] {
            r[b] = _mm512_unpacklo_epi64(t[b], t[b + 2]);
            r[b + 1] = _mm512_unpackhi_epi64(t[b], t[b + 2]);
            r[b + 2] = _mm512_unpacklo_epi64(t[b + 1], t[b + 3]);
            r[b + 3] = _mm512_unpackhi_epi64(t[b + 1], t[b + 3]);
        }
        for b in [0, 8] {
            for i in 0..4 {
                t[b + i] = _mm512_shuffle_i32x4::<0x88>(r[b + i], r[b + i + 4]);
                t[b + i + 4] = _mm512_shuffle_i32x4::<0xdd>(r[b + i], r[b + i + 4]);
            }
        }
        for i in 0..8 {
            r[i] = _mm512_shuffle_i32x4::<0x88>(t[i], t[i + 8]);
            r[i + 8] = _mm512_shuffle_i32x4::<0xdd>(t[i], t[i + 8]);
        }
        // Big-endian words: bytes 0 and 2 of each from the left rotation, 1 and 3 from the
        // right one.
        let even = _mm512_set1_epi32(0x00ff_00ff);
        for v in r.iter_mut() {
            *v = _mm512_ternarylogic_epi32::<0xca>(
                even,
                _mm512_rol_epi32::<8>(*v),
                _mm512_ror_epi32::<8>(*v),
            );
        }
        r
    }

    /// One block of each of the sixteen lanes: `state[word][lane]`, `blocks[lane]`.
    #[target_feature(enable = "avx512f")]
    unsafe fn compress(state: &mut [[u32; LANES]; 8], blocks: &[&[u8; 64]; LANES]) {
        // No closures here: a closure would not be compiled with AVX-512.
        let mut rows = [_mm512_setzero_si512(); LANES];
        for (v, b) in rows.iter_mut().zip(blocks) {
            *v = _mm512_loadu_si512(b.as_ptr().cast());
        }
        let mut w = words_of(rows);
        let mut s = [_mm512_setzero_si512(); 8];
        for (v, p) in s.iter_mut().zip(state.iter()) {
            *v = _mm512_loadu_si512(p.as_ptr().cast());
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = s;
        for t in 0..64 {
            if t >= 16 {
                let (w2, w15) = (w[(t - 2) & 15], w[(t - 15) & 15]);
                let s0 = _mm512_ternarylogic_epi32::<0x96>(
                    _mm512_ror_epi32::<7>(w15),
                    _mm512_ror_epi32::<18>(w15),
                    _mm512_srli_epi32::<3>(w15),
                );
                let s1 = _mm512_ternarylogic_epi32::<0x96>(
                    _mm512_ror_epi32::<17>(w2),
                    _mm512_ror_epi32::<19>(w2),
                    _mm512_srli_epi32::<10>(w2),
                );
                w[t & 15] = _mm512_add_epi32(
                    _mm512_add_epi32(w[t & 15], s0),
                    _mm512_add_epi32(w[(t - 7) & 15], s1),
                );
            }
            let ch = _mm512_ternarylogic_epi32::<0xca>(e, f, g);
            let t1 = _mm512_add_epi32(
                _mm512_add_epi32(h, ror_xor3!(e, 6, 11, 25)),
                _mm512_add_epi32(
                    ch,
                    _mm512_add_epi32(w[t & 15], _mm512_set1_epi32(K[t] as i32)),
                ),
            );
            let maj = _mm512_ternarylogic_epi32::<0xe8>(a, b, c);
            let t2 = _mm512_add_epi32(ror_xor3!(a, 2, 13, 22), maj);
            h = g;
            g = f;
            f = e;
            e = _mm512_add_epi32(d, t1);
            d = c;
            c = b;
            b = a;
            a = _mm512_add_epi32(t1, t2);
        }
        for (x, v) in s.iter_mut().zip([a, b, c, d, e, f, g, h]) {
            *x = _mm512_add_epi32(*x, v);
        }
        for (p, v) in state.iter_mut().zip(s) {
            _mm512_storeu_si512(p.as_mut_ptr().cast(), v);
        }
    }
}

#[cfg(test)]
#[path = "sha_lanes_tests.rs"]
mod tests;
