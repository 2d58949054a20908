use super::*;

const MS: Duration = Duration::from_millis(1);

/// Synthetic instants only: "due" checks use times far enough out that the
/// measured render duration cannot matter; `rendered` pins the exact rule.
#[test]
fn coalesces_by_interval_and_change() {
    let t0 = Instant::now();
    let min = Duration::from_secs(60);
    let mut r = StreamingRenderer::new(min);
    assert_eq!(r.render_if_due(t0), None, "nothing pushed yet");
    r.push("**a");
    assert_eq!(
        r.render_if_due(t0).as_deref(),
        Some("<p>**a</p>\n"),
        "first render"
    );
    r.push("b**");
    assert_eq!(r.render_if_due(t0 + min / 2), None, "too soon");
    assert_eq!(r.render_if_due(t0 + min - MS), None, "too soon");
    let html = r.render_if_due(t0 + 10 * min);
    assert_eq!(html.as_deref(), Some("<p><strong>ab</strong></p>\n"));
    assert_eq!(r.render_if_due(t0 + 100 * min), None, "unchanged");
    r.push("");
    assert_eq!(r.render_if_due(t0 + 100 * min), None, "empty delta");
    r.push(" c");
    assert!(r.render_if_due(t0 + 100 * min).is_some());
    assert_eq!(r.text(), "**ab** c");
    assert_eq!(r.finish(), "<p><strong>ab</strong> c</p>\n");
    r.push("d");
    assert_eq!(r.render_if_due(t0), None, "clock went backwards: not due");

    // The interval is max(min_interval, RENDER_BACKOFF x last duration).
    let mut r = StreamingRenderer::new(50 * MS);
    r.rendered(t0, 20 * MS);
    assert!(!r.is_due(t0 + 199 * MS) && r.is_due(t0 + 200 * MS));
    r.rendered(t0, MS);
    assert!(!r.is_due(t0 + 49 * MS) && r.is_due(t0 + 50 * MS));
}

#[test]
fn incremental_updates_reassemble_to_a_full_render() {
    let doc = "# T\n\npara one\n\n- a\n- b\n\n```rust\nfn main() {}\n```\n\nlast [x](https://e.org)\n\n[r]: https://r.org\n\nend\n";
    let mut r = StreamingRenderer::new(Duration::ZERO);
    let start = Instant::now();
    let mut stable = String::new();
    for (i, c) in doc.chars().enumerate() {
        r.push(&c.to_string());
        if let Some(u) = r.update_if_due(start + MS * i as u32) {
            if u.reset {
                stable.clear();
            }
            stable.push_str(&u.stable_html);
            assert_eq!(
                format!("{stable}{}", u.tail_html),
                render(r.text()),
                "after {i} chars"
            );
        }
    }
}

/// Every intermediate render, frozen blocks included, equals a full render.
#[test]
fn incremental_render_matches_full_render() {
    let doc = "# Title\n\nPara *one*\ncontinued\n#tag\n\n- a\n- b\n\n  more\n\n1. x\n2. y\n\n\
               > quote\nlazy\n\n```rust\nfn main() {}\n\n```\n\n    indented\n\n\
               | a | b |\n|---|:-:|\n| 1 | 2 |\n\nSetext\n---\n\n<div>\n<b>x</b>\n\n***\n- [x] done\n";
    let t0 = Instant::now();
    let mut r = StreamingRenderer::new(MS);
    for (i, ch) in doc.char_indices() {
        r.push(ch.encode_utf8(&mut [0; 4]));
        let html = r.render_if_due(t0 + Duration::from_secs(3600 * (i as u64 + 1)));
        assert_eq!(html, Some(render(r.text())), "after {:?}", &doc[..=i]);
    }
    assert!(r.frozen_len > doc.len() / 2, "finished blocks were frozen");
}

#[test]
fn reference_definitions_disable_freezing() {
    let t0 = Instant::now();
    let mut r = StreamingRenderer::new(MS);
    r.push("see [docs]\n\nnext\n\n");
    assert!(r.render_if_due(t0).is_some());
    assert!(r.frozen_len > 0);
    r.push("[docs]: https://example.com\n\nend");
    let html = r.render_if_due(t0 + Duration::from_secs(3600));
    assert_eq!(html, Some(render(r.text())));
    assert!(html.is_some_and(|h| h.contains("href=\"https://example.com\"")));
}

/// The sanitizer on its own, as if the Markdown layer had let raw HTML through.
#[test]
fn sanitizer_alone_blocks_hostile_html() {
    let hostile = r#"<a href="javascript:alert(1)" onclick="x" style="color:red" id="app">a</a><a href="//evil.com/">b</a><a href="data:text/html,x">c</a><a href="https://ok.com" target="_blank">ok</a><img src="https://e/x.png" alt="i"><code class="language-rust evil">c</code><code class="language-rust">r</code><input type="checkbox" checked name="n"><script>alert(1)</script><iframe src="https://e"></iframe><span>s</span><!-- c -->"#;
    assert_eq!(
        sanitizer().clean(hostile).to_string(),
        "<a rel=\"noopener noreferrer\">a</a><a rel=\"noopener noreferrer\">b</a><a rel=\"noopener noreferrer\">c</a>\
         <a href=\"https://ok.com\" rel=\"noopener noreferrer\">ok</a><code>c</code><code class=\"language-rust\">r</code>\
         <input type=\"checkbox\" checked=\"\" disabled=\"\">s"
    );
}
