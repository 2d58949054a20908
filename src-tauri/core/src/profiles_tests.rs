use super::*;
use crate::protocol::{ApprovalPolicy, ProviderKind, SettingsUpdate};
use crate::secrets::MemoryStore;

fn profile(id: &str, base_url: &str) -> ProviderProfile {
    ProviderProfile {
        id: id.into(),
        name: id.to_uppercase(),
        provider: ProviderKind::Openai,
        preset: "custom".into(),
        base_url: base_url.into(),
        model: "m".into(),
        key_origin: None,
    }
}

fn update(profile: Option<&str>, name: Option<&str>, base_url: &str) -> SettingsUpdate {
    SettingsUpdate {
        provider: ProviderKind::Openai,
        preset: "openrouter".into(),
        base_url: base_url.into(),
        model: "anthropic/claude-sonnet-4.5".into(),
        custom_instructions: String::new(),
        approval: ApprovalPolicy::default(),
        editor: "auto".into(),
        budget: None,
        context: None,
        code_search: None,
        profile: profile.map(str::to_string),
        profile_name: name.map(str::to_string),
        default_profile: None,
        mode_profiles: None,
        notifications: None,
    }
}

#[test]
fn an_origin_is_scheme_host_and_port() {
    assert_eq!(
        origin("https://api.openai.com/v1").as_deref(),
        Some("https://api.openai.com")
    );
    assert_eq!(
        origin("https://api.openai.com:443/v1/").as_deref(),
        Some("https://api.openai.com")
    );
    assert_eq!(
        origin("http://127.0.0.1:8080/v1").as_deref(),
        Some("http://127.0.0.1:8080")
    );
    assert_ne!(
        origin("http://127.0.0.1:8080"),
        origin("http://127.0.0.1:8081")
    );
    assert_ne!(origin("http://api.x.com"), origin("https://api.x.com"));
    assert_eq!(origin("not a url"), None);
    assert_eq!(origin("file:///etc/passwd"), None);
}

#[test]
fn a_key_goes_only_to_the_origin_it_was_given_for_until_the_person_moves_it() {
    let store = MemoryStore::default();
    let mut a = profile("a", "http://127.0.0.1:8001/v1");
    let given = set_key(&store, &a, &Secret::new("sk-A")).expect("set");
    a.key_origin = Some(given.clone());
    assert_eq!(
        lookup_key(&store, &a)
            .key
            .map(|k| k.expose().to_string())
            .as_deref(),
        Some("sk-A")
    );
    // Another profile on the same server does not get it.
    let b = profile("b", "http://127.0.0.1:8001/v1");
    assert!(lookup_key(&store, &b).key.is_none());
    // The profile points elsewhere: no key there; the old origin is named.
    a.base_url = "http://127.0.0.1:8002/v1".into();
    let found = lookup_key(&store, &a);
    assert!(found.key.is_none());
    assert_eq!(found.elsewhere.as_deref(), Some(given.as_str()));
    assert!(held_back(&a, &given).contains("http://127.0.0.1:8002"));
    // Same host, another scheme is another origin too.
    let mut tls = a.clone();
    tls.base_url = "https://127.0.0.1:8001/v1".into();
    assert!(lookup_key(&store, &tls).key.is_none());
    // The person lets it go: it is kept for the new origin only.
    let moved = move_key(&store, &a).expect("moved");
    assert_eq!(moved, "http://127.0.0.1:8002");
    a.key_origin = Some(moved);
    assert!(lookup_key(&store, &a).key.is_some());
    a.base_url = "http://127.0.0.1:8001/v1".into();
    assert!(
        lookup_key(&store, &a).key.is_none(),
        "no longer kept for the old origin"
    );
    clear_keys(&store, &a).expect("clear");
    a.base_url = "http://127.0.0.1:8002/v1".into();
    assert!(lookup_key(&store, &a).key.is_none());
}

#[test]
fn settings_from_before_profiles_become_the_default_profile_and_keep_their_key() {
    let mut legacy = Settings {
        provider: ProviderKind::Anthropic,
        preset: "anthropic".into(),
        base_url: "https://api.anthropic.com".into(),
        model: "claude-sonnet-4-5".into(),
        ..Settings::default()
    };
    normalize(&mut legacy);
    assert_eq!(legacy.profiles.len(), 1);
    let default = default_profile(&legacy);
    assert_eq!(
        (default.id.as_str(), default.name.as_str()),
        (DEFAULT_ID, "Anthropic")
    );
    assert_eq!(default.base_url, "https://api.anthropic.com");
    // The key kept for the wire format moves to the default profile, once.
    let store = MemoryStore::default();
    store
        .set(
            &api_key_name(ProviderKind::Anthropic),
            &Secret::new("sk-ant"),
        )
        .expect("legacy key");
    let other = ProviderProfile {
        provider: ProviderKind::Anthropic,
        ..profile("other", "https://api.anthropic.com")
    };
    assert!(
        lookup_key(&store, &other).key.is_none(),
        "only the default profile inherits it"
    );
    assert_eq!(
        lookup_key(&store, &default)
            .key
            .map(|k| k.expose().to_string())
            .as_deref(),
        Some("sk-ant")
    );
    assert!(store
        .get(&api_key_name(ProviderKind::Anthropic))
        .expect("get")
        .is_none());
    assert!(lookup_key(&store, &default).key.is_some());
    // Pointed elsewhere before its first use (by the page, or by hand), the key from before
    // profiles stays with the server it was used for.
    let store = MemoryStore::default();
    store
        .set(
            &api_key_name(ProviderKind::Anthropic),
            &Secret::new("sk-ant-2"),
        )
        .expect("legacy key");
    let mut moved = default.clone();
    moved.base_url = "https://collector.example/v1".into();
    let found = lookup_key(&store, &moved);
    assert!(found.key.is_none(), "not sent to the new server");
    assert_eq!(
        found.elsewhere.as_deref(),
        Some("https://api.anthropic.com")
    );
    assert!(
        lookup_key(&store, &default).key.is_some(),
        "still there for its own server"
    );
    // A settings file read again keeps its profiles as they are.
    let text = serde_json::to_string(&legacy).expect("json");
    let mut again: Settings = serde_json::from_str(&text).expect("read");
    normalize(&mut again);
    assert_eq!(again, legacy);
}

#[test]
fn profiles_are_added_named_and_chosen_through_settings() {
    let mut s = Settings::default();
    normalize(&mut s);
    let s = s
        .with_update(update(
            Some("openrouter"),
            Some("OpenRouter"),
            "https://openrouter.ai/api/v1",
        ))
        .expect("new profile");
    assert_eq!(s.profiles.len(), 2);
    assert_eq!(s.default_profile, DEFAULT_ID, "the default stays");
    assert_eq!(
        s.base_url, "https://api.openai.com/v1",
        "the mirror is the default's"
    );
    let p = find(&s, Some("openrouter")).expect("found");
    assert_eq!(p.model, "anthropic/claude-sonnet-4.5");
    // Make it the default.
    let mut choose = update(Some("openrouter"), None, "https://openrouter.ai/api/v1");
    choose.default_profile = Some("openrouter".into());
    let s = s.with_update(choose).expect("default");
    assert_eq!(s.base_url, "https://openrouter.ai/api/v1");
    for (bad, said) in [
        (
            update(Some("Bad Id"), Some("x"), "http://127.0.0.1:1/v1"),
            "profile id",
        ),
        (
            update(Some("new"), None, "http://127.0.0.1:1/v1"),
            "needs a name",
        ),
        (
            update(Some("dup"), Some("openrouter"), "http://127.0.0.1:1/v1"),
            "same name",
        ),
    ] {
        let e = s.with_update(bad).expect_err("refused").to_string();
        assert!(e.contains(said), "{e}");
    }
    let mut nowhere = update(None, None, "http://127.0.0.1:1/v1");
    nowhere.default_profile = Some("gone".into());
    assert!(s.with_update(nowhere).is_err());
    assert_eq!(id_from_name("My Ollama (GPU)"), "my-ollama-gpu");
    assert_eq!(id_from_name("!!!"), "profile");
}

#[test]
fn editing_a_profiles_server_never_carries_its_key_along() {
    let mut s = Settings::default();
    normalize(&mut s);
    s.profiles[0].key_origin = Some("https://api.openai.com".into());
    let s = s
        .with_update(update(None, None, "http://127.0.0.1:9999/v1"))
        .expect("edited");
    assert_eq!(
        s.profiles[0].key_origin.as_deref(),
        Some("https://api.openai.com")
    );
}

#[test]
fn a_mode_names_a_profile_that_exists_and_loses_it_when_the_profile_goes() {
    let mut s = Settings::default();
    normalize(&mut s);
    let s = s
        .with_update(update(
            Some("local"),
            Some("Local"),
            "http://127.0.0.1:11434/v1",
        ))
        .expect("new profile");
    let by_mode = |pairs: &[(&str, &str)]| {
        let mut u = update(Some("local"), None, "http://127.0.0.1:11434/v1");
        u.mode_profiles = Some(
            pairs
                .iter()
                .map(|(m, p)| (m.to_string(), p.to_string()))
                .collect(),
        );
        u
    };
    let s = s
        .with_update(by_mode(&[
            ("architect", "local"),
            ("docs-writer", DEFAULT_ID),
        ]))
        .expect("modes on profiles");
    assert_eq!(
        s.mode_profiles.get("architect").map(String::as_str),
        Some("local")
    );
    // An update that does not name them keeps them.
    let kept = s
        .with_update(update(Some("local"), None, "http://127.0.0.1:11434/v1"))
        .expect("kept");
    assert_eq!(kept.mode_profiles, s.mode_profiles);
    for (bad, said) in [
        (by_mode(&[("architect", "nowhere")]), "does not exist"),
        (by_mode(&[("../x", "local")]), "not a mode's slug"),
        (by_mode(&[("", "local")]), "not a mode's slug"),
    ] {
        let e = s.with_update(bad).expect_err("refused").to_string();
        assert!(e.contains(said), "{e}");
    }
    // The profile deleted: its modes run on the task's profile again.
    let mut gone = s.clone();
    gone.profiles.retain(|p| p.id != "local");
    normalize(&mut gone);
    assert_eq!(gone.mode_profiles.get("architect"), None);
    assert_eq!(
        gone.mode_profiles.get("docs-writer").map(String::as_str),
        Some(DEFAULT_ID)
    );
}
