//! The tasks of a workspace in memory: one handle per task, shared by the window's requests
//! and by the runs that start subtasks, so a task is never loaded twice.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::{StoreError, TaskHandle, TaskStore};

#[derive(Default)]
pub struct LiveTasks(Mutex<HashMap<String, Arc<TaskHandle>>>);

impl LiveTasks {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<TaskHandle>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn insert(&self, task: Arc<TaskHandle>) {
        self.lock().insert(task.id.clone(), task);
    }

    pub fn get(&self, id: &str) -> Option<Arc<TaskHandle>> {
        self.lock().get(id).cloned()
    }

    /// The task in memory, or loaded from the history (and kept).
    pub fn get_or_load(
        &self,
        store: &Arc<TaskStore>,
        id: &str,
    ) -> Result<Arc<TaskHandle>, StoreError> {
        let mut tasks = self.lock();
        if let Some(t) = tasks.get(id) {
            return Ok(t.clone());
        }
        let task = TaskHandle::new(store.load(id)?, store.clone());
        tasks.insert(id.to_string(), task.clone());
        Ok(task)
    }

    pub fn remove(&self, id: &str) -> Option<Arc<TaskHandle>> {
        self.lock().remove(id)
    }

    pub fn all(&self) -> Vec<Arc<TaskHandle>> {
        self.lock().values().cloned().collect()
    }
}
