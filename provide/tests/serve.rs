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
use mesh_provide::provisioner::HookProvisioner;
use mesh_sdk::testing::LogCapture;
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
            Ok(_) => assert!(name.starts_with("good-"), "{name}"),
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
            other => return other.map(drop),
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
            down.to_string().contains("is down (next start in 1s): "),
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

/// The `/metrics` text of the hook's own metrics.
fn metrics(p: &HookProvisioner) -> String {
    let mut registry = prometheus_client::registry::Registry::with_prefix("mesh");
    p.register_metrics(&mut registry);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    text
}

#[tokio::test]
async fn a_hook_that_dies_at_its_hello_is_braked_not_started_for_every_call() {
    let dir = tempfile::tempdir().unwrap();
    let (starts, moved) = (dir.path().join("starts"), dir.path().join("moved"));
    // Every start is counted; once its password file has "moved", it
    // says why on stderr and exits 2 before its hello.
    let body = format!(
        r#"echo start >> {starts}
if [ -e {moved} ]; then
  echo "mariadb-hook: ENOENT: no such file or directory, open '/etc/mesh/admin-password'" >&2
  exit 2
fi
while IFS= read -r line; do
  {ID}
  case "$line" in
    *'"verb":"hello"'*) printf '{{"id":%s,"name":"test"}}\n' "$id" ;;
    *) printf '{{"id":%s,"ok":true}}\n' "$id" ;;
  esac
done
"#,
        starts = starts.display(),
        moved = moved.display()
    );
    let hook = script(dir.path(), "serve.sh", &body);
    let p = Arc::new(provisioner(&hook, Mode::Serve, TIMEOUT).await);
    p.check(&consumer("forge"), &secret()).await.unwrap();
    std::fs::write(&moved, "").unwrap();
    p.hook().kill().await;
    // Passes of 500 consumers, 16 at once, one every 250 ms for 8 s.
    let begun = Instant::now();
    let (mut calls, mut refused) = (0usize, 0usize);
    let mut last_error = String::new();
    while begun.elapsed() < Duration::from_secs(8) {
        let mut pass = tokio::task::JoinSet::new();
        let gate = Arc::new(tokio::sync::Semaphore::new(16));
        for i in 0..500 {
            let (p, gate) = (Arc::clone(&p), Arc::clone(&gate));
            pass.spawn(async move {
                let _permit = gate.acquire().await.unwrap();
                p.check(&consumer(&format!("c{i}")), &secret()).await
            });
        }
        while let Some(result) = pass.join_next().await {
            calls += 1;
            if let Err(error) = result.unwrap() {
                assert_eq!(error.class(), Some(Class::Refused), "{error}");
                refused += 1;
                last_error = error.to_string();
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let started = std::fs::read_to_string(&starts).unwrap().lines().count();
    // The first start, then after 1 s, 2 s, 4 s of brake: 4 more at most in 8 s.
    assert!(
        (2..=5).contains(&started),
        "{started} starts in 8 s and {calls} calls: braked, one at a time"
    );
    assert_eq!(
        refused, calls,
        "no call runs while the hook is braked or failing its hello"
    );
    assert!(
        last_error.contains("is down (next start in ")
            && last_error.contains("failed its hello")
            && last_error
                .contains("ENOENT: no such file or directory, open '/etc/mesh/admin-password'"),
        "the hook's own reason is quoted: {last_error}"
    );
    let text = metrics(&p);
    assert!(text.contains("mesh_hook_braked 1"), "{text}");
    assert!(text.contains("mesh_hook_up 0"), "{text}");
    let hello_restarts: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("mesh_hook_restarts_total{cause=\"hello\"} "))
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert_eq!(
        usize::try_from(hello_restarts).unwrap(),
        started - 1,
        "each start after the first failed its hello: {text}"
    );
    assert!(
        text.contains("mesh_hook_calls_total{verb=\"check\",outcome=\"down\"}"),
        "{text}"
    );
}

#[tokio::test]
async fn a_rotated_secret_announced_on_its_own_line_is_never_printed() {
    let (logs, _guard) = LogCapture::start();
    let dir = tempfile::tempdir().unwrap();
    // hello announces old-admin-pw; on the first check the hook "re-reads
    // its password file", announces the rotated one on a line of its own,
    // then writes it to stderr and into its reply's error.
    let body = format!(
        r#"while IFS= read -r line; do
  {ID}
  case "$line" in
    *'"verb":"hello"'*) printf '{{"id":%s,"name":"test","secrets":["old-admin-pw"]}}\n' "$id" ;;
    *'"verb":"check"'*)
      printf '{{"secrets":["rotated-by-dba-2"]}}\n'
      echo "hook: admin password is rotated-by-dba-2 (was old-admin-pw)" >&2
      printf '{{"id":%s,"ok":false,"error":"login as admin with rotated-by-dba-2 refused"}}\n' "$id" ;;
    *'"verb":"ensure"'*)
      printf '{{"id":%s,"ok":false,"error":"admin rotated-by-dba-3 refused","secrets":["rotated-by-dba-3"]}}\n' "$id"
      echo "hook: now rotated-by-dba-3" >&2 ;;
  esac
done
"#
    );
    let hook = script(dir.path(), "serve.sh", &body);
    let p = provisioner(&hook, Mode::Serve, TIMEOUT).await;
    let pid = p.hook().pid().await;
    let error = p.check(&consumer("forge"), &secret()).await.unwrap_err();
    assert_eq!(error.to_string(), "login as admin with [redacted] refused");
    let error = p.ensure(&consumer("forge"), &secret()).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "admin [redacted] refused",
        "a reply's own secrets come first"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(p.hook().pid().await, pid, "a secrets line is no babble");
    let text = logs.text();
    assert!(
        text.contains("hook: admin password is [redacted] (was [redacted])"),
        "{text}"
    );
    assert!(text.contains("hook: now [redacted]"), "{text}");
    for secret in ["old-admin-pw", "rotated-by-dba-2", "rotated-by-dba-3"] {
        assert!(!text.contains(secret), "{secret} in {text}");
        assert!(
            p.secrets().iter().any(|s| s.expose() == secret),
            "the loop redacts {secret} from its events too"
        );
    }
}

#[tokio::test]
async fn every_request_carries_its_deadline_and_the_hook_knows_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let answer = r#"deadline=$(printf '%s' "$line" | sed -n 's/.*"deadline_ms":\([0-9]*\).*/\1/p')
      printf '{"id":%s,"ok":false,"error":"deadline %s env %s"}\n' "$id" "$deadline" "$MESH_HOOK_TIMEOUT_MS""#;
    let hook = serve_hook(dir.path(), answer);
    let p = provisioner(&hook, Mode::Serve, Duration::from_millis(4500)).await;
    let error = p.check(&consumer("forge"), &secret()).await.unwrap_err();
    assert_eq!(error.to_string(), "deadline 4500 env 4500");
}

/// `mesh_hook_restarts_total` of `cause`.
fn restarts(p: &HookProvisioner, cause: &str) -> u64 {
    metrics(p)
        .lines()
        .find_map(|l| l.strip_prefix(&format!("mesh_hook_restarts_total{{cause=\"{cause}\"}} ")))
        .and_then(|n| n.parse().ok())
        .unwrap()
}

/// A hook ended by a signal from outside (`kill -9`, the OOM killer) is
/// counted `killed`; one that exits of its own, `exited`.
#[tokio::test]
async fn a_hook_killed_from_outside_is_counted_killed_and_one_that_exits_exited() {
    let dir = tempfile::tempdir().unwrap();
    let hook = serve_hook(dir.path(), r#"printf '{"id":%s,"ok":true}\n' "$id""#);
    let p = provisioner(&hook, Mode::Serve, TIMEOUT).await;
    p.check(&consumer("forge"), &secret()).await.unwrap();
    let pid = p.hook().pid().await.unwrap();
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    // Once mesh-provide has seen it end (and reaped it), the next call
    // finds it down, counts why and starts it again.
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        assert!(
            Instant::now() < deadline,
            "the killed hook was never reaped"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    check_once_up(&p, Duration::from_secs(5)).await.unwrap();
    assert_eq!((restarts(&p, "killed"), restarts(&p, "exited")), (1, 0));

    // One that exits of its own accord.
    let dir = tempfile::tempdir().unwrap();
    let hook = serve_hook(dir.path(), "exit 3");
    let p = provisioner(&hook, Mode::Serve, TIMEOUT).await;
    assert!(p.check(&consumer("forge"), &secret()).await.is_err());
    let _ = check_once_up(&p, Duration::from_secs(3)).await;
    assert_eq!((restarts(&p, "killed"), restarts(&p, "exited")), (0, 1));
}

/// A hook whose hello fails once it is started again (its administrator's
/// password file gone) keeps its hello's class and whole reason: the calls
/// fail with that class, and the provider fault carries the reason
/// uncut, until a hello passes again.
#[tokio::test]
async fn a_failed_hello_keeps_its_class_and_whole_reason_as_the_provider_fault() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken");
    let long = format!(
        "cannot read the administrator password file /etc/mesh/credentials/redis@cache-1/admin-password: No such file or directory; {}; restart the unit after writing it",
        "x".repeat(150)
    );
    let body = format!(
        r#"while IFS= read -r line; do
  {ID}
  case "$line" in
    *'"verb":"hello"'*)
      if [ -e {broken} ]; then
        printf '{{"id":%s,"ok":false,"class":"secret-unreadable","error":"{long}"}}\n' "$id"
      else
        printf '{{"id":%s,"name":"test"}}\n' "$id"
      fi ;;
    *) printf '{{"id":%s,"ok":true}}\n' "$id" ;;
  esac
done
"#,
        broken = broken.display()
    );
    let hook = script(dir.path(), "serve.sh", &body);
    let p = provisioner(&hook, Mode::Serve, TIMEOUT).await;
    p.check(&consumer("forge"), &secret()).await.unwrap();
    assert_eq!(p.fault(), None);

    std::fs::write(&broken, "").unwrap();
    p.hook().kill().await;
    let error = check_once_up(&p, Duration::from_secs(5)).await.unwrap_err();
    assert_eq!(error.class(), Some(Class::SecretUnreadable), "{error}");
    let (class, reason) = p.fault().expect("a provider fault");
    assert_eq!(class, Class::SecretUnreadable);
    assert!(reason.contains(&long), "the whole reason, uncut: {reason}");
    // While braked, each call fails at once with the hello's class.
    let down = p.check(&consumer("forge"), &secret()).await.unwrap_err();
    assert!(matches!(down, HookError::Down { .. }), "{down}");
    assert_eq!(down.class(), Some(Class::SecretUnreadable), "{down}");

    std::fs::remove_file(&broken).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while check_once_up(&p, Duration::from_secs(3)).await.is_err() {
        assert!(Instant::now() < deadline, "never up again");
    }
    assert_eq!(p.fault(), None, "cleared by a hello that passed");
}
