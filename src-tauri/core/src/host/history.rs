//! The task history as the window asks for it: a search over every stored task, and a task
//! exported as Markdown. The export is written by the host into Mandate's data directory
//! (`DATA/exports/`), which confined commands, hooks and servers cannot see: the page writes no
//! file, and the agent never reads a past conversation it was not given.

use std::collections::HashMap;

use super::{err, Host};
use crate::protocol::{HistoryQuery, IpcError, IpcErrorCode, Reply, Request, TaskSummary};

impl Host {
    pub(super) async fn handle_history(&self, request: Request) -> Result<Reply, IpcError> {
        match request {
            Request::SearchHistory { query } => self.search_history(query).await,
            Request::ExportTask { task_id } => self.export_task(&task_id).await,
            _ => Err(err(
                IpcErrorCode::Internal,
                "this request is not a request about the task history",
            )),
        }
    }

    /// Each intent's name as the intents file says now.
    fn intent_names(&self) -> HashMap<String, String> {
        self.governance()
            .intents
            .snapshot()
            .doc
            .intents
            .iter()
            .map(|i| (i.id.clone(), i.name.clone()))
            .collect()
    }

    async fn search_history(&self, query: HistoryQuery) -> Result<Reply, IpcError> {
        let opened = self.opened();
        let names = self.intent_names();
        let live: HashMap<String, TaskSummary> = opened
            .tasks
            .all()
            .iter()
            .map(|t| (t.id.clone(), t.summary()))
            .collect();
        let (store, index) = (opened.store.clone(), opened.history.clone());
        let results = tokio::task::spawn_blocking(move || {
            index.search(&store, &query, &names, &|id| live.get(id).cloned())
        })
        .await
        .map_err(|e| err(IpcErrorCode::Internal, e.to_string()))?
        .map_err(|e| err(IpcErrorCode::InvalidInput, e.to_string()))?;
        Ok(Reply::History { results })
    }

    async fn export_task(&self, task_id: &str) -> Result<Reply, IpcError> {
        let record = self.task(task_id)?.record();
        let name = record
            .summary
            .intent_id
            .as_ref()
            .and_then(|id| self.intent_names().remove(id));
        let dir = self.dirs.data.join(crate::history::EXPORTS_DIR);
        let export = tokio::task::spawn_blocking(move || {
            crate::history::save_export(&dir, &record, name.as_deref())
        })
        .await
        .map_err(|e| err(IpcErrorCode::Internal, e.to_string()))?
        .map_err(|e| err(IpcErrorCode::Io, e.to_string()))?;
        Ok(Reply::TaskExport { export })
    }
}
