//! The "model" behind the provider: a plan that decides the next answer from what the
//! request holds, so a long task runs the same whether or not the client condensed,
//! cut or re-sent its history.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{json, Value};

use super::history::Conversation;
use super::WireFormat;

/// The system prompt of a summary request starts with this (and offers no tools).
pub const SUMMARY_PROMPT_START: &str = "You condense a coding agent's conversation";

/// One answer of the model.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Text(String),
    /// A tool call, with a short text before it (none if empty).
    Tool {
        text: String,
        id: String,
        name: String,
        input: Value,
    },
}

/// Whether the facts planted early in the task reached the final request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FactsVerdict {
    pub kept: Vec<String>,
    pub lost: Vec<String>,
    /// The objective marker was still in the request.
    pub objective_kept: bool,
}

impl FactsVerdict {
    pub fn all_kept(&self) -> bool {
        self.lost.is_empty() && self.objective_kept
    }
}

/// Decides the model's answers.
pub trait Plan: Send {
    fn answer(&mut self, request: &Conversation, wire: WireFormat) -> Answer;

    /// The verdict on the planted facts, once the plan has checked them.
    fn verdict(&self) -> Option<FactsVerdict> {
        None
    }
}

/// Any closure is a plan, for tests that script a few answers by hand.
impl<F: FnMut(&Conversation, WireFormat) -> Answer + Send> Plan for F {
    fn answer(&mut self, request: &Conversation, wire: WireFormat) -> Answer {
        self(request, wire)
    }
}

/// A fresh tool call id shaped like the provider's: `toolu_01…` or `call_…`.
pub fn call_id(wire: WireFormat) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    match wire {
        WireFormat::Anthropic => format!("toolu_01Rp{n:014}"),
        WireFormat::OpenAi => format!("call_Rp{n:017}"),
    }
}

/// Whether a request asks for a summary of the conversation rather than the next step.
/// A summary asked at the end of the task's own (cached) history starts its last message so.
pub const SUMMARY_INSTRUCTION_START: &str = "[Condense the conversation:";

pub fn is_summary_request(request: &Conversation) -> bool {
    let asked_in_place = request.messages.last().is_some_and(|m| {
        m.role == "user"
            && m.parts.iter().any(
                |p| matches!(p, super::Part::Text(t) if t.starts_with(SUMMARY_INSTRUCTION_START)),
            )
    });
    !request.has_tools && (request.system.starts_with(SUMMARY_PROMPT_START) || asked_in_place)
}

/// A plausible summary: the objective and every `FACT-…:` line the request carried, so a
/// fact survives condensing exactly when the client sent it to be condensed.
pub fn summary_of(request: &Conversation) -> String {
    let fact = regex::Regex::new(r"FACT-[A-Z0-9]+: .*").expect("fact pattern");
    let mut kept: Vec<String> = Vec::new();
    for line in request.lines() {
        let found = if line.trim_start().starts_with("Objective:") {
            Some(line.trim().to_string())
        } else {
            fact.find(line).map(|m| m.as_str().trim_end().to_string())
        };
        if let Some(found) = found.filter(|f| !kept.contains(f)) {
            kept.push(found);
        }
    }
    let mut text = String::from(
        "Summary of the work so far. The agent selected its intent and read the project's \
         files one by one, noting what matters for the task.\n",
    );
    for line in kept {
        text.push_str(&line);
        text.push('\n');
    }
    text
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Select,
    Read(String),
    Write(String),
    Complete,
}

/// A long task: select the intent, read every file (writing a note now and then), complete.
/// Each read's result is whatever the test put in the file, so a few large files take the
/// conversation past the window several times.
pub struct LongTaskPlan {
    intent_id: String,
    objective: String,
    facts: Vec<String>,
    steps: Vec<Step>,
    /// Tool call id → the step that issued it.
    issued: HashMap<String, usize>,
    /// The furthest step whose result came back.
    done: Option<usize>,
    verdict: Option<FactsVerdict>,
}

impl LongTaskPlan {
    /// `objective` is a marker the final request must still hold (e.g. the task's
    /// `Objective: …` line); `facts` are whole lines planted in the first files
    /// (e.g. `FACT-ALPHA: the build uses cargo`).
    pub fn new(intent_id: &str, files: &[&str], objective: &str, facts: &[&str]) -> Self {
        let reads = files.iter().map(|f| Step::Read(f.to_string()));
        let steps = std::iter::once(Step::Select)
            .chain(reads)
            .chain(std::iter::once(Step::Complete))
            .collect();
        LongTaskPlan {
            intent_id: intent_id.to_string(),
            objective: objective.to_string(),
            facts: facts.iter().map(|f| f.to_string()).collect(),
            steps,
            issued: HashMap::new(),
            done: None,
            verdict: None,
        }
    }

    /// After every `every` reads, write `dir/notes-N.md` (a path inside the intent's scope).
    pub fn writing_every(mut self, every: usize, dir: &str) -> Self {
        let mut steps = Vec::new();
        let mut reads = 0;
        for step in std::mem::take(&mut self.steps) {
            let is_read = matches!(step, Step::Read(_));
            steps.push(step);
            if is_read {
                reads += 1;
                if every > 0 && reads % every == 0 {
                    steps.push(Step::Write(format!("{dir}/notes-{}.md", reads / every)));
                }
            }
        }
        self.steps = steps;
        self
    }

    /// The step to take now: the one after the step whose result ends the request, or, when
    /// the request ends otherwise (first turn, a condensed history), the one after the
    /// furthest result seen.
    fn next_step(&mut self, request: &Conversation) -> usize {
        let answered = request
            .last_tool_result()
            .and_then(|id| self.issued.get(id).copied());
        if let Some(s) = answered {
            self.done = self.done.max(Some(s));
            return (s + 1).min(self.steps.len() - 1);
        }
        self.done.map_or(0, |d| (d + 1).min(self.steps.len() - 1))
    }

    fn check_facts(&mut self, request: &Conversation) -> String {
        let text = request.lines().join("\n");
        let (kept, lost): (Vec<String>, Vec<String>) =
            self.facts.iter().cloned().partition(|f| text.contains(f));
        let objective_kept = text.contains(&self.objective);
        let label = |f: &String| f.split(':').next().unwrap_or_default().to_string();
        let names = |v: &[String]| v.iter().map(label).collect::<Vec<_>>().join(", ");
        let result = if lost.is_empty() && objective_kept {
            format!("FACTS KEPT: {}", names(&kept))
        } else {
            let mut missing = names(&lost);
            if !objective_kept {
                missing = [missing, "objective".to_string()]
                    .into_iter()
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join(", ");
            }
            format!("FACTS LOST: {missing}")
        };
        self.verdict = Some(FactsVerdict {
            kept,
            lost,
            objective_kept,
        });
        result
    }
}

impl Plan for LongTaskPlan {
    fn answer(&mut self, request: &Conversation, wire: WireFormat) -> Answer {
        let step = self.next_step(request);
        let (text, name, input) = match self.steps[step].clone() {
            Step::Select => (
                "I will start by selecting the intent for this work.".to_string(),
                "select_active_intent",
                json!({"intent_id": self.intent_id}),
            ),
            Step::Read(path) => (
                format!("Next I read {path}."),
                "read_file",
                json!({"path": path}),
            ),
            Step::Write(path) => {
                let content = format!("# Notes\n\nWritten after step {step} of the task.\n");
                (
                    format!("I note what I learnt in {path}."),
                    "write_to_file",
                    json!({"path": path, "content": content, "intent_id": self.intent_id,
                        "mutation_class": "INTENT_EVOLUTION"}),
                )
            }
            Step::Complete => {
                let result = self.check_facts(request);
                (
                    "Every file is read.".to_string(),
                    "attempt_completion",
                    json!({"result": result}),
                )
            }
        };
        let id = call_id(wire);
        self.issued.insert(id.clone(), step);
        Answer::Tool {
            text,
            id,
            name: name.to_string(),
            input,
        }
    }

    fn verdict(&self) -> Option<FactsVerdict> {
        self.verdict.clone()
    }
}
