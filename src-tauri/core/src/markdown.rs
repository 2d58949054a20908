//! Markdown to sanitized HTML for the model's answers.
//!
//! The model's output is hostile input: it can try to smuggle scripts, event
//! handlers, `javascript:` links or remote resources into the webview. All HTML
//! the UI receives (`safe_html`) comes from [`render`], built in two layers:
//!
//! 1. pulldown-cmark turns Markdown into HTML, with every piece of raw HTML in
//!    the input turned into text (the model can never author markup) and
//!    links/images rewritten conservatively (see `Neutralize`).
//! 2. ammonia re-parses that HTML and keeps only an allow-list of tags,
//!    attributes and URL schemes. This is the security boundary: a mistake in
//!    step 1 can degrade formatting but cannot let anything else through.
//!
//! Images: the webview's CSP only allows `'self'` images, and a remote image
//! would leak the user's IP to whoever the model names. So `![alt](url)` never
//! becomes `<img>`; it becomes a link to `url` labelled with the alt text (or
//! the URL when the alt text is empty), so the user can still open it on
//! purpose. Inside a link, or with a URL that is not http(s), only the alt
//! text remains.
//!
//! Bare `http(s)://` URLs in text become links (GitHub's "extended autolink" rules: trailing
//! punctuation and unbalanced parentheses stay outside), except in code and inside links.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::iter::Peekable;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use ammonia::{Builder, UrlRelative};
use pulldown_cmark::{html, CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};

/// The only URL schemes a link may use. Everything else (`javascript:`,
/// `data:`, `vbscript:`, `file:`, relative URLs) loses its link.
const URL_SCHEMES: [&str; 3] = ["http", "https", "mailto"];

/// Everything pulldown-cmark emits for the enabled options, minus `img`.
const ALLOWED_TAGS: &str = "a blockquote br code del em h1 h2 h3 h4 h5 h6 hr input li ol p pre \
                            strong table tbody td th thead tr ul";

/// After a render that took `d`, the next one waits at least `RENDER_BACKOFF * d`,
/// so re-rendering never takes more than about a tenth of a core, however large
/// the message and however fast deltas arrive.
const RENDER_BACKOFF: u32 = 10;

fn options() -> Options {
    // No footnotes: their output relies on `id`s and `#` links, and ids chosen
    // by the model could clobber ids the app itself uses (DOM clobbering).
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// Markdown -> sanitized HTML. The only source of HTML the UI ever receives (field `safe_html`).
pub fn render(markdown: &str) -> String {
    let events = Neutralize {
        inner: Parser::new_ext(markdown, options()).peekable(),
        anchors: Vec::new(),
        pending: VecDeque::new(),
        in_code_block: false,
    };
    let mut unsafe_html = String::with_capacity(markdown.len() + markdown.len() / 2);
    html::push_html(&mut unsafe_html, events);
    sanitizer().clean(&unsafe_html).to_string()
}

/// Rewrites the parser's events before they become HTML:
/// - raw HTML (block or inline) becomes text, so it is shown escaped;
/// - links whose URL is not http/https/mailto lose the link but keep the text;
/// - images become links (see the module docs);
/// - no link is opened inside another, since nested `<a>` is invalid HTML;
/// - bare http(s) URLs in text become links.
struct Neutralize<'a, I: Iterator<Item = Event<'a>>> {
    inner: Peekable<I>,
    /// Open Link/Image tags, innermost last: whether each one emitted an `<a>`.
    anchors: Vec<bool>,
    /// Events to emit before pulling the next one from `inner`.
    pending: VecDeque<Event<'a>>,
    in_code_block: bool,
}

impl<'a, I: Iterator<Item = Event<'a>>> Iterator for Neutralize<'a, I> {
    type Item = Event<'a>;

    fn next(&mut self) -> Option<Event<'a>> {
        if let Some(event) = self.pending.pop_front() {
            return Some(event);
        }
        loop {
            let event = match self.inner.next()? {
                Event::Text(text) if !self.in_code_block && self.anchors.is_empty() => {
                    // The parser splits a run of text at characters that might be emphasis
                    // (`_` in a URL): join the run before looking for URLs.
                    let mut run = text.into_string();
                    while let Some(Event::Text(more)) = self.inner.peek() {
                        run.push_str(more);
                        self.inner.next();
                    }
                    self.pending.extend(linkify(run));
                    match self.pending.pop_front() {
                        Some(first) => first,
                        None => continue,
                    }
                }
                event @ Event::Start(Tag::CodeBlock(_)) => {
                    self.in_code_block = true;
                    event
                }
                event @ Event::End(TagEnd::CodeBlock) => {
                    self.in_code_block = false;
                    event
                }
                // An HTML block is shown as a paragraph of text, line by line.
                Event::Start(Tag::HtmlBlock) => Event::Start(Tag::Paragraph),
                Event::End(TagEnd::HtmlBlock) => Event::End(TagEnd::Paragraph),
                Event::Html(raw) | Event::InlineHtml(raw) => {
                    if matches!(self.inner.peek(), Some(Event::Html(_))) {
                        self.pending.push_back(Event::HardBreak);
                    }
                    Event::Text(raw.trim_end_matches('\n').to_string().into())
                }
                Event::Start(tag @ (Tag::Link { .. } | Tag::Image { .. })) => {
                    if !self.open_anchor(&tag) {
                        continue;
                    }
                    let Tag::Image {
                        dest_url,
                        title,
                        id,
                        ..
                    } = tag
                    else {
                        return Some(Event::Start(tag));
                    };
                    // An empty link would be invisible: label it with its URL.
                    if matches!(self.inner.peek(), Some(Event::End(TagEnd::Image))) {
                        self.pending.push_back(Event::Text(dest_url.clone()));
                    }
                    Event::Start(Tag::Link {
                        link_type: LinkType::Inline,
                        dest_url,
                        title,
                        id,
                    })
                }
                Event::End(TagEnd::Link | TagEnd::Image) => match self.anchors.pop() {
                    Some(true) => Event::End(TagEnd::Link),
                    Some(false) | None => continue,
                },
                other => other,
            };
            return Some(event);
        }
    }
}

impl<'a, I: Iterator<Item = Event<'a>>> Neutralize<'a, I> {
    /// Records a Link/Image start; returns whether it should become an `<a>`.
    fn open_anchor(&mut self, tag: &Tag<'_>) -> bool {
        let allowed = match tag {
            // Email autolinks carry the bare address; the writer adds `mailto:`.
            Tag::Link {
                link_type: LinkType::Email,
                ..
            } => true,
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => allowed_url(dest_url),
            _ => false,
        };
        let keep = allowed && !self.anchors.contains(&true);
        self.anchors.push(keep);
        keep
    }
}

/// Text with its bare URLs turned into links.
fn linkify<'a>(text: String) -> Vec<Event<'a>> {
    let urls = find_urls(&text);
    if urls.is_empty() {
        return vec![Event::Text(CowStr::from(text))];
    }
    let mut events = Vec::with_capacity(urls.len() * 4 + 1);
    let mut at = 0;
    for range in urls {
        if range.start > at {
            events.push(Event::Text(CowStr::from(text[at..range.start].to_string())));
        }
        let url = text[range.clone()].to_string();
        events.push(Event::Start(Tag::Link {
            link_type: LinkType::Autolink,
            dest_url: CowStr::from(url.clone()),
            title: CowStr::from(""),
            id: CowStr::from(""),
        }));
        events.push(Event::Text(CowStr::from(url)));
        events.push(Event::End(TagEnd::Link));
        at = range.end;
    }
    if at < text.len() {
        events.push(Event::Text(CowStr::from(text[at..].to_string())));
    }
    events
}

/// Byte ranges of bare `http://` / `https://` URLs, by GitHub's extended autolink rules: after
/// the start of the text, a space or `*_~(`; up to a space or `<`; without trailing `?!.,:*_~'"`,
/// an unbalanced `)` or an entity-like `&name;`; with a host of letters, digits, `.` and `-`.
fn find_urls(text: &str) -> Vec<std::ops::Range<usize>> {
    let lower = text.to_ascii_lowercase();
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(offset) = lower[from..].find("http") {
        let start = from + offset;
        from = start + 4;
        let rest = &lower[start..];
        let scheme = if rest.starts_with("https://") {
            8
        } else if rest.starts_with("http://") {
            7
        } else {
            continue;
        };
        let before = text[..start].chars().next_back();
        if before.is_some_and(|c| !(c.is_whitespace() || "*_~(".contains(c))) {
            continue;
        }
        let len = text[start..]
            .find(|c: char| c.is_whitespace() || c == '<' || c.is_control())
            .unwrap_or(text.len() - start);
        let mut url = &text[start..start + len];
        loop {
            let trimmed = url.trim_end_matches(|c: char| "?!.,:*_~'\"".contains(c));
            let trimmed = match trimmed.strip_suffix(')') {
                Some(inner) if trimmed.matches(')').count() > trimmed.matches('(').count() => inner,
                _ => trimmed,
            };
            let trimmed = strip_entity(trimmed);
            if trimmed.len() == url.len() {
                break;
            }
            url = trimmed;
        }
        let host = url[scheme..]
            .split(['/', '?', '#', ':'])
            .next()
            .unwrap_or("");
        let host_ok = !host.is_empty()
            && !host.starts_with(['.', '-'])
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
        if host_ok {
            found.push(start..start + url.len());
            from = start + url.len();
        }
    }
    found
}

/// `url` without a trailing `&name;` (it reads as an entity, not as part of the URL).
fn strip_entity(url: &str) -> &str {
    let Some(body) = url.strip_suffix(';') else {
        return url;
    };
    match body.rfind('&') {
        Some(amp)
            if amp + 1 < body.len()
                && body[amp + 1..].bytes().all(|b| b.is_ascii_alphanumeric()) =>
        {
            &url[..amp]
        }
        _ => url,
    }
}

/// Cheap pre-check mirroring ammonia's scheme list, so a rejected link shows as
/// plain text instead of an `<a>` without `href`. ammonia still checks again.
fn allowed_url(url: &str) -> bool {
    url.split_once(':').is_some_and(|(scheme, _)| {
        URL_SCHEMES
            .iter()
            .any(|allowed| scheme.eq_ignore_ascii_case(allowed))
    })
}

/// `language-*` is the only class that survives, and only on `<code>`: it
/// carries the fence's language for highlighting. The value is restricted so a
/// crafted info string cannot inject other classes the UI's CSS might react to.
fn is_language_class(value: &str) -> bool {
    value.strip_prefix("language-").is_some_and(|lang| {
        (1..=32).contains(&lang.len())
            && lang
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+#._-".contains(&b))
    })
}

/// The allow-list, built once: building it allocates several hash sets.
fn sanitizer() -> &'static Builder<'static> {
    static SANITIZER: OnceLock<Builder<'static>> = OnceLock::new();
    SANITIZER.get_or_init(|| {
        let mut builder = Builder::empty();
        builder
            .add_tags(ALLOWED_TAGS.split(' '))
            // Replace ammonia's defaults (e.g. `lang`, `title` everywhere, `align`).
            .generic_attributes(Default::default())
            .tag_attributes(Default::default())
            .add_tag_attributes("a", ["href", "title"])
            .add_tag_attributes("ol", ["start"])
            // `class` must be allowed for the filter below to see it; the
            // filter then keeps only valid `language-*` values. (ammonia panics
            // if `allowed_classes` is combined with an allowed `class`.)
            .add_tag_attributes("code", ["class"])
            // Task-list markers: a checkbox the user cannot toggle, nothing else.
            .add_tag_attributes("input", ["checked"])
            .add_tag_attribute_values("input", "type", ["checkbox"])
            .set_tag_attribute_value("input", "disabled", "")
            .url_schemes(URL_SCHEMES.into_iter().collect())
            .url_relative(UrlRelative::Deny)
            .link_rel(Some("noopener noreferrer"))
            .strip_comments(true)
            .attribute_filter(|element, attribute, value| match (element, attribute) {
                ("code", "class") if is_language_class(value) => Some(Cow::Borrowed(value)),
                (_, "class") => None,
                _ => Some(Cow::Borrowed(value)),
            });
        builder
    })
}

/// Coalesces re-rendering of a growing message: push deltas, and the renderer decides when a re-render is due.
///
/// Two mechanisms keep the CPU cost bounded:
/// - Time: a render is due only after `max(min_interval, RENDER_BACKOFF × last
///   render duration)`. Bursts of deltas cost one render per interval, and as
///   a message grows (renders get slower) it re-renders less often.
/// - Size: top-level blocks that are finished (another block has started after
///   them on a complete line) are rendered once and their HTML is kept, so each
///   render only parses and sanitizes the unfinished tail. Block structure only
///   ever depends on earlier lines plus the open block, so this gives the same
///   HTML as a full render. The exception is reference definitions
///   (`[x]: url`), which can change any earlier paragraph: once the text has
///   one, every render is a full render.
///
/// So a render costs about as much as the unfinished tail, not the whole
/// message. One ever-growing block (a huge code block or list), or a text with
/// reference definitions, is bounded by the time rule alone: at most about
/// 1/`RENDER_BACKOFF` of a core while streaming.
///
/// [`finish`](Self::finish) always renders the whole text from scratch.
pub struct StreamingRenderer {
    text: String,
    min_interval: Duration,
    /// The next render is due this long after `last_render`.
    interval: Duration,
    last_render: Option<Instant>,
    /// Text was pushed since the last render.
    changed: bool,
    /// `text[..frozen_len]` is finished blocks whose sanitized HTML is `frozen_html`.
    frozen_len: usize,
    frozen_html: String,
    /// Cleared for good once the text defines a reference link.
    can_freeze: bool,
    /// How much of `frozen_html` the incremental updates have handed out.
    sent_frozen: usize,
    /// Render CPU spent on this message so far, and the cost per byte seen in renders.
    spent: Duration,
    nanos_per_byte: f64,
}

/// While streaming, rendering may use at most this many times the cost of one full render of
/// the text so far (once it has used `CPU_FLOOR`, which keeps short answers fluid): whatever the
/// pace of the deltas, a long answer's whole stream, final render included, stays within about
/// four full renders.
const CPU_BUDGET: f64 = 3.0;
const CPU_FLOOR: Duration = Duration::from_millis(10);

/// What changed since the previous update: finished blocks to append, and the unfinished tail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamUpdate {
    /// Sanitized HTML of blocks finished since the last update (append it).
    pub stable_html: String,
    /// Sanitized HTML of the unfinished tail (replace the previous tail with it).
    pub tail_html: String,
    /// The finished part was discarded (a reference definition appeared): clear it first.
    pub reset: bool,
}

impl StreamingRenderer {
    pub fn new(min_interval: Duration) -> Self {
        Self {
            text: String::new(),
            min_interval,
            interval: min_interval,
            last_render: None,
            changed: false,
            frozen_len: 0,
            frozen_html: String::new(),
            can_freeze: true,
            sent_frozen: 0,
            spent: Duration::ZERO,
            nanos_per_byte: 0.0,
        }
    }

    /// Appends text without rendering.
    pub fn push(&mut self, delta: &str) {
        self.text.push_str(delta);
        self.changed |= !delta.is_empty();
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// The whole message (tests compare it with a full render; the app uses `update_if_due`).
    /// Some(html) if at least `min_interval` has passed since the last render (or nothing was rendered yet) and text changed since; else None.
    ///
    /// The interval also grows with the cost of the last render (see the type docs).
    #[cfg(test)]
    pub fn render_if_due(&mut self, now: Instant) -> Option<String> {
        if !self.changed || !self.is_due(now) {
            return None;
        }
        let started = Instant::now();
        if self.can_freeze {
            self.freeze_finished_blocks();
        }
        let mut html = self.frozen_html.clone();
        let tail = self.text.get(self.frozen_len..).unwrap_or("");
        let tail_started = Instant::now();
        html.push_str(&render(tail));
        self.learn(tail_started.elapsed(), tail.len());
        self.rendered(now, started.elapsed());
        Some(html)
    }

    /// Like [`render_if_due`](Self::render_if_due), but hands out only what changed, so a long
    /// answer is neither copied nor sent whole on every re-render.
    pub fn update_if_due(&mut self, now: Instant) -> Option<StreamUpdate> {
        if !self.changed || !self.is_due(now) {
            return None;
        }
        let started = Instant::now();
        let could_freeze = self.can_freeze;
        if self.can_freeze {
            self.freeze_finished_blocks();
        }
        let reset = could_freeze && !self.can_freeze && self.sent_frozen > 0;
        if reset {
            self.sent_frozen = 0;
        }
        let stable_html = self
            .frozen_html
            .get(self.sent_frozen..)
            .unwrap_or("")
            .to_string();
        self.sent_frozen = self.frozen_html.len();
        let tail = self.text.get(self.frozen_len..).unwrap_or("");
        let tail_started = Instant::now();
        let tail_html = render(tail);
        self.learn(tail_started.elapsed(), tail.len());
        self.rendered(now, started.elapsed());
        Some(StreamUpdate {
            stable_html,
            tail_html,
            reset,
        })
    }

    /// Always renders the final text (call at the end of the stream).
    pub fn finish(&mut self) -> String {
        let started = Instant::now();
        let html = render(&self.text);
        self.rendered(started, started.elapsed());
        html
    }

    fn is_due(&self, now: Instant) -> bool {
        let Some(last) = self.last_render else {
            return true;
        };
        if now.saturating_duration_since(last) < self.interval {
            return false;
        }
        // The CPU budget: a slow stream of a long answer re-renders less often.
        if self.spent <= CPU_FLOOR || self.nanos_per_byte == 0.0 {
            return true;
        }
        let full_render = self.nanos_per_byte * self.text.len() as f64;
        self.spent.as_nanos() as f64 <= CPU_BUDGET * full_render
    }

    fn rendered(&mut self, at: Instant, took: Duration) {
        self.last_render = Some(at);
        self.interval = self.min_interval.max(took.saturating_mul(RENDER_BACKOFF));
        self.changed = false;
        self.spent += took;
    }

    /// Learns the cost per byte from a render of `bytes` (the largest seen is the best guide).
    fn learn(&mut self, took: Duration, bytes: usize) {
        if bytes >= 256 {
            let per_byte = took.as_nanos() as f64 / bytes as f64;
            self.nanos_per_byte = if self.nanos_per_byte == 0.0 {
                per_byte
            } else {
                0.8 * self.nanos_per_byte + 0.2 * per_byte
            };
        }
    }

    /// Moves finished top-level blocks from the tail into `frozen_html`.
    fn freeze_finished_blocks(&mut self) {
        let tail = self.text.get(self.frozen_len..).unwrap_or("");
        // Only complete lines count: a partial last line may still change what
        // it is (`#` is a heading, `#tag` continues the paragraph above it).
        let Some((complete, partial)) = tail.rfind('\n').map(|nl| tail.split_at(nl + 1)) else {
            return;
        };
        let defines_refs = |p: &Parser<'_>| p.reference_definitions().iter().next().is_some();
        let parser = Parser::new_ext(complete, options());
        // The partial line is checked on its own: a half-written definition
        // already resolves links in a full render of the current text.
        if defines_refs(&parser) || defines_refs(&Parser::new(partial)) {
            self.can_freeze = false;
            self.frozen_len = 0;
            self.frozen_html = String::new();
            return;
        }
        let (mut depth, mut last_block) = (0usize, 0);
        for (event, range) in parser.into_offset_iter() {
            if depth == 0 && !matches!(event, Event::End(_)) {
                last_block = range.start;
            }
            match event {
                Event::Start(_) => depth += 1,
                Event::End(_) => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        // Cut at the start of the line where the last (still open) block
        // begins, so the tail keeps that block's indentation intact.
        let cut = tail
            .get(..last_block)
            .and_then(|before| before.rfind('\n'))
            .map_or(0, |nl| nl + 1);
        if let Some(finished) = tail.get(..cut).filter(|f| !f.is_empty()) {
            let started = Instant::now();
            self.frozen_html.push_str(&render(finished));
            self.learn(started.elapsed(), finished.len());
            self.frozen_len += cut;
        }
    }
}

#[cfg(test)]
#[path = "markdown_tests.rs"]
mod tests;
