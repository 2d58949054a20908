//! A stdio server between its spawn and its hand-over. A server that may write in the
//! workspace (by the person's grant, or because nothing confines it) is watched while it
//! starts; whichever way the start ends, its process group is stopped or dead before the watch
//! is read (and before a call's own watch settles), and what changed is named. Inside a call
//! the call's watch then sorts the change; outside any call (an unconfined server listing its
//! tools) nothing is in scope, so it is undone here. Either way the server is refused: it may
//! change the workspace only while its tool runs. Dropped unfinished (the start was
//! cancelled), it kills the group.

use std::sync::Arc;

use super::connection::ConnectError;
use super::jail::{Jail, Place, StartWatch};
use crate::hooks::ignore_list::IntentIgnore;
use crate::sandbox::{SandboxError, Watch};

/// The watch of a start, taken before the spawn.
pub(super) struct StartingWatch {
    watch: Option<Watch>,
    /// Outside any call: the ignore list what changed is sorted with (nothing is in scope).
    outside_call: Option<IntentIgnore>,
}

impl StartingWatch {
    /// Snapshots the workspace if the start of `place` is watched. Outside a call the files
    /// it could change out of reach of the undo are kept too (the protected ones, what the
    /// repository's git configuration names), as before an unconfined command.
    pub(super) async fn before_spawn(place: &Place) -> Result<StartingWatch, ConnectError> {
        let failed = |e: &dyn std::fmt::Display| ConnectError::Config(e.to_string());
        let outside_call = match place.start_watch() {
            StartWatch::No => {
                return Ok(StartingWatch {
                    watch: None,
                    outside_call: None,
                })
            }
            StartWatch::InCall => None,
            StartWatch::OutsideCall => {
                let root = place.root.clone();
                let ignore = tokio::task::spawn_blocking(move || IntentIgnore::load(&root))
                    .await
                    .map_err(|e| failed(&e))?
                    .map_err(|e| failed(&e))?;
                Some(ignore)
            }
        };
        let keep = outside_call
            .as_ref()
            .map(|i| i.git_named().map(str::to_string).collect())
            .unwrap_or_default();
        let watch = Watch::start(&place.root, &place.confinement, keep)
            .await
            .map_err(|e| failed(&e))?;
        Ok(StartingWatch {
            watch: Some(watch),
            outside_call,
        })
    }

    /// The server was spawned as `jail`.
    pub(super) fn spawned(self, jail: Arc<Jail>) -> Starting {
        Starting {
            jail,
            watch: self.watch,
            outside_call: self.outside_call,
        }
    }
}

pub(super) struct Starting {
    jail: Arc<Jail>,
    watch: Option<Watch>,
    outside_call: Option<IntentIgnore>,
}

impl Starting {
    /// The start failed: the group is stopped (or killed) and killed, and the error names
    /// what changed in the workspace meanwhile.
    pub(super) async fn failed(mut self, e: ConnectError) -> ConnectError {
        let Some(watch) = self.watch.take() else {
            self.jail.kill();
            return e;
        };
        let _ = self.jail.freeze().await;
        self.jail.kill();
        match self.changes(watch).await {
            Ok(None) => e,
            Ok(Some(changed)) if self.outside_call.is_some() => ConnectError::Confinement(format!(
                "{e}; it changed the workspace while starting outside any call, where nothing is in scope: {changed}"
            )),
            Ok(Some(changed)) => ConnectError::Confinement(format!(
                "{e}; files in the workspace changed while it was starting ({changed})"
            )),
            Err(why) => ConnectError::Confinement(format!(
                "{e}; what it changed in the workspace while starting could not be found ({why})"
            )),
        }
    }

    /// The start succeeded: a watched server is stopped, and refused if it changed anything.
    pub(super) async fn succeeded(mut self) -> Result<(), ConnectError> {
        let Some(watch) = self.watch.take() else {
            return Ok(());
        };
        if let Err(why) = self.jail.freeze().await {
            self.jail.kill();
            return Err(ConnectError::Confinement(why));
        }
        let changed = match self.changes(watch).await {
            Ok(changed) => changed,
            Err(why) => {
                self.jail.kill();
                return Err(ConnectError::Confinement(why.to_string()));
            }
        };
        let Some(changed) = changed else {
            return Ok(());
        };
        self.jail.kill();
        Err(ConnectError::Confinement(if self.outside_call.is_some() {
            format!("it changed the workspace while starting outside any call, where nothing is in scope: {changed}; it was stopped, and a server that may write in the workspace may do so only while its tool runs")
        } else {
            format!("files in the workspace changed while it was starting ({changed}), and a server allowed to write may do so only while its tool runs; it was stopped, and the call's change detection sorts those changes")
        }))
    }

    /// What changed in the workspace since the watch began (`None`: nothing): named (not
    /// sorted: another writer may have made it), and outside a call undone, each with what
    /// became of it.
    async fn changes(&self, watch: Watch) -> Result<Option<String>, SandboxError> {
        let Some(ignore) = &self.outside_call else {
            let changed = watch
                .changed_paths(&self.jail.sandbox, &self.jail.confinement)
                .await?;
            return Ok((!changed.is_empty()).then(|| changed.join(", ")));
        };
        let nothing = |_: &str| false;
        let rules = self.jail.rules(&nothing, ignore, Vec::new());
        let found = watch.settle(&self.jail.sandbox, &rules).await?;
        let mut said = Vec::new();
        if !found.changes.out_of_scope.is_empty() {
            said.push(crate::changes::described(&found.changes.out_of_scope, &found.restored).list);
        }
        if !found.unseen.is_empty() {
            let unseen: Vec<_> = found
                .unseen
                .iter()
                .map(|p| crate::changes::shown(p))
                .collect();
            said.push(format!(
                "what it changed in {} is unknown (Mandate cannot read it)",
                unseen.join(", ")
            ));
        }
        Ok((!said.is_empty()).then(|| said.join("; ")))
    }
}

impl Drop for Starting {
    fn drop(&mut self) {
        if self.watch.is_some() {
            self.jail.kill();
        }
    }
}
