//! What each step of a story expects `mesh-controller status --json` (or
//! `node show --json`) to say: plain checks of the JSON, `Ok` when it holds,
//! else what status says instead, for the person reading the
//! failure.

use mesh_test_support::mesh::{failing as failing_names, unheard as unheard_names};
use serde_json::Value;

/// The sentence status opens with.
pub fn sentence(status: &Value) -> &str {
    status["sentence"].as_str().unwrap_or("(no sentence)")
}

/// All well: nobody failing, every provider heard from, no open repair.
pub fn all_well(status: &Value) -> Result<(), String> {
    let well = status["all_well"] == true
        && failing_names(status).is_empty()
        && unheard_names(status).is_empty()
        && repairs(status).is_empty();
    if well {
        Ok(())
    } else {
        Err(format!("status is not all well: {:?}", sentence(status)))
    }
}

/// Not all well, and exactly `consumers` failing, each with `class`.
pub fn failing(status: &Value, consumers: &[&str], class: &str) -> Result<(), String> {
    let names = failing_names(status);
    let classes: Vec<&str> = rows(status, "failing")
        .iter()
        .map(|row| row["class"].as_str().unwrap_or("?"))
        .collect();
    let holds = status["all_well"] == false
        && sorted(consumers) == names
        && classes.iter().all(|c| *c == class);
    if holds {
        Ok(())
    } else {
        Err(format!(
            "want {consumers:?} failing ({class}); status names {names:?} failing ({}): {:?}",
            classes.join(", "),
            sentence(status)
        ))
    }
}

/// Not all well, exactly `providers` (`module@machine`) not heard from,
/// nobody failing.
pub fn unheard(status: &Value, providers: &[&str]) -> Result<(), String> {
    let names = unheard_names(status);
    if status["all_well"] == false && sorted(providers) == names && failing_names(status).is_empty()
    {
        Ok(())
    } else {
        Err(format!(
            "want {providers:?} not heard from (and nobody failing); status names {names:?}: {:?}",
            sentence(status)
        ))
    }
}

/// Not all well because the controller follows nothing, no provider
/// blamed for its silence, nobody failing.
pub fn controller_silent(status: &Value) -> Result<(), String> {
    let names = unheard_names(status);
    let holds = status["all_well"] == false
        && status["controller"]["following"] == false
        && names.is_empty()
        && failing_names(status).is_empty();
    if holds {
        Ok(())
    } else {
        Err(format!(
            "want the controller following nothing (and no provider blamed); status says \
             following {} and names {names:?} not heard from: {:?}",
            status["controller"]["following"],
            sentence(status)
        ))
    }
}

/// Exactly one open repair fault, `fault`, with `outcome`.
pub fn repair_open(status: &Value, fault: &str, outcome: &str) -> Result<(), String> {
    let open = repairs(status);
    if open == [(fault.to_owned(), outcome.to_owned())] {
        Ok(())
    } else {
        Err(format!(
            "want the repair fault {fault} open ({outcome}); status shows {open:?}: {:?}",
            sentence(status)
        ))
    }
}

/// `reachable` grants checked reachable and exactly `unreachable`
/// (`consumer@machine`) unreachable; all well exactly when none is.
pub fn grants(status: &Value, reachable: u64, unreachable: &[&str]) -> Result<(), String> {
    let counted = status["grants"]["reachable"].as_u64().unwrap_or(0);
    let named: Vec<String> = rows(&status["grants"], "unreachable")
        .iter()
        .map(|g| {
            format!(
                "{}@{}",
                g["consumer"].as_str().unwrap_or("?"),
                g["machine"].as_str().unwrap_or("?")
            )
        })
        .collect();
    let well = status["all_well"] == true;
    if counted == reachable && sorted(unreachable) == named && well == unreachable.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "want {reachable} grant(s) reachable and {unreachable:?} unreachable; status counts \
             {counted} reachable and names {named:?} unreachable: {:?}",
            sentence(status)
        ))
    }
}

/// `text` (what a command printed for a person) opens with `opening`.
pub fn opens_with(text: &str, opening: &str) -> Result<(), String> {
    if text.starts_with(opening) {
        Ok(())
    } else {
        let first = text.lines().next().unwrap_or("");
        Err(format!(
            "want a first line opening {opening:?}; it is {first:?}"
        ))
    }
}

/// The open repair faults: (fault, outcome).
fn repairs(status: &Value) -> Vec<(String, String)> {
    rows(status, "repairs")
        .iter()
        .map(|r| {
            let word = |key: &str| r[key].as_str().unwrap_or("").to_owned();
            (word("fault"), word("outcome"))
        })
        .collect()
}

fn rows<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value[key].as_array().map(Vec::as_slice).unwrap_or_default()
}

fn sorted(names: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn well() -> Value {
        json!({"all_well": true, "sentence": "all well: 3 consumers", "unheard": [],
               "failing": [], "repairs": [], "grants": {"reachable": 0, "unreachable": []}})
    }

    fn wiki_failing() -> Value {
        json!({"all_well": false, "sentence": "not all well: 1 consumer failing", "unheard": [],
               "failing": [{"consumer": "wiki", "class": "secret-unreadable"}], "repairs": []})
    }

    fn db_unheard() -> Value {
        json!({"all_well": false, "sentence": "not all well: 0 consumers failing, 1 provider not heard from",
               "unheard": [{"provider_module": "postgres", "provider_machine": "db-1"}],
               "failing": [], "repairs": []})
    }

    fn controller_away() -> Value {
        json!({"all_well": false,
               "sentence": "not all well: the controller has followed no events since ...",
               "controller": {"following": false}, "unheard": [], "failing": [], "repairs": []})
    }

    fn refused() -> Value {
        let row = |c: &str| json!({"consumer": c, "class": "credentials-rejected"});
        json!({"all_well": false, "sentence": "not all well: 2 consumers failing", "unheard": [],
               "failing": [row("wiki"), row("forge")],
               "repairs": [{"fault": "admin-refused", "outcome": "failed"}]})
    }

    fn unreachable() -> Value {
        json!({"all_well": false, "sentence": "not all well: 0 consumers failing, 1 grant unreachable",
               "unheard": [], "failing": [], "repairs": [],
               "grants": {"reachable": 0, "unreachable": [{"consumer": "forge", "machine": "app-1"}]}})
    }

    #[test]
    fn each_check_holds_of_its_state_and_of_no_other() {
        let states = [
            ("well", well()),
            ("wiki failing", wiki_failing()),
            ("db-1 unheard", db_unheard()),
            ("admin refused", refused()),
            ("forge unreachable", unreachable()),
            ("controller away", controller_away()),
        ];
        type Check = fn(&Value) -> Result<(), String>;
        let checks: [(&str, Check); 6] = [
            ("well", all_well),
            ("wiki failing", |s| {
                failing(s, &["wiki"], "secret-unreadable")
            }),
            ("db-1 unheard", |s| unheard(s, &["postgres@db-1"])),
            ("admin refused", |s| {
                failing(s, &["forge", "wiki"], "credentials-rejected")?;
                repair_open(s, "admin-refused", "failed")
            }),
            ("forge unreachable", |s| grants(s, 0, &["forge@app-1"])),
            ("controller away", controller_silent),
        ];
        for (check_name, check) in checks {
            for (state_name, state) in &states {
                let held = check(state);
                assert_eq!(
                    held.is_ok(),
                    check_name == *state_name,
                    "check {check_name:?} of state {state_name:?}: {held:?}"
                );
            }
        }
    }

    #[test]
    fn a_check_that_does_not_hold_says_what_status_says_instead() {
        let why = failing(&well(), &["wiki"], "secret-unreadable").unwrap_err();
        assert!(why.contains("status names [] failing"), "{why}");
        assert!(why.contains("all well: 3 consumers"), "{why}");
        let why = failing(&wiki_failing(), &["wiki"], "credentials-rejected").unwrap_err();
        assert!(why.contains("(secret-unreadable)"), "{why}");
        let why = all_well(&db_unheard()).unwrap_err();
        assert!(why.contains("1 provider not heard from"), "{why}");
        let why = grants(&well(), 1, &[]).unwrap_err();
        assert!(why.contains("counts 0 reachable"), "{why}");
    }

    #[test]
    fn a_grant_count_is_checked_with_all_well() {
        let mut checked = well();
        checked["grants"]["reachable"] = json!(1);
        assert_eq!(grants(&checked, 1, &[]), Ok(()));
        checked["all_well"] = json!(false);
        assert!(
            grants(&checked, 1, &[]).is_err(),
            "reachable but not all well"
        );
    }

    #[test]
    fn opens_with_names_the_first_line_it_found() {
        assert_eq!(opens_with("all well: 3\n  x", "all well"), Ok(()));
        let why = opens_with("not all well: 1\n  wiki", "all well").unwrap_err();
        assert!(why.contains("\"not all well: 1\""), "{why}");
    }
}
