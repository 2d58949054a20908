//! 1. The pre-hook's decision: 1k intents of 10 globs each, 50k files, writes and commands.

use std::path::Path;
use std::time::{Duration, Instant};

use mandate_core::hooks::command_policy::CommandPolicy;
use mandate_core::hooks::ignore_list::IntentIgnore;
use mandate_core::hooks::{
    Action, CommandAction, HookContext, HookEngine, TaskGovernance, WriteAction,
};
use mandate_core::orchestration::intents::IntentStore;
use mandate_core::protocol::{ApprovalPolicy, ToolKind};
use mandate_core::workspace::Workspace;

use super::{data, percentile, time, us, Row};

pub fn prehook(root: &Path) -> Vec<Row> {
    let dir = data::cached(root, "hooks", "v1", data::hooks_workspace);
    let ws = Workspace::new(&dir).expect("workspace");
    let intents = IntentStore::new(ws.root()).snapshot();
    assert_eq!(intents.doc.intents.len(), 1000, "{:?}", intents.error);
    let policy = CommandPolicy::builtin();
    let ignore = IntentIgnore::load(ws.root()).expect("ignore");
    let engine = HookEngine::standard();
    let body = b"pub fn f() {}\n".to_vec();
    let hash = mandate_core::fsutil::sha256_hex(&body);
    let mut read_hashes = std::collections::HashMap::new();
    for k in 0..1000 {
        for j in 0..50 {
            read_hashes.insert(format!("mod{k:04}/file{j:02}.rs"), hash.clone());
        }
    }
    let commands = [
        "cargo test -p parser",
        "ls -la src",
        "git status && git diff",
        "rm -rf target",
        "grep -rn TODO src | head -20",
        "npm install left-pad",
        "cat Cargo.toml",
    ];
    let mut rng = data::Rng::new(5);
    let mut cases = Vec::new();
    for _ in 0..50_000 {
        let i = rng.below(1000);
        let k = if rng.below(2) == 0 {
            i
        } else {
            rng.below(1000)
        };
        let path = format!("mod{k:04}/file{:02}.rs", rng.below(50));
        cases.push((
            i,
            path,
            rng.below(10) < 3,
            commands[rng.below(commands.len())],
        ));
    }
    let approval = ApprovalPolicy {
        ask_before_writes: false,
        ask_before_safe_commands: false,
        switch_modes_without_asking: false,
    };
    let root_path = ws.resolve(".").expect("root");
    let mut task = TaskGovernance {
        task_id: "bench".into(),
        read_hashes,
        ..Default::default()
    };
    // `fresh`: every command line is one the policy has not judged before (it keeps those it
    // has, as a task runs the same few lines again and again).
    let mut run = |resolve: bool, fresh: bool| {
        let mut times = Vec::with_capacity(cases.len());
        let mut allowed = 0usize;
        for (n, (i, path, is_command, cmd)) in cases.iter().enumerate() {
            let command = if fresh {
                format!("{cmd} n{n}")
            } else {
                cmd.to_string()
            };
            task.selected_intent = Some(format!("INT-{i:04}"));
            let t = Instant::now();
            let (kind, action) = if *is_command {
                (
                    ToolKind::Command,
                    Action::Command(CommandAction {
                        command,
                        cwd: root_path.clone(),
                        timeout: Duration::from_secs(1),
                        granted: Default::default(),
                        background: false,
                    }),
                )
            } else {
                let resolved = if resolve {
                    ws.resolve(path).expect("resolve")
                } else {
                    mandate_core::workspace::ResolvedPath {
                        abs: ws.root().join(path),
                        rel: path.clone(),
                    }
                };
                (
                    ToolKind::Mutate,
                    Action::Write(WriteAction {
                        path: resolved,
                        old: Some(body.clone()),
                        new_content: String::new(),
                        intent_id: format!("INT-{i:04}"),
                        mutation_class: mandate_core::protocol::MutationClass::IntentEvolution,
                    }),
                )
            };
            let cx = HookContext {
                workspace: &ws,
                intents: &intents,
                task: &task,
                approval,
                policy: &policy,
                ignore: &ignore,
                confined: true,
            };
            let decision = engine.pre(&cx, kind, &action);
            times.push(t.elapsed());
            if matches!(decision, mandate_core::hooks::Decision::Allow) {
                allowed += 1;
            }
        }
        times.sort_unstable();
        (times, allowed)
    };
    let _ = run(false, false);
    let (decide, allowed) = run(false, false);
    let (with_resolve, _) = run(true, false);
    let (first_seen, _) = run(false, true);
    let stat_ref = {
        let mut v: Vec<Duration> = cases
            .iter()
            .take(20_000)
            .map(|(_, p, _, _)| time(|| std::fs::metadata(dir.join(p))).0)
            .collect();
        v.sort_unstable();
        percentile(&v, 0.5)
    };
    let p99 = percentile(&decide, 0.99);
    let p99r = percentile(&with_resolve, 0.99);
    println!("    pre-hook: {} decisions, {allowed} allowed; p50 {} p99 {}; with path resolution p50 {} p99 {}", decide.len(), us(percentile(&decide, 0.5)), us(p99), us(percentile(&with_resolve, 0.5)), us(p99r));
    vec![
        Row {
            figure: "pre-hook decision p99 (1k intents x 10 globs, 50k files)",
            measured: us(p99),
            reference: format!("stat(2) p50 {}", us(stat_ref)),
            ratio: format!("p50 {}", us(percentile(&decide, 0.5))),
            budget: "p99 <= 20 us",
            ok: p99 <= Duration::from_micros(20),
        },
        Row {
            figure: "  ... with path resolution (symlink checks)",
            measured: us(p99r),
            reference: String::new(),
            ratio: format!("p50 {}", us(percentile(&with_resolve, 0.5))),
            budget: "(informative)",
            ok: true,
        },
        Row {
            figure: "  ... every command line new to the policy",
            measured: us(percentile(&first_seen, 0.99)),
            reference: String::new(),
            ratio: format!("p50 {}", us(percentile(&first_seen, 0.5))),
            budget: "(informative)",
            ok: true,
        },
    ]
}
