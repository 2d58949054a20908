use super::*;
use crate::orchestration::test_rng::Rng;

/// What `sha2` says: the line's hash, and the hash of the line with the cut taken out.
fn expected(c: &LineCut<'_>) -> ([u8; 32], [u8; 32]) {
    let mut cut = c.line[..c.member_start].to_vec();
    cut.extend_from_slice(&c.line[c.member_end..]);
    (Sha256::digest(c.line).into(), Sha256::digest(&cut).into())
}

/// Every way of hashing `cuts` held to `sha2`: as verify calls it, one by one (what a machine
/// without AVX-512 does), and in the lanes whatever the batch's size (when this machine has
/// them). Returns whether the lanes were checked.
fn check(cuts: &[LineCut<'_>], what: &str) -> bool {
    let want: Vec<_> = cuts.iter().map(expected).collect();
    let one: Vec<_> = cuts.iter().map(one_by_one).collect();
    assert_eq!(hash_lines(cuts), want, "{what}: as called");
    assert_eq!(one, want, "{what}: one by one");
    #[cfg(target_arch = "x86_64")]
    if let Some(lanes) = lanes::hash_lines(cuts) {
        for (n, (got, want)) in lanes.iter().zip(&want).enumerate() {
            let c = &cuts[n];
            let at = (c.line.len(), c.member_start, c.member_end);
            assert_eq!(got.0, want.0, "{what}: line {n} {at:?} in the lanes");
            assert_eq!(got.1, want.1, "{what}: digest {n} {at:?} in the lanes");
        }
        assert_eq!(lanes.len(), want.len(), "{what}");
        return true;
    }
    false
}

fn note_lanes(checked: bool) {
    if !checked {
        eprintln!("no AVX-512 here: only the one-by-one path was checked");
    }
}

#[test]
fn every_length_and_cut_hashes_as_sha2_does() {
    let bytes: Vec<u8> = (0..700u32).map(|i| (i * 31 + 7) as u8).collect();
    let mut cuts = Vec::new();
    for len in (0..300).chain([447, 448, 511, 512, 513, 699]) {
        let line = &bytes[..len];
        for start in [0, 1, 55, 56, 63, 64, 65, 119, 120, 128, 200, 260] {
            for member in [0, 1, 9, 64, 76, 140] {
                if start + member <= len {
                    cuts.push(LineCut {
                        line,
                        member_start: start,
                        member_end: start + member,
                    });
                }
            }
        }
    }
    // Also with an odd number of lines, so that some lanes idle at the end.
    cuts.push(cuts[3]);
    note_lanes(check(&cuts, "all at once"));
}

/// Lengths where padding changes shape: the length field fits (55) or does not (56), the
/// message fills its block (63, 64), and the same one block on.
const EDGES: [usize; 14] = [0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 121, 127, 128, 129];

/// A random length: at a padding edge, near some block boundary, short, or long.
fn length(rng: &mut Rng) -> usize {
    match rng.upto(9) {
        0..=2 => rng.pick(&EDGES),
        3..=5 => (64 * rng.upto(6) + rng.upto(20)).saturating_sub(10),
        6..=7 => rng.upto(600),
        _ => rng.upto(5000),
    }
}

/// A random cut of a line of `len` bytes: at its start, at its end, on a block boundary or
/// one byte either side of one, across a boundary, empty, to the end, or anywhere.
fn cut(rng: &mut Rng, len: usize) -> (usize, usize) {
    let boundary = |rng: &mut Rng| (64 * rng.upto(len / 64)).min(len);
    let start = match rng.upto(7) {
        0 => 0,
        1 => len,
        2 => boundary(rng),
        3 => boundary(rng).saturating_sub(1),
        4 => (boundary(rng) + 1).min(len),
        _ => rng.upto(len),
    };
    let room = len - start;
    let member = match rng.upto(6) {
        0 => 0,
        1 => room,
        2 => 76.min(room),
        // Across the next block boundary (or to the end when there is none).
        3 => ((start / 64 + 1) * 64 + rng.upto(70)).min(len) - start,
        _ => rng.upto(room),
    };
    (start, start + member)
}

/// A cut whose digest message has exactly one of the padding edges' lengths.
fn cut_to_edge(rng: &mut Rng) -> (usize, usize, usize) {
    let message = rng.pick(&EDGES);
    let member = rng.upto(150);
    let start = rng.upto(message);
    (message + member, start, start + member)
}

#[test]
fn random_lines_cuts_and_batches_hash_as_sha2_does() {
    let bytes: Vec<u8> = {
        let mut rng = Rng(7);
        (0..6000).map(|_| rng.next() as u8).collect()
    };
    let mut rng = Rng(0x5eed);
    let sizes = [1, 15, 16, 17, 128, 2, 7, 8, 9, 31, 32, 33];
    let (mut lines, mut lanes) = (0, false);
    for round in 0..60 {
        let size = if round < sizes.len() {
            sizes[round]
        } else {
            1 + rng.upto(140)
        };
        let cuts: Vec<LineCut> = (0..size)
            .map(|_| {
                let (len, start, end) = if rng.upto(3) == 0 {
                    cut_to_edge(&mut rng)
                } else {
                    let len = length(&mut rng);
                    let (start, end) = cut(&mut rng, len);
                    (len, start, end)
                };
                // Each line from its own place: no two lanes read the same bytes.
                let from = rng.upto(bytes.len() - len);
                LineCut {
                    line: &bytes[from..from + len],
                    member_start: start,
                    member_end: end,
                }
            })
            .collect();
        lines += cuts.len();
        lanes |= check(&cuts, &format!("batch {round} of {size}"));
    }
    assert!(lines > 2000, "{lines}");
    note_lanes(lanes);
}

/// Lanes are handed out as they free up: digest messages that part from their lines late
/// wait while every lane is busy, next to lines a block long and lines hundreds of blocks
/// long, and a batch of none hashes nothing.
#[test]
fn digests_queued_behind_busy_lanes_and_lines_of_every_size_hash_as_sha2_does() {
    let bytes: Vec<u8> = (0..70_000u32).map(|i| (i * 131 + i / 7) as u8).collect();
    assert!(hash_lines(&[]).is_empty());
    let at = |len: usize, start: usize, end: usize| LineCut {
        line: &bytes[..len],
        member_start: start,
        member_end: end,
    };
    // Seventeen long lines that all part late: sixteen fill the lanes, their digests queue.
    let late: Vec<LineCut> = (0..17).map(|k| at(3000 + k, 2900, 2976)).collect();
    check(&late, "late forks");
    // Forks on the first block (two messages queued at once) among late ones.
    let mixed: Vec<LineCut> = (0..40)
        .map(|k| match k % 4 {
            0 => at(100 + k, 3, 79),
            1 => at(2100, 1900 + k, 1976 + k),
            2 => at(0, 0, 0),
            _ => at(64 * k, 64 * k, 64 * k),
        })
        .collect();
    check(&mixed, "mixed forks");
    // One line far longer than the others (beyond 2^16 bytes), cut at either end.
    let wild = [
        at(69_999, 0, 69_999),
        at(5, 5, 5),
        at(69_999, 69_000, 69_100),
        at(56, 0, 1),
        at(120, 119, 120),
        at(64, 0, 64),
        at(128, 64, 128),
        at(128, 63, 65),
        at(65_600, 65_536, 65_600),
    ];
    for n in 1..=wild.len() {
        check(&wild[..n], &format!("first {n} wild lines"));
    }
    let mut sixteen: Vec<LineCut> = wild.iter().copied().cycle().take(16).collect();
    check(&sixteen, "sixteen");
    sixteen.push(at(1, 0, 1));
    note_lanes(check(&sixteen, "seventeen"));
}
