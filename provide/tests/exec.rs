//! Exec mode over real processes: small hooks in `sh`, one process per
//! call; what each verb is asked with, what a bad answer gives, and a
//! hung hook killed with everything it started.

mod common;

use std::time::{Duration, Instant};

use common::{consumer, provisioner, script, secret};
use mesh_provide::error::HookError;
use mesh_provide::hook::{Hook, Mode};
use mesh_sdk::{Class, Held, Name, Provisioner, Served};

const TIMEOUT: Duration = Duration::from_secs(5);

#[tokio::test]
async fn each_verb_runs_the_hook_with_its_name_and_the_request_on_stdin_only() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let body = format!(
        r#"req=$(cat)
printf '%s|%s|%s\n' "$#" "$1" "$req" >> {log}
env >> {log}.env
case "$1" in
  hello) echo '{{"name":"test","secrets":["hook-admin-pw"]}}' ;;
  held) echo '{{"held":[{{"consumer":"forge"}},{{"consumer":"wiki","retired":true}}]}}' ;;
  check) echo '{{"ok":true,"mended":"password set again for hook-admin-pw"}}' ;;
  *) ;;
esac
"#,
        log = log.display()
    );
    let hook = script(dir.path(), "hook.sh", &body);
    // SAFETY of the test: no other test of this binary reads MESH_ variables.
    std::env::set_var("MESH_TEST_SETTING", "not-for-the-hook");
    let p = provisioner(&hook, Mode::Exec, TIMEOUT).await;
    let forge = consumer("forge");
    let name = Name::parse("forge").unwrap();
    assert_eq!(p.ensure(&forge, &secret()).await.unwrap(), Served::AsIs);
    assert_eq!(
        p.check(&forge, &secret()).await.unwrap(),
        Served::mended("password set again for [redacted]"),
        "what the check mended, scrubbed"
    );
    assert_eq!(
        p.held(&common::provider()).await.unwrap(),
        vec![
            Held::active(Name::parse("forge").unwrap()),
            Held::retired(Name::parse("wiki").unwrap())
        ]
    );
    p.retire(&common::provider(), &name).await.unwrap();
    p.re_enable(&common::provider(), &name).await.unwrap();
    p.delete(&common::provider(), &name).await.unwrap();
    // A call made for another instance (conform's rule on instances).
    let other: mesh_sdk::ModuleId = "hook@test-2".parse().unwrap();
    p.held(&other).await.unwrap();
    assert_eq!(
        p.secrets().iter().map(|s| s.expose()).collect::<Vec<_>>(),
        vec!["hook-admin-pw"]
    );

    let calls = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = calls.lines().collect();
    let verbs: Vec<&str> = lines.iter().map(|l| l.split('|').nth(1).unwrap()).collect();
    assert_eq!(
        verbs,
        [
            "hello",
            "ensure",
            "check",
            "held",
            "retire",
            "re-enable",
            "delete",
            "held"
        ]
    );
    for line in &lines {
        assert!(line.starts_with("1|"), "one argument, the verb: {line}");
        let request: serde_json::Value =
            serde_json::from_str(line.splitn(3, '|').nth(2).unwrap()).unwrap();
        assert_eq!(request["v"], 1);
        assert_eq!(
            request["deadline_ms"], 5000,
            "how long the loop waits: {line}"
        );
        let instance = match line == lines.last().unwrap() {
            true => "hook@test-2",
            false => "hook@test-1",
        };
        assert_eq!(request["provider"], instance, "{line}");
        let carries = request.get("secret").is_some();
        let verb = request["verb"].as_str().unwrap();
        assert_eq!(carries, verb == "ensure" || verb == "check", "{line}");
    }
    assert!(lines[1].contains(r#""secret":"minted-s3cret-value""#));
    assert!(lines[1].contains(r#""consumer":{"name":"forge","machine":"app-1""#));
    assert!(lines[4].contains(r#""consumer":"forge""#));
    let env = std::fs::read_to_string(dir.path().join("log.env")).unwrap();
    let mesh: Vec<&str> = env.lines().filter(|l| l.starts_with("MESH_")).collect();
    let timeouts = mesh.iter().filter(|l| **l == "MESH_HOOK_TIMEOUT_MS=5000");
    let instances: Vec<&str> = mesh
        .iter()
        .filter_map(|l| l.strip_prefix("MESH_PROVIDER="))
        .collect();
    assert_eq!(
        mesh.len(),
        2 * verbs.len(),
        "no MESH_ setting reaches the hook but the timeout and the instance: {mesh:?}"
    );
    assert_eq!(
        timeouts.count(),
        verbs.len(),
        "the timeout in every call's environment"
    );
    assert_eq!(
        instances,
        [&["hook@test-1"; 7][..], &["hook@test-2"]].concat(),
        "each call's instance in its environment"
    );
    assert!(!env.contains("minted-s3cret"), "nor the secret");
}

/// The error of one call to a hook whose every verb runs `body`.
async fn error_of(body: &str, timeout: Duration) -> HookError {
    let dir = tempfile::tempdir().unwrap();
    let body = format!("[ \"$1\" = hello ] && exit 0\ncat >/dev/null\n{body}");
    let hook = script(dir.path(), "hook.sh", &body);
    let p = provisioner(&hook, Mode::Exec, timeout).await;
    p.check(&consumer("forge"), &secret()).await.unwrap_err()
}

#[tokio::test]
async fn every_bad_answer_is_a_clear_error_naming_the_hook_and_the_verb() {
    let cases: [(&str, &str, Option<Class>); 7] = [
        (
            "echo 'Traceback (most recent call last):'",
            "check: reply is not JSON (",
            Some(Class::Refused),
        ),
        (
            "echo '[1, 2]'",
            "check: reply is not a JSON object: \"[1, 2]\"",
            Some(Class::Refused),
        ),
        (
            r#"echo '{"ok":false,"class":"bad-password","error":"no"}'; exit 1"#,
            "check: reply has an unknown class \"bad-password\"",
            Some(Class::Refused),
        ),
        (
            "head -c 70000 /dev/zero | tr '\\0' x",
            "check: reply is larger than 65536 bytes",
            Some(Class::Refused),
        ),
        (
            r#"echo '{"id":999,"ok":true}'"#,
            "check: reply carries id 999, the request ",
            Some(Class::Refused),
        ),
        (
            r#"echo '{"ok":"yes"}'"#,
            "check: reply's ok is not true or false",
            Some(Class::Refused),
        ),
        (
            r#"echo '{"unsupported":true}'"#,
            "does not support check",
            Some(Class::Refused),
        ),
    ];
    for (body, expected, class) in cases {
        let error = error_of(body, TIMEOUT).await;
        let text = error.to_string();
        assert!(text.starts_with("hook /"), "{body}: {text}");
        assert!(text.contains(expected), "{body}: {text}");
        assert_eq!(error.class(), class, "{body}: {text}");
    }
}

#[tokio::test]
async fn a_failing_exit_says_the_hooks_message_its_stderr_or_how_it_ended() {
    let cases = [
        (
            r#"echo '{"ok":false,"class":"credentials-rejected","error":"WRONGPASS for minted-s3cret-value"}'; exit 1"#,
            "WRONGPASS for [redacted]",
            Some(Class::CredentialsRejected),
        ),
        (
            "echo 'debug line' >&2; echo '(error) WRONGPASS invalid username-password pair' >&2; exit 1",
            "(error) WRONGPASS invalid username-password pair",
            None,
        ),
        ("exit 3", "check exited with status 3", None),
        ("kill -9 $$", "check was killed by signal 9", None),
    ];
    for (body, expected, class) in cases {
        let error = error_of(body, TIMEOUT).await;
        assert!(
            matches!(error, HookError::Refused { .. }),
            "{body}: {error:?}"
        );
        assert!(error.to_string().ends_with(expected), "{body}: {error}");
        assert_eq!(error.class(), class, "{body}");
    }
}

#[tokio::test]
async fn a_hung_hook_is_killed_with_its_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let body = format!(
        "[ \"$1\" = hello ] && exit 0\nsleep 30 &\necho $! > {}\nwait\n",
        pids.display()
    );
    let hook = script(dir.path(), "hook.sh", &body);
    let p = provisioner(&hook, Mode::Exec, Duration::from_millis(500)).await;
    let started = Instant::now();
    let error = p.check(&consumer("forge"), &secret()).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "bounded by the timeout"
    );
    assert!(
        error.to_string().ends_with("check timed out after 500ms"),
        "{error}"
    );
    assert_eq!(error.class(), Some(Class::Unreachable));
    let child = std::fs::read_to_string(&pids).unwrap();
    let proc = format!("/proc/{}/stat", child.trim());
    let deadline = Instant::now() + Duration::from_secs(5);
    // Killed, then reaped by init (a zombie of another parent is gone soon).
    while std::fs::read_to_string(&proc).is_ok_and(|stat| !stat.contains(") Z")) {
        assert!(Instant::now() < deadline, "the hook's child still runs");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test]
async fn a_hook_that_cannot_be_started_or_refuses_its_hello_is_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.sh");
    let error = Hook::start(common::settings(&missing, Mode::Exec, TIMEOUT))
        .await
        .err()
        .unwrap();
    assert!(
        error.to_string().starts_with(&format!(
            "hook {} hello cannot be started: ",
            missing.display()
        )),
        "{error}"
    );
    let refusing = script(
        dir.path(),
        "refusing.sh",
        r#"echo '{"ok":false,"error":"no config"}'; exit 1"#,
    );
    let error = Hook::start(common::settings(&refusing, Mode::Exec, TIMEOUT))
        .await
        .err()
        .unwrap();
    assert!(
        error.to_string().ends_with("refused its hello: no config"),
        "{error}"
    );
}

#[tokio::test]
async fn a_hook_without_ensure_only_checks_and_one_without_held_cannot_be_listed() {
    let dir = tempfile::tempdir().unwrap();
    let body = r#"cat >/dev/null
case "$1" in
  check) exit 0 ;;
  *) echo '{"unsupported":true}' ;;
esac
"#;
    let hook = script(dir.path(), "hook.sh", body);
    let p = provisioner(&hook, Mode::Exec, TIMEOUT).await;
    p.ensure(&consumer("forge"), &secret()).await.unwrap();
    p.check(&consumer("forge"), &secret()).await.unwrap();
    let held = p.held(&common::provider()).await.unwrap_err();
    assert!(
        held.to_string().ends_with("does not support held"),
        "{held}"
    );
    let retire = p
        .retire(&common::provider(), &Name::parse("forge").unwrap())
        .await
        .unwrap_err();
    assert!(
        retire.to_string().ends_with("does not support retire"),
        "{retire}"
    );
    assert!(p.repairs().is_empty());
}

#[tokio::test]
async fn a_secret_a_reply_announces_is_kept_out_of_its_stderr_and_its_error() {
    let (logs, _guard) = mesh_sdk::testing::LogCapture::start();
    let dir = tempfile::tempdir().unwrap();
    let body = r#"cat >/dev/null
case "$1" in
  hello) echo '{"name":"test","secrets":["old-admin-pw"]}' ;;
  check)
    echo "hook: re-read the admin password: rotated-by-dba-2 (was old-admin-pw)" >&2
    echo '{"ok":false,"error":"admin rotated-by-dba-2 refused","secrets":["rotated-by-dba-2"]}'
    exit 1 ;;
esac
"#;
    let hook = script(dir.path(), "hook.sh", body);
    let p = provisioner(&hook, Mode::Exec, TIMEOUT).await;
    let error = p.check(&consumer("forge"), &secret()).await.unwrap_err();
    assert_eq!(error.to_string(), "admin [redacted] refused");
    let text = logs.text();
    assert!(
        text.contains("hook: re-read the admin password: [redacted] (was [redacted])"),
        "{text}"
    );
    assert!(
        !text.contains("rotated-by-dba-2") && !text.contains("old-admin-pw"),
        "{text}"
    );
    let secrets: Vec<String> = p.secrets().iter().map(|s| s.expose().to_owned()).collect();
    assert!(
        secrets.iter().any(|s| s == "rotated-by-dba-2")
            && secrets.iter().any(|s| s == "old-admin-pw"),
        "the loop redacts both from its events: {secrets:?}"
    );
}

#[tokio::test]
async fn a_hello_reports_the_provider_fault_and_the_next_hello_clears_it() {
    let dir = tempfile::tempdir().unwrap();
    let down = dir.path().join("down");
    std::fs::write(&down, "").unwrap();
    let body = format!(
        r#"cat >/dev/null
case "$1" in
  hello)
    if [ -e {down} ]; then
      echo '{{"secrets":["adm1n-pw"],"fault":{{"class":"credentials-rejected","error":"WRONGPASS for admin adm1n-pw"}}}}'
    else
      echo '{{"secrets":["adm1n-pw"],"fault":null}}'
    fi ;;
  check) echo '{{"ok":true}}' ;;
esac
"#,
        down = down.display()
    );
    let hook = script(dir.path(), "hook.sh", &body);
    let mut settings = common::settings(&hook, Mode::Exec, TIMEOUT);
    // The hello again before every call (exec mode asks it once a pass).
    settings.hello_every = Duration::ZERO;
    let (hook, hello) = Hook::start(settings).await.unwrap();
    let p = mesh_provide::provisioner::HookProvisioner::new(hook, &hello);
    assert_eq!(
        p.fault(),
        Some((
            Class::CredentialsRejected,
            "WRONGPASS for admin [redacted]".to_owned()
        )),
        "scrubbed of the hook's own secret"
    );
    std::fs::remove_file(&down).unwrap();
    p.check(&consumer("forge"), &secret()).await.unwrap();
    assert_eq!(p.fault(), None);
}
