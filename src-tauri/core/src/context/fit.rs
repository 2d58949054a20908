//! Nothing too big goes in: a tool result is measured before it enters the conversation and,
//! over its budget, cut to its head and tail with a plain note of how to get the rest. One
//! oversized result can no longer fill the window for every later request.

use super::window::ModelWindow;

/// The most one tool result may hold, in estimated tokens: a quarter of the usable input,
/// never more than 25k tokens (100 KB of text) and never less than 512.
pub fn budget(window: &ModelWindow) -> u64 {
    (window.usable_input() / 4).clamp(512, 25_000)
}

/// How the rest of a cut result can be had.
pub enum Rest<'a> {
    /// A file: read the lines left out by range.
    File { path: &'a str },
    /// Any other output: kept whole with the task, readable by call id.
    Kept { call_id: &'a str },
}

/// `content` if it fits `budget` tokens; else its first and last lines (about 60% / 40% of
/// the budget) around a note naming the lines left out and how to read them.
pub fn fit(content: &str, budget: u64, rest: Rest<'_>) -> Option<String> {
    let max_bytes = (budget * 4) as usize;
    if content.len() <= max_bytes {
        return None;
    }
    let lines: Vec<&str> = content.split_inclusive('\n').collect();
    let total = lines.len();
    let head_bytes = max_bytes * 6 / 10;
    let tail_bytes = max_bytes * 4 / 10;
    let mut head = 0usize;
    let mut used = 0usize;
    while head < total && used + lines[head].len() <= head_bytes {
        used += lines[head].len();
        head += 1;
    }
    let mut tail = 0usize;
    used = 0;
    while tail < total - head && used + lines[total - 1 - tail].len() <= tail_bytes {
        used += lines[total - 1 - tail].len();
        tail += 1;
    }
    let mut out = String::with_capacity(max_bytes + 400);
    if head == 0 && tail == 0 {
        // One enormous line: keep its start and end by characters.
        let start = crate::text::prefix(content, head_bytes);
        let end = crate::text::suffix(content, tail_bytes);
        out.push_str(start);
        out.push_str(&format!(
            "\n[… {} characters left out to fit the model's context window. {} …]\n",
            content.len() - start.len() - end.len(),
            how(&rest, None)
        ));
        out.push_str(end);
        return Some(out);
    }
    for l in &lines[..head] {
        out.push_str(l);
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    let (first, last) = (head + 1, total - tail);
    out.push_str(&format!(
        "[… lines {first}–{last} of {total} ({} characters) were left out to fit the model's context window. {} …]\n",
        lines[head..total - tail].iter().map(|l| l.len()).sum::<usize>(),
        how(&rest, Some((first, last)))
    ));
    for l in &lines[total - tail..] {
        out.push_str(l);
    }
    Some(out)
}

fn how(rest: &Rest<'_>, range: Option<(usize, usize)>) -> String {
    match (rest, range) {
        (Rest::File { path }, Some((a, b))) => format!(
            "Read them with read_file {{\"path\": \"{path}\", \"start_line\": {a}, \"end_line\": {b}}}, a few hundred lines at a time, or search_files for what you need"
        ),
        (Rest::File { path }, None) => {
            format!("Use search_files on {path} to find what you need")
        }
        (Rest::Kept { call_id }, Some((a, b))) => format!(
            "The whole output is kept with the task: read_tool_output {{\"call_id\": \"{call_id}\", \"start_line\": {a}, \"end_line\": {b}}}"
        ),
        (Rest::Kept { call_id }, None) => format!(
            "The whole output is kept with the task: read_tool_output {{\"call_id\": \"{call_id}\"}}"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_within_budget_is_left_alone() {
        assert_eq!(fit("short\n", 100, Rest::Kept { call_id: "c" }), None);
    }

    #[test]
    fn a_long_result_keeps_its_head_and_tail_and_says_how_to_read_the_rest() {
        let text: String = (1..=1000).map(|i| format!("line {i}\n")).collect();
        let cut = fit(&text, 500, Rest::Kept { call_id: "call_7" }).expect("cut");
        assert!(cut.len() <= 500 * 4 + 400, "{}", cut.len());
        assert!(cut.starts_with("line 1\nline 2\n"));
        assert!(cut.ends_with("line 1000\n"));
        assert!(cut.contains("were left out"), "{cut}");
        assert!(cut.contains("read_tool_output {\"call_id\": \"call_7\", \"start_line\": "));
        let file = fit(&text, 500, Rest::File { path: "src/big.rs" }).expect("cut");
        assert!(file.contains("read_file {\"path\": \"src/big.rs\", \"start_line\": "));
    }

    #[test]
    fn one_enormous_line_is_cut_by_characters_on_char_boundaries() {
        let text = "é".repeat(10_000);
        let cut = fit(&text, 512, Rest::Kept { call_id: "c" }).expect("cut");
        assert!(cut.contains("characters left out"));
        assert!(cut.len() < 512 * 4 + 300);
    }

    #[test]
    fn the_budget_scales_with_the_window() {
        let small = ModelWindow::resolve(
            "local",
            &crate::protocol::ModelOverride {
                context_window: Some(16_384),
                ..Default::default()
            },
            None,
            &crate::llm::ModelInfo::default(),
        );
        assert_eq!(budget(&small), small.usable_input() / 4);
        let big = ModelWindow::resolve(
            "claude-sonnet-4-5",
            &Default::default(),
            None,
            &crate::llm::ModelInfo::default(),
        );
        assert_eq!(budget(&big), 25_000);
    }
}
