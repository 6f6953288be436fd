//! Serve mode over real processes: a long-running hook in `sh` answering
//! JSON lines by id, many calls in flight and answered out of order, and a
//! hook that babbles, exits or is stuck: the calls in flight fail
//! `refused`, and it is started again, braked.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{consumer, provisioner, script, secret, ID};
use mesh_provide::error::HookError;
use mesh_provide::hook::Mode;
use mesh_sdk::{Class, Provisioner};

const TIMEOUT: Duration = Duration::from_secs(5);

/// A serve hook answering each request with `answer` (a shell case body
/// for the verb in `$verb`, the id in `$id`).
fn serve_hook(dir: &std::path::Path, answer: &str) -> std::path::PathBuf {
    let body = format!(
        r#"while IFS= read -r line; do
  {ID}
  verb=$(printf '%s' "$line" | sed -n 's/.*"verb":"\([a-z-]*\)".*/\1/p')
  case "$verb" in
    hello) printf '{{"id":%s,"name":"test","secrets":["hook-admin-pw"]}}\n' "$id" ;;
    *) {answer} ;;
  esac
done
"#
    );
    script(dir, "serve.sh", &body)
}

#[tokio::test]
async fn many_calls_are_in_flight_at_once_and_each_gets_its_own_answer() {
    let dir = tempfile::tempdir().unwrap();
    // Each request answered by a subshell after a delay of its own: out of order.
    let answer = r#"( sleep "0.$(( (id * 7) % 5 ))"
      case "$line" in
        *'"name":"bad-'*) printf '{"id":%s,"ok":false,"class":"credentials-rejected","error":"WRONGPASS"}\n' "$id" ;;
        *) printf '{"id":%s,"ok":true}\n' "$id" ;;
      esac ) &"#;
    let hook = serve_hook(dir.path(), answer);
    let p = Arc::new(provisioner(&hook, Mode::Serve, TIMEOUT).await);
    let started = Instant::now();
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..40 {
        let p = Arc::clone(&p);
        calls.spawn(async move {
            let name = match i % 4 {
                0 => format!("bad-{i}"),
                _ => format!("good-{i}"),
            };
            let result = p.check(&consumer(&name), &secret()).await;
            (name, result)
        });
    }
    let mut failed = 0;
    while let Some(joined) = calls.join_next().await {
        let (name, result) = joined.unwrap();
        match result {
            Ok(()) => assert!(name.starts_with("good-"), "{name}"),
            Err(error) => {
                assert!(name.starts_with("bad-"), "{name}: {error}");
                assert_eq!(error.to_string(), "WRONGPASS");
                assert_eq!(error.class(), Some(Class::CredentialsRejected));
                failed += 1;
            }
        }
    }
    assert_eq!(failed, 10);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "16 in flight at once, not one after another: {:?}",
        started.elapsed()
    );
    assert_eq!(p.secrets()[0].expose(), "hook-admin-pw", "from the hello");
}

/// Calls `check` until it no longer fails with `HookError::Down`, at most `within`.
async fn check_once_up(
    p: &mesh_provide::provisioner::HookProvisioner,
    within: Duration,
) -> Result<(), HookError> {
    let deadline = Instant::now() + within;
    loop {
        match p.check(&consumer("forge"), &secret()).await {
            Err(HookError::Down { .. }) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => return other,
        }
    }
}

#[tokio::test]
async fn a_hook_that_babbles_or_exits_is_started_again_after_a_brake() {
    let cases = [
        (
            r#"echo 'not a reply'"#,
            "wrote a line that is no reply: reply is not JSON (",
        ),
        (
            r#"echo '{"ok":true}'"#,
            "wrote a line that is no reply: reply has no id",
        ),
        (
            r#"echo '{"id":123456,"ok":true}'"#,
            "reply carries id 123456, which no request in flight has",
        ),
        (
            "head -c 70000 /dev/zero | tr '\\0' x; echo",
            "wrote a line larger than 65536 bytes",
        ),
        (
            "exit 4",
            "the hook exited with status 4, with the call in flight",
        ),
    ];
    for (answer, why) in cases {
        let dir = tempfile::tempdir().unwrap();
        let flag = dir.path().join("answered-badly");
        // Bad once; the process started again answers well.
        let answer = format!(
            r#"if [ -e {flag} ]; then printf '{{"id":%s,"ok":true}}\n' "$id"; else touch {flag}; {answer}; fi"#,
            flag = flag.display()
        );
        let hook = serve_hook(dir.path(), &answer);
        let p = provisioner(&hook, Mode::Serve, TIMEOUT).await;
        let first = p.hook().pid().await.unwrap();
        let error = p.check(&consumer("forge"), &secret()).await.unwrap_err();
        assert!(
            matches!(error, HookError::Lost { .. }),
            "{answer}: {error:?}"
        );
        assert!(error.to_string().contains(why), "{answer}: {error}");
        assert_eq!(error.class(), Some(Class::Refused));
        // At once: down, braked for a second.
        let down = p.check(&consumer("forge"), &secret()).await.unwrap_err();
        assert!(
            down.to_string().contains("is down (")
                && down.to_string().ends_with("it is started again in 1s"),
            "{down}"
        );
        let went = Instant::now();
        check_once_up(&p, Duration::from_secs(5)).await.unwrap();
        assert!(
            went.elapsed() >= Duration::from_millis(800),
            "braked: {:?}",
            went.elapsed()
        );
        let second = p.hook().pid().await.unwrap();
        assert_ne!(first, second, "{answer}: a new process");
        assert!(
            !std::path::Path::new(&format!("/proc/{first}/cmdline")).exists()
                || std::fs::read_to_string(format!("/proc/{first}/stat"))
                    .is_ok_and(|s| s.contains(") Z")),
            "{answer}: the first process is gone"
        );
    }
}

#[tokio::test]
async fn a_reply_to_a_known_call_that_is_bad_fails_that_call_only() {
    let dir = tempfile::tempdir().unwrap();
    let answer = r#"printf '{"id":%s,"ok":false,"class":"no-such-class"}\n' "$id""#;
    let hook = serve_hook(dir.path(), answer);
    let p = provisioner(&hook, Mode::Serve, TIMEOUT).await;
    let pid = p.hook().pid().await;
    for _ in 0..3 {
        let error = p.check(&consumer("forge"), &secret()).await.unwrap_err();
        assert!(
            error.to_string().ends_with("check: reply has an unknown class \"no-such-class\" (credentials-rejected, unreachable, secret-unreadable or refused)"),
            "{error}"
        );
    }
    assert_eq!(p.hook().pid().await, pid, "not restarted");
}

#[tokio::test]
async fn a_call_unanswered_past_twice_the_timeout_makes_the_hook_stuck_and_killed() {
    let dir = tempfile::tempdir().unwrap();
    let flag = dir.path().join("hung");
    let answer = format!(
        r#"if [ -e {flag} ]; then printf '{{"id":%s,"ok":true}}\n' "$id"; else touch {flag}; fi"#,
        flag = flag.display()
    );
    let hook = serve_hook(dir.path(), &answer);
    let p = provisioner(&hook, Mode::Serve, Duration::from_millis(300)).await;
    let first = p.hook().pid().await.unwrap();
    let error = p.check(&consumer("forge"), &secret()).await.unwrap_err();
    assert!(
        error.to_string().ends_with("check timed out after 300ms"),
        "{error}"
    );
    // Still running until twice the timeout; then killed.
    let deadline = Instant::now() + Duration::from_secs(5);
    while std::fs::read_to_string(format!("/proc/{first}/stat")).is_ok_and(|s| !s.contains(") Z")) {
        assert!(Instant::now() < deadline, "the stuck hook still runs");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    check_once_up(&p, Duration::from_secs(5)).await.unwrap();
    assert_ne!(p.hook().pid().await.unwrap(), first);
}
