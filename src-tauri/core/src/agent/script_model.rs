//! A model for tests that plays a script per task: the task is known by the start of its first
//! message, the step by how many answers it already gave. Each answer reports 1,000 input
//! tokens.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::stream;
use serde_json::{json, Value};

use crate::llm::{ChatMessage, LlmError, ModelEvent, ModelRequest, ModelStream, Provider};

/// One answer of the scripted model.
#[derive(Clone)]
pub(crate) enum Step {
    Call(&'static str, Value),
    /// Several calls in one answer.
    Calls(Vec<(&'static str, Value)>),
    /// Never answers (until the task is stopped).
    Hang,
    /// Waits until `n` tasks have reached a `Meet`, then makes the call.
    Meet(usize, &'static str, Value),
    /// Answers in words, without a call.
    Say(&'static str),
}

/// A model that plays a script per task: the task is known by a marker in its first message,
/// the step by how many answers it already gave.
pub(crate) struct Script {
    pub(crate) plays: Vec<(&'static str, Vec<Step>)>,
    pub(crate) met: AtomicUsize,
    /// The first message of each task that asked, in order.
    pub(crate) asked: Mutex<Vec<String>>,
}

fn answer(calls: Vec<(&'static str, Value)>, step: usize) -> ModelStream {
    let mut events = Vec::new();
    for (n, (name, args)) in calls.into_iter().enumerate() {
        events.push(ModelEvent::ToolCallStart {
            index: n,
            id: format!("call_{step}_{n}_{}", uuid::Uuid::new_v4().simple()),
            name: name.into(),
        });
        events.push(ModelEvent::ToolCallArgs {
            index: n,
            delta: args.to_string(),
        });
    }
    events.push(ModelEvent::Usage(crate::llm::TokenUsage {
        input_tokens: 1000,
        ..Default::default()
    }));
    events.push(ModelEvent::Finished {
        stop_reason: "tool_use".into(),
    });
    Box::pin(stream::iter(events.into_iter().map(Ok)))
}

#[async_trait]
impl Provider for Script {
    fn model_id(&self) -> String {
        "test/script".into()
    }
    async fn stream(&self, r: &ModelRequest) -> Result<ModelStream, LlmError> {
        let first = match r.messages.first() {
            Some(ChatMessage::User { text, .. }) => text.clone(),
            _ => String::new(),
        };
        let step = r
            .messages
            .iter()
            .filter(|m| matches!(m, ChatMessage::Assistant { .. }))
            .count();
        self.asked.lock().expect("asked").push(first.clone());
        let play = self
            .plays
            .iter()
            .find(|(marker, _)| first.starts_with(marker))
            .map(|(_, steps)| steps.clone())
            .unwrap_or_default();
        match play.get(step).cloned() {
            Some(Step::Call(name, args)) => Ok(answer(vec![(name, args)], step)),
            Some(Step::Calls(calls)) => Ok(answer(calls, step)),
            Some(Step::Hang) => Ok(Box::pin(stream::pending())),
            Some(Step::Say(text)) => {
                let events = [
                    ModelEvent::TextDelta(text.into()),
                    ModelEvent::Finished {
                        stop_reason: "end_turn".into(),
                    },
                ];
                Ok(Box::pin(stream::iter(events.map(Ok))))
            }
            Some(Step::Meet(n, name, args)) => {
                self.met.fetch_add(1, Ordering::SeqCst);
                for _ in 0..200 {
                    if self.met.load(Ordering::SeqCst) >= n {
                        return Ok(answer(vec![(name, args)], step));
                    }
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
                let alone = json!({"result": "ALONE: no other task asked meanwhile"});
                Ok(answer(vec![("attempt_completion", alone)], step))
            }
            None => Ok(answer(
                vec![("attempt_completion", json!({"result": "script ended"}))],
                step,
            )),
        }
    }
    async fn list_models(&self) -> Result<Vec<String>, LlmError> {
        Ok(Vec::new())
    }
}
