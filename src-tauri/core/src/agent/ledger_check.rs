//! The ledger is checked at the start of every run. A damaged one is said out loud, and new
//! records after the damage are the person's decision: asked in the window (accepting appends a
//! record of that decision, so the break is never buried), refused in a headless run (the
//! ledger refuses the append and every write says why).

use tokio_util::sync::CancellationToken;

use super::env::AgentEnv;
use super::task::TaskHandle;
use crate::protocol::{ApprovalOutcome, Event, NoticeLevel};

/// What is wrong with the ledger (see [`crate::orchestration::ledger::Ledger::problem`]).
async fn problem(env: &AgentEnv) -> Option<String> {
    let ledger = env.gov.ledger.clone();
    tokio::task::spawn_blocking(move || ledger.problem())
        .await
        .unwrap_or_else(|e| Some(format!("The trace ledger cannot be checked: {e}.")))
}

/// Says what is wrong with the ledger, if anything, and in the window asks whether new records
/// may follow the damage.
pub(super) async fn check_at_start(env: &AgentEnv, task: &TaskHandle, cancel: &CancellationToken) {
    let Some(problem) = problem(env).await else {
        return;
    };
    let notice = |level, message: String| env.sink.emit(Event::Notice { level, message });
    tracing::warn!(problem = %problem, "the ledger is damaged");
    if !env.interactive {
        notice(
            NoticeLevel::Error,
            format!(
                "{problem} No change is recorded after the damage without a person's decision, so this run's writes are refused: repair the ledger (see `mandate trace verify`), or accept it as it is in the window."
            ),
        );
        return;
    }
    notice(NoticeLevel::Error, problem.clone());
    let question = format!(
        "{problem} Accept the ledger as it is and record new changes after it? Your decision is recorded in the ledger, and `trace verify` keeps reporting the damage. Otherwise every change is refused until the ledger is repaired."
    );
    let outcomes = (
        ApprovalOutcome::LedgerAccepted,
        ApprovalOutcome::LedgerRefused,
    );
    let accepted = super::turn::ask_person(env, task, question, outcomes, cancel).await;
    if !accepted {
        notice(
            NoticeLevel::Warning,
            "The ledger stays as it is: changes are refused until it is repaired.".into(),
        );
        return;
    }
    let ledger = env.gov.ledger.clone();
    let recorded = tokio::task::spawn_blocking(move || ledger.accept_broken())
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r.map_err(|e| e.to_string()));
    match recorded {
        Ok(_) => notice(
            NoticeLevel::Info,
            "Your decision is recorded in the ledger; new changes are recorded after it.".into(),
        ),
        Err(e) => notice(
            NoticeLevel::Error,
            format!("Your decision could not be recorded ({e}): changes stay refused."),
        ),
    }
}
