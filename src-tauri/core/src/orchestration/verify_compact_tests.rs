//! The compact reader of a record's `files` against serde's reading in place, on records an
//! attacker wrote: every JSON corner serde treats its own way, and random records built from
//! them. Whatever the compact reader accepts, serde must read the same.

use super::super::scan::{both_readings, Reading};
use crate::orchestration::test_rng::Rng;

const HASH: &str = "sha256:abababababababababababababababababababababababababababababababab";

/// A record line around a `files` array, with the rest of a record after it.
fn record(files: &str) -> String {
    format!("{{\"files\":{files},\"metadata\":{{}}}}")
}

/// A canonical file with one conversation holding `members` and path `path`.
fn file_with(members: &str, path: &str) -> String {
    format!("[{{\"conversations\":[{{{members}}}],\"path\":\"{path}\"}}]")
}

fn range_with(end: &str, start: &str) -> String {
    format!(
        "\"ranges\":[{{\"content_hash\":\"{HASH}\",\"end_line\":{end},\"start_line\":{start}}}]"
    )
}

/// Reads `line` both ways; panics if the compact reader accepts what serde does not read, or
/// reads it otherwise. Returns (compact accepted, serde accepted).
fn agree(line: &[u8]) -> (bool, bool) {
    let [compact, serde] = both_readings(line);
    if compact.is_some() {
        assert_eq!(compact, serde, "{}", String::from_utf8_lossy(line));
    }
    (compact.is_some(), serde.is_some())
}

#[test]
fn json_corners_are_read_by_hand_only_where_serde_reads_them_the_same() {
    let hash = crate::orchestration::ledger::content_hash_bytes(HASH);
    let one = |start, end, path: &str| -> Reading { vec![(start, end, hash, path.to_string())] };
    // (the files array, what the compact reader does, what serde does)
    let plain = |f: String| record(&f);
    let numbers = [
        ("0", Some(0)),
        ("4294967295", Some(u32::MAX)),
        ("4294967296", None),
        ("18446744073709551616", None),
        ("-0", None),
        ("-1", None),
        ("01", None),
        ("00", None),
        ("1e2", None),
        ("1E0", None),
        ("1.0", None),
        ("1.", None),
        ("+1", None),
        ("\"1\"", None),
        ("null", None),
    ];
    for (n, value) in numbers {
        for (end, start) in [(n, "1"), ("1", n)] {
            let line = plain(file_with(&range_with(end, start), "p"));
            let [compact, serde] = both_readings(line.as_bytes());
            let read = value.map(|v| {
                let (s, e) = if start == n { (v, 1) } else { (1, v) };
                one(s, e, "p")
            });
            assert_eq!(serde, read, "serde on {n}");
            assert_eq!(compact, read, "by hand on {n}");
        }
    }
    let ranges = range_with("2", "1");
    // Read the same way by both.
    let same = [
        // Skipped strings: escapes of every kind, a lone surrogate, bytes that are not UTF-8
        // (serde checks neither when it skips a string).
        format!("\"url\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud800\\uDFFF\",{ranges}"),
        format!("\"url\":\"\u{7f}\\u0000\u{e9}\",{ranges}"),
        format!("\"related\":[-0,1e2,-1.5E+3,0.0,123456789012345678901234567890,true,false,null,[],{{}}],{ranges}"),
        format!("{ranges},\"url\":{{\"k\":[{{\"\\u0041\":\"\\ud83d\\ude00\"}}]}}"),
        // A skipped member named like a field of the file.
        format!("\"path\":\"x\",{ranges},\"conversations\":1"),
        // The same skipped member twice (serde ignores both).
        format!("\"url\":1,{ranges},\"url\":2"),
    ];
    for members in &same {
        let line = plain(file_with(members, "p"));
        let [compact, serde] = both_readings(line.as_bytes());
        assert_eq!(serde, Some(one(1, 2, "p")), "{line}");
        assert_eq!(compact, serde, "{line}");
    }
    // Skipped strings holding bytes that are not UTF-8: skipped alike.
    for bad in [&[0xff][..], &[0xc3], &[0xed, 0xa0, 0x80], &[0xc0, 0xaf]] {
        let mut line = record(&file_with(&format!("\"url\":\"@\",{ranges}"), "p")).into_bytes();
        let at = line.iter().position(|&b| b == b'@').unwrap_or_default();
        line.splice(at..=at, bad.iter().copied());
        let [compact, serde] = both_readings(&line);
        assert_eq!(serde, Some(one(1, 2, "p")), "{bad:?}");
        assert_eq!(compact, serde, "{bad:?}");
    }
    // Left to serde: it reads them (decoding escapes, skipping whitespace), the hand does not.
    let to_serde = [
        (file_with(&ranges, "\\u0041"), one(1, 2, "A")),
        (file_with(&ranges, "a\\/b"), one(1, 2, "a/b")),
        (
            file_with(&ranges.replace("\"ranges\"", "\"r\\u0061nges\""), "p"),
            one(1, 2, "p"),
        ),
        (
            file_with(&ranges.replace("sha256:", "sha256\\u003a"), "p"),
            one(1, 2, "p"),
        ),
        (format!(" {}", file_with(&ranges, "p")), one(1, 2, "p")),
        (file_with(&ranges, "p").replace(":[", ": ["), one(1, 2, "p")),
        (
            file_with(
                &ranges.replace(",\"start_line\":1", ",\"start_line\":1,\"x\":0"),
                "p",
            ),
            one(1, 2, "p"),
        ),
        (
            format!("[{{\"path\":\"p\",\"conversations\":[{{{ranges}}}]}}]"),
            one(1, 2, "p"),
        ),
        (
            format!("[{{\"conversations\":[{{{ranges}}}],\"path\":\"p\",\"x\":[]}}]"),
            one(1, 2, "p"),
        ),
        (
            file_with("\"ranges\":[{\"end_line\":2,\"start_line\":1}]", "p"),
            vec![(1, 2, None, "p".to_string())],
        ),
        (
            file_with(&format!("\"ranges\":[[1,2,\"{HASH}\"]]"), "p"),
            one(1, 2, "p"),
        ),
    ];
    for (files, read) in &to_serde {
        let [compact, serde] = both_readings(record(files).as_bytes());
        assert_eq!((compact, serde), (None, Some(read.clone())), "{files}");
    }
    // Refused by both: the line is then read by the lenient full parse.
    let neither = [
        file_with(&format!("{ranges},{ranges}"), "p"),
        file_with(&format!("{ranges},\"url\":\"\\x\""), "p"),
        file_with(&format!("{ranges},\"url\":\"\\x12ab\""), "p"),
        file_with(&format!("{ranges},\"url\":\"\\U0041\""), "p"),
        file_with(&format!("{ranges},\"url\":\"\\u12g4\""), "p"),
        file_with(&format!("{ranges},\"url\":\"\u{1}\""), "p"),
        file_with(&format!("{ranges},\"url\":tru"), "p"),
        file_with(&format!("{ranges},\"url\":[1,]"), "p"),
        file_with(&format!("{ranges},\"url\":01"), "p"),
        file_with(&format!("{ranges},\"url\":-"), "p"),
        file_with(&format!("{ranges},\"url\":1.e3"), "p"),
        file_with(&ranges, "tab\there"),
        format!("[{{\"conversations\":[{{{ranges}}}]}}]"),
        format!("[{{\"conversations\":[{{{ranges}}}],\"path\":\"p\",\"path\":\"q\"}}]"),
        "[{\"conversations\":[],\"conversations\":[],\"path\":\"p\"}]".to_string(),
        format!("[{{\"conversations\":[{{{ranges}}}],\"path\":\"p\"}},]"),
        format!("[{{\"conversations\":[{{{ranges}}}],\"path\":\"p\"}}"),
        "[{\"conversations\":[],\"path\":7}]".to_string(),
        "[{\"conversations\":{},\"path\":\"p\"}]".to_string(),
    ];
    for files in &neither {
        let [compact, serde] = both_readings(record(files).as_bytes());
        assert_eq!((compact, serde), (None, None), "{files}");
    }
    // A key or path that is not UTF-8 is refused by both.
    for (find, bytes) in [("\"url\"", &b"\"u\xffl\""[..]), ("\"p\"", b"\"p\xff\"")] {
        let line = record(&file_with(&format!("\"url\":1,{ranges}"), "p"));
        let at = line.find(find).unwrap_or_default();
        let mut line = line.into_bytes();
        line.splice(at..at + find.len(), bytes.iter().copied());
        assert_eq!(both_readings(&line), [None, None], "{find}");
    }
    // Whatever follows the array is not read by either.
    for tail in ["", "garbage", ",\"files\":[]}", "]"] {
        let line = format!("{{\"files\":{}{tail}", file_with(&ranges, "p"));
        let [compact, serde] = both_readings(line.as_bytes());
        assert_eq!(serde, Some(one(1, 2, "p")), "{tail}");
        assert_eq!(compact, serde, "{tail}");
    }
    // Nesting in a skipped value: read by hand to 64 levels (the `1` is the 64th), beyond by
    // serde alone.
    for depth in [1, 63, 64, 65, 66, 200] {
        let deep = format!(
            "\"url\":{}1{},{ranges}",
            "[".repeat(depth),
            "]".repeat(depth)
        );
        let [compact, serde] = both_readings(record(&file_with(&deep, "p")).as_bytes());
        assert_eq!(serde, Some(one(1, 2, "p")), "{depth}");
        assert_eq!(compact.is_some(), depth < 64, "{depth}");
        agree(record(&file_with(&deep, "p")).as_bytes());
    }
}

/// Put into strings: escapes serde decodes or refuses, control characters, bytes not UTF-8.
#[rustfmt::skip]
const TEXT_CORNERS: &[&[u8]] = &[
    b"\\\"", b"\\\\", b"\\/", b"\\n", b"\\u0041", b"\\u00e9", b"\\ud83d\\ude00", b"\\ud800",
    b"\\udc00x", b"\\x", b"\\u12g4", b"\\u12", b"\x01", b"\x1f", b"\t", b"\x7f", b"\xff",
    b"\xc3", b"\xc3\xa9", b"\xed\xa0\x80", b"\xc0\xaf", b"\\",
];

/// In place of a line number: what a `u32` is not, or only just is.
#[rustfmt::skip]
const NUMBER_CORNERS: &[&[u8]] = &[
    b"0", b"4294967295", b"4294967296", b"18446744073709551616", b"-0", b"-1", b"01", b"00",
    b"1e2", b"1E0", b"1.0", b"1.", b".5", b"+1", b"\"7\"", b"null", b"-", b"1e", b"0x1",
];

/// Skipped values serde skips.
#[rustfmt::skip]
const VALID_SCALARS: &[&[u8]] = &[
    b"true", b"false", b"null", b"0", b"-0", b"1e2", b"-1.5E+3", b"0.0",
    b"123456789012345678901234567890", b"[]", b"{}",
];

/// Skipped values that are not JSON.
#[rustfmt::skip]
const BROKEN_SCALARS: &[&[u8]] = &[
    b"tru", b"nul", b"nulll", b"True", b"01", b"1.", b"-", b"1e", b"1e+", b".5", b"[1,]",
    b"{\"a\":}", b"{\"a\" 1}", b"{1:2}", b"]", b"",
];

/// Writes random records in Mandate's layout, each choice now and then replaced by one of the
/// corners serde treats its own way (one given choice, or each at the given odds). `hostile`
/// says whether any was.
struct Writer {
    rng: Rng,
    out: Vec<u8>,
    hostile: bool,
    /// The one choice that is hostile (a record with one corner, all else as written), or
    /// None: one choice in `odds` is.
    only: Option<usize>,
    odds: usize,
    /// Choices made so far.
    turns: usize,
}

impl Writer {
    /// A hostile choice now? Marks the record when so.
    fn turn(&mut self) -> bool {
        let hostile = match self.only {
            Some(k) => self.turns == k,
            None => self.rng.upto(self.odds) == 0,
        };
        self.turns += 1;
        self.hostile |= hostile;
        hostile
    }

    fn put(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }

    /// Whitespace where the layout has none (serde skips it).
    fn space(&mut self) {
        if self.turn() {
            let ws = self.rng.pick::<&[u8]>(&[b" ", b"\n", b"\t", b"\r", b"  "]);
            self.put(ws);
        }
    }

    /// A token of the layout, or now and then something else in its place.
    fn token(&mut self, token: &[u8], instead: &[&[u8]]) {
        self.space();
        if self.turn() {
            let other = self.rng.pick(instead);
            self.put(other);
        } else {
            self.put(token);
        }
        self.space();
    }

    /// A string's body (between the quotes): plain, or holding a corner.
    fn text(&mut self, plain: &[u8]) {
        let corners = TEXT_CORNERS;
        if self.turn() {
            // At the start half the time: where the hex digits of a skipped string follow.
            let at = match self.rng.upto(1) {
                0 => 0,
                _ => self.rng.upto(plain.len()),
            };
            let corner = self.rng.pick(corners);
            self.put(&plain[..at]);
            self.put(corner);
            self.put(&plain[at..]);
        } else {
            self.put(plain);
        }
    }

    /// A key: usually `name`, now and then escaped, another name or not a string.
    fn key(&mut self, name: &[u8]) {
        self.space();
        if self.turn() {
            let other: &[u8] = match self.rng.upto(4) {
                0 => b"\"r\\u0061nges\"",
                1 => b"\"p\\u0061th\"",
                2 => b"\"conversations\"",
                3 => b"ranges",
                _ => b"\"\xffx\"",
            };
            self.put(other);
        } else {
            self.put(b"\"");
            self.text(name);
            self.put(b"\"");
        }
        self.token(b":", &[b"", b"=", b"::"]);
    }

    /// A number read as a `u32`.
    fn line_number(&mut self) {
        let n = self.rng.upto(100_000).to_string();
        let corners = NUMBER_CORNERS;
        self.space();
        if self.turn() {
            let corner = self.rng.pick(corners);
            self.put(corner);
        } else {
            self.put(n.as_bytes());
        }
        self.space();
    }

    /// Any JSON value, to be skipped: of every kind, valid or nearly so.
    fn value(&mut self, depth: usize) {
        self.space();
        match self.rng.upto(if depth > 3 { 3 } else { 6 }) {
            0 | 1 => {
                self.put(b"\"");
                // Hex digits for a corner to run into: `\x` then `12ab`, `\u12` then `ab`.
                self.text(b"12ab cafe value");
                self.put(b"\"");
            }
            2 => {
                let s = if self.turn() {
                    self.rng.pick(BROKEN_SCALARS)
                } else {
                    self.rng.pick(VALID_SCALARS)
                };
                self.put(s);
            }
            3 if self.rng.upto(30) == 0 => {
                // Deep enough to cross the hand reader's limit now and then.
                let depth = if self.turn() { 61 } else { 50 } + self.rng.upto(10);
                self.put(&b"[".repeat(depth));
                self.put(&b"]".repeat(depth));
            }
            3 => {
                let n = self.rng.upto(1000).to_string();
                self.put(n.as_bytes());
            }
            4 => {
                self.put(b"[");
                for k in 0..self.rng.upto(3) {
                    if k > 0 {
                        self.token(b",", &[b"", b",,"]);
                    }
                    self.value(depth + 1);
                }
                self.token(b"]", &[b",]", b"}", b""]);
            }
            _ => {
                self.put(b"{");
                for k in 0..self.rng.upto(3) {
                    if k > 0 {
                        self.token(b",", &[b"", b",,"]);
                    }
                    let name = self.rng.pick::<&[u8]>(&[b"a", b"type", b"ranges", b"path"]);
                    self.key(name);
                    self.value(depth + 1);
                }
                self.token(b"}", &[b",}", b"]", b""]);
            }
        }
        self.space();
    }

    fn range(&mut self) {
        self.token(b"{", &[b"[", b"null"]);
        let fields: [&[u8]; 3] = [b"content_hash", b"end_line", b"start_line"];
        // Now and then in another order, one missing, one twice or one more.
        let mut order = vec![0usize, 1, 2];
        if self.turn() {
            match self.rng.upto(3) {
                0 => order.swap(0, 2),
                1 => {
                    order.remove(self.rng.upto(2));
                }
                2 => order.push(self.rng.upto(2)),
                _ => order.push(3),
            }
        }
        for (k, &field) in order.iter().enumerate() {
            if k > 0 {
                self.token(b",", &[b"", b";"]);
            }
            self.key(fields.get(field).copied().unwrap_or(b"other"));
            match field {
                0 => {
                    self.space();
                    self.put(b"\"");
                    let hash = HASH.as_bytes();
                    if self.turn() {
                        let end = self.rng.upto(hash.len());
                        self.put(&hash[..end]);
                    } else {
                        self.text(hash);
                    }
                    self.put(b"\"");
                    self.space();
                }
                1 | 2 => self.line_number(),
                _ => self.value(0),
            }
        }
        self.token(b"}", &[b",}", b""]);
    }

    fn conversation(&mut self) {
        self.token(b"{", &[b"[", b"null"]);
        // Members in sorted order, as written; each there or not, `ranges` twice now and then.
        let mut members: Vec<&[u8]> = Vec::new();
        for name in [&b"contributor"[..], b"ranges", b"related", b"url"] {
            if self.rng.upto(2) > 0 {
                members.push(name);
            }
        }
        if self.turn() {
            members.push(b"ranges");
        }
        for (k, name) in members.iter().enumerate() {
            if k > 0 {
                self.token(b",", &[b"", b",,"]);
            }
            self.key(name);
            if *name == b"ranges" {
                self.list(Self::range, 3);
            } else {
                self.value(0);
            }
        }
        self.token(b"}", &[b",}", b""]);
    }

    /// `[item, …]` of up to `most` items.
    fn list(&mut self, item: fn(&mut Self), most: usize) {
        self.token(b"[", &[b"{", b"null"]);
        for k in 0..self.rng.upto(most) {
            if k > 0 {
                self.token(b",", &[b"", b",,"]);
            }
            item(self);
        }
        self.token(b"]", &[b",]", b"}", b""]);
    }

    fn file(&mut self) {
        self.token(b"{", &[b"[", b"null"]);
        let swapped = self.turn();
        let mut parts = [0, 1];
        if swapped {
            parts.swap(0, 1);
        }
        for (k, part) in parts.into_iter().enumerate() {
            if k > 0 {
                self.token(b",", &[b"", b",,"]);
            }
            if part == 0 {
                self.key(b"conversations");
                self.list(Self::conversation, 3);
            } else {
                self.key(b"path");
                self.space();
                self.put(b"\"");
                let path =
                    self.rng
                        .pick::<&[u8]>(&[b"src/a.rs", b"b", b"dir/\xc3\xbcn\xc3\xaf.rs", b""]);
                self.text(path);
                self.put(b"\"");
                self.space();
            }
        }
        if self.turn() {
            self.put(b",\"path\":\"again\"");
        }
        self.token(b"}", &[b",}", b""]);
    }
}

#[test]
fn random_records_are_read_by_hand_only_as_serde_reads_them() {
    let mut rng = Rng(0xc0de);
    let (mut by_hand, mut by_serde, mut neither, mut clean) = (0, 0, 0, 0);
    // Records read by hand although a hostile choice was made in them.
    let mut hostile_by_hand = 0;
    for case in 0..40_000 {
        let mut w = Writer {
            rng: Rng(rng.next()),
            out: b"{\"files\":".to_vec(),
            hostile: false,
            // Records clean, with one corner, or with a few.
            only: match case % 5 {
                0 => Some(usize::MAX),
                1 | 2 => Some(rng.upto(150)),
                _ => None,
            },
            odds: [80, 25][case % 2],
            turns: 0,
        };
        w.list(Writer::file, 3);
        w.put(b",\"metadata\":{}}");
        let mut line = w.out;
        let mut hostile = w.hostile;
        // And now and then a byte changed, added, removed, or the line cut short (not in a
        // record with one corner: that one is to be judged alone).
        if w.only.is_none() && rng.upto(2) == 0 && line.len() > 10 {
            hostile = true;
            let at = 9 + rng.upto(line.len() - 10);
            let byte = b" \"\\{}[],:0-.eE+u\x01\xff"[rng.upto(17)];
            match rng.upto(3) {
                0 => line[at] = byte,
                1 => line.insert(at, byte),
                2 => {
                    line.remove(at);
                }
                _ => line.truncate(at),
            }
        }
        let (compact, serde) = agree(&line);
        if !hostile {
            clean += 1;
            assert!(compact, "{}", String::from_utf8_lossy(&line));
        }
        hostile_by_hand += usize::from(hostile && compact);
        match (compact, serde) {
            (true, _) => by_hand += 1,
            (false, true) => by_serde += 1,
            (false, false) => neither += 1,
        }
    }
    let counts = format!(
        "{by_hand} read by hand ({hostile_by_hand} hostile), {by_serde} by serde alone, \
         {neither} by neither, {clean} clean"
    );
    eprintln!("{counts}");
    assert!(
        by_hand > 12_000
            && hostile_by_hand > 1500
            && by_serde > 2000
            && neither > 2000
            && clean > 8000,
        "{counts}"
    );
}
