use super::*;
use pretty_assertions::assert_eq;

fn h(n: u8) -> [u8; 32] {
    [n; 32]
}

/// A record line `n` whose parent is line `parent` (None: the genesis).
fn rec(n: u8, parent: Option<u8>) -> Link {
    Link {
        hash: h(n),
        prev: Some(parent.map_or_else(genesis, h)),
        digest_ok: true,
        merge_parents: Vec::new(),
        accepts_break: false,
    }
}

fn merge(n: u8, prev: u8, parents: &[u8]) -> Link {
    Link {
        merge_parents: parents.iter().map(|&p| h(p)).collect(),
        ..rec(n, Some(prev))
    }
}

#[test]
fn a_linear_chain_has_no_graph_and_no_breaks() {
    let links = vec![rec(1, None), rec(2, Some(1)), rec(3, Some(2))];
    let c = Chain::check(&links);
    assert!(c.is_linear() && c.breaks.is_empty());
    assert_eq!(c.ancestors(3, &[1]), vec![true, true, false]);
}

#[test]
fn a_merged_fork_is_intact_and_both_sides_descend_from_the_merge() {
    // base 1; side A: 2, 3; side B: 4 (from 1), 5; merge 6 joins 3 and 5.
    let links = vec![
        rec(1, None),
        rec(2, Some(1)),
        rec(3, Some(2)),
        rec(4, Some(1)),
        rec(5, Some(4)),
        merge(6, 5, &[3, 5]),
    ];
    let c = Chain::check(&links);
    assert!(!c.is_linear());
    assert_eq!(c.breaks, vec![]);
    assert_eq!(c.ancestors(6, &[5]), vec![true; 6]);
    assert_eq!(
        c.ancestors(6, &[4]),
        vec![true, false, false, true, true, false],
        "side B alone"
    );
    // Two sides that both began empty.
    let links = vec![rec(1, None), rec(2, None), merge(3, 2, &[1, 2])];
    assert_eq!(Chain::check(&links).breaks, vec![]);
}

#[test]
fn forks_without_a_merge_inserted_removed_and_reordered_lines_break_the_chain() {
    // A record forking from line 1 at the end: line 3 is continued by nothing.
    let forked = vec![
        rec(1, None),
        rec(2, Some(1)),
        rec(3, Some(2)),
        rec(4, Some(1)),
    ];
    assert_eq!(Chain::check(&forked).breaks, vec![(3, Break::Unmerged)]);
    // Inserted: 9 claims 2 as parent, 3 still names 2: 9 is continued by nothing.
    let inserted = vec![
        rec(1, None),
        rec(2, Some(1)),
        rec(9, Some(2)),
        rec(3, Some(2)),
    ];
    assert_eq!(Chain::check(&inserted).breaks, vec![(3, Break::Unmerged)]);
    // Removed: 3 names 2, which is gone.
    let removed = vec![rec(1, None), rec(3, Some(2)), rec(4, Some(3))];
    assert_eq!(
        Chain::check(&removed).breaks,
        vec![(1, Break::UnknownParent)]
    );
    // Reordered: 3 before 2.
    let reordered = vec![rec(1, None), rec(3, Some(2)), rec(2, Some(1))];
    let breaks = Chain::check(&reordered).breaks;
    assert_eq!(breaks[0], (1, Break::UnknownParent));
    // A merge naming a tip that does not exist.
    let bad_merge = vec![rec(1, None), rec(2, Some(1)), merge(3, 2, &[2, 7])];
    assert_eq!(
        Chain::check(&bad_merge).breaks,
        vec![(2, Break::UnknownMergeParent)]
    );
}

#[test]
fn canonical_merge_records_are_read_without_parsing() {
    let a = "a".repeat(64);
    let b = "b".repeat(64);
    let mut record = serde_json::json!({
        "files": [], "id": "x", "metadata": {VENDOR_KEY: {
            "kind": "merge", "merge": {"parents": [a, b]}, "prev": b,
        }},
    });
    let digest = record_digest(&record);
    record["metadata"][VENDOR_KEY]["digest"] = serde_json::json!(digest);
    let line = super::super::ledger::canonical_json(&record);
    let l = link(line.as_bytes());
    assert!(l.digest_ok, "{line}");
    assert_eq!(l.merge_parents, vec![[0xaa; 32], [0xbb; 32]]);
    // The same record in another layout is read by the full parse.
    let pretty = serde_json::to_string_pretty(&record)
        .expect("json")
        .replace('\n', "");
    assert_eq!(link(pretty.as_bytes()).merge_parents, l.merge_parents);
}

/// A worker that panicked must not look like one that found nothing: a check that did not
/// run would read as one that passed.
#[test]
fn a_panicking_worker_panics_the_caller() {
    let items: Vec<u32> = (0..1000).collect();
    let caught = std::panic::catch_unwind(|| {
        par_map(&items, 4, |&i| {
            assert!(i != 900, "worker failed");
            i
        })
    });
    assert!(caught.is_err(), "{:?}", caught.map(|v| v.len()));
}

#[test]
fn the_last_key_is_found_wherever_it_sits_as_a_reverse_search_would() {
    let finder = memchr::memmem::Finder::new(PREV_KEY);
    let key = std::str::from_utf8(PREV_KEY).unwrap_or_default();
    for len in [0usize, 5, 100, TAIL - 3, TAIL, TAIL + 5, 3 * TAIL] {
        for at in [
            None,
            Some(0),
            Some(len / 2),
            Some(len.saturating_sub(TAIL)),
            Some(len),
        ] {
            for second in [None, Some(len.saturating_sub(TAIL + 4)), Some(1)] {
                let mut line = "x".repeat(len);
                for pos in [second, at].into_iter().flatten() {
                    let pos = pos.min(line.len());
                    line.insert_str(pos, key);
                }
                assert_eq!(
                    last_match(line.as_bytes(), &finder),
                    memchr::memmem::rfind(line.as_bytes(), PREV_KEY),
                    "{len} {at:?} {second:?}"
                );
            }
        }
    }
}
