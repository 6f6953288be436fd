//! A list file re-read on every call, its last good list kept.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::list::ListFile;

/// What one read gave.
#[derive(Debug)]
pub struct Loaded<'a, T> {
    /// The list to work with: this read's, or the last good one.
    pub list: &'a Arc<T>,
    /// Whether this read took the file: false when the last good list is
    /// served because the file could not be read, parsed or taken. A read
    /// that was not fresh must not count towards anything the file's
    /// absence would mean (a consumer withdrawn, say).
    pub fresh: bool,
}

/// What the last read refused: the file as a whole, or entries of it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Refused {
    /// The file could not be read, parsed or taken: the last good list,
    /// if there is one, is served instead.
    pub file: bool,
    /// Entries refused in the list served (each served from its last good
    /// version where there is one).
    pub entries: usize,
}

/// A list file, re-read on every [`LastGood::load`], with the last good
/// list kept.
///
/// What is wrong with the file is logged at ERROR once per change (a file
/// broken for an hour logs one line, not one a read), and at INFO once when
/// it is good again. An unchanged text is not parsed again.
#[derive(Debug)]
pub struct LastGood<T> {
    path: PathBuf,
    last_good: Option<Arc<T>>,
    /// The text `last_good` was parsed from.
    last_text: String,
    /// The entries refused in `last_text`, as said.
    last_refused: Vec<String>,
    /// What is wrong, as of the last read.
    problems: Vec<String>,
    /// Whether the last read could not take the file.
    file_refused: bool,
    /// Why the last read could not take the file, naming it.
    file_problem: Option<String>,
    /// What was logged last; `None` before the first read.
    logged: Option<Vec<String>>,
}

impl<T: ListFile> LastGood<T> {
    /// A reader of the file at `path`.
    pub fn new(path: impl Into<PathBuf>) -> LastGood<T> {
        LastGood {
            path: path.into(),
            last_good: None,
            last_text: String::new(),
            last_refused: Vec::new(),
            problems: Vec::new(),
            file_refused: false,
            file_problem: None,
            logged: None,
        }
    }

    /// The file it reads.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The last good list, if any.
    pub fn last_good(&self) -> Option<&T> {
        self.last_good.as_deref()
    }

    /// What was wrong at the last read: the file as a whole, or each entry
    /// refused. Empty when the file was good.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// Why the last read could not take the file (it names the file; without
    /// the "keeping the last good list" that [`LastGood::problems`] adds);
    /// `None` when it took it, and before the first read.
    pub fn file_problem(&self) -> Option<&str> {
        self.file_problem.as_deref()
    }

    /// What the last read refused (nothing before the first).
    pub fn refused(&self) -> Refused {
        Refused {
            file: self.file_refused,
            entries: self.last_refused.len(),
        }
    }

    /// Reads the file now. `None` only while no good list was ever read.
    pub fn load(&mut self) -> Option<Loaded<'_, T>> {
        let fresh = self.read();
        self.file_refused = !fresh;
        self.log();
        self.last_good.as_ref().map(|list| Loaded { list, fresh })
    }

    /// One read: whether it took the file; `problems` set.
    fn read(&mut self) -> bool {
        self.file_problem = None;
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(source) => {
                let problem = format!(
                    "{} {} cannot be read: {source}",
                    T::KIND,
                    self.path.display()
                );
                self.problems = vec![self.keeping(problem)];
                return false;
            }
        };
        if self.last_good.is_some() && text == self.last_text {
            self.problems.clone_from(&self.last_refused);
            return true;
        }
        let parsed = match T::parse(&self.path, &text) {
            Ok(parsed) => parsed,
            Err(problem) => {
                self.problems = vec![self.keeping(problem)];
                return false;
            }
        };
        let mut list = parsed.list;
        if let Some(good) = &self.last_good {
            if let Some(why) = list.refuses_to_replace(good) {
                let problem = format!("{} {} {why}", T::KIND, self.path.display());
                self.problems = vec![self.keeping(problem)];
                return false;
            }
            list.keep_last_good(good);
        }
        self.last_refused = parsed.refused.iter().map(ToString::to_string).collect();
        self.problems.clone_from(&self.last_refused);
        self.last_good = Some(Arc::new(list));
        self.last_text = text;
        true
    }

    /// `problem`, saying that the last good list is kept when there is one
    /// (and kept as the file's problem as it is).
    fn keeping(&mut self, problem: String) -> String {
        self.file_problem = Some(problem.clone());
        match self.last_good {
            Some(_) => format!("{problem}; keeping the last good list"),
            None => problem,
        }
    }

    /// Logs the problems when they differ from the last ones logged.
    fn log(&mut self) {
        if self.logged.as_ref() == Some(&self.problems) {
            return;
        }
        let path = self.path.display();
        if self.problems.is_empty() {
            if self.logged.is_some() {
                tracing::info!(path = %path, "{} is good again", T::KIND);
            }
        } else {
            for problem in &self.problems {
                tracing::error!(path = %path, problem = %problem, "{} problem", T::KIND);
            }
        }
        self.logged = Some(self.problems.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::list::{EntryError, ParsedList};

    /// A file of lines `key=value`; a line without `=` is refused (and its
    /// last good line kept, by key); `owner: X` must stay the same.
    #[derive(Clone, Debug, PartialEq, Eq)]
    struct Pairs {
        owner: String,
        pairs: Vec<(String, String)>,
        refused_keys: Vec<String>,
    }

    impl ListFile for Pairs {
        const KIND: &'static str = "pairs file";

        fn parse(path: &Path, text: &str) -> Result<ParsedList<Pairs>, String> {
            let mut lines = text.lines();
            let owner = lines
                .next()
                .and_then(|l| l.strip_prefix("owner: "))
                .ok_or_else(|| format!("pairs file {} has no owner line", path.display()))?;
            let (mut pairs, mut refused, mut refused_keys) = (Vec::new(), Vec::new(), Vec::new());
            for (i, line) in lines.enumerate() {
                match line.split_once('=') {
                    Some((k, v)) => pairs.push((k.to_owned(), v.to_owned())),
                    None => {
                        refused_keys.push(line.trim_end_matches('!').to_owned());
                        refused.push(EntryError::at("pairs", i, String::new(), "no =".into()));
                    }
                }
            }
            Ok(ParsedList {
                list: Pairs {
                    owner: owner.to_owned(),
                    pairs,
                    refused_keys,
                },
                refused,
            })
        }

        fn keep_last_good(&mut self, last_good: &Pairs) {
            for key in &self.refused_keys {
                if let Some(pair) = last_good.pairs.iter().find(|(k, _)| k == key) {
                    self.pairs.push(pair.clone());
                }
            }
        }

        fn refuses_to_replace(&self, last_good: &Pairs) -> Option<String> {
            (self.owner != last_good.owner).then(|| format!("names owner {}", self.owner))
        }
    }

    fn pairs(loaded: &Loaded<'_, Pairs>) -> Vec<String> {
        loaded
            .list
            .pairs
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect()
    }

    #[test]
    fn the_last_good_list_is_kept_and_each_change_said_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p");
        let mut file = LastGood::<Pairs>::new(&path);
        // (text or None for no file, fresh, pairs, problems, logged again)
        type Step<'a> = (Option<&'a str>, bool, &'a [&'a str], &'a [&'a str], bool);
        let steps: [Step; 9] = [
            (None, false, &[], &["cannot be read"], true),
            (Some("owner: a\nx=1\ny=2"), true, &["x=1", "y=2"], &[], true),
            (
                Some("owner: a\nx=1\ny=2"),
                true,
                &["x=1", "y=2"],
                &[],
                false,
            ),
            (
                Some("broken"),
                false,
                &["x=1", "y=2"],
                &["no owner line; keeping the last good list"],
                true,
            ),
            (
                Some("broken"),
                false,
                &["x=1", "y=2"],
                &["no owner line"],
                false,
            ),
            (
                Some("owner: a\nx=3\ny!"),
                true,
                &["x=3", "y=2"],
                &["pairs[1]: no ="],
                true,
            ),
            (
                Some("owner: b\nx=4"),
                false,
                &["x=3", "y=2"],
                &["pairs file", "names owner b; keeping"],
                true,
            ),
            (
                None,
                false,
                &["x=3", "y=2"],
                &["cannot be read", "keeping the last good list"],
                true,
            ),
            (Some("owner: a\nz=5"), true, &["z=5"], &[], true),
        ];
        for (i, (text, fresh, want, problems, logged_again)) in steps.into_iter().enumerate() {
            match text {
                Some(text) => std::fs::write(&path, text).unwrap(),
                None => {
                    let _ = std::fs::remove_file(&path);
                }
            }
            let before = file.logged.clone();
            let loaded = file.load();
            match loaded {
                Some(loaded) => {
                    assert_eq!(loaded.fresh, fresh, "step {i}");
                    assert_eq!(pairs(&loaded), want, "step {i}");
                }
                None => assert!(want.is_empty() && !fresh, "step {i}: nothing was ever good"),
            }
            assert_eq!(file.file_problem().is_some(), !fresh, "step {i}");
            if let Some(problem) = file.file_problem() {
                assert!(file.problems()[0].starts_with(problem), "step {i}");
                assert!(!problem.contains("keeping"), "step {i}: {problem}");
            }
            let said = file.problems().join("\n");
            for p in problems {
                assert!(said.contains(p), "step {i}: {said:?} lacks {p:?}");
            }
            if problems.is_empty() {
                assert!(said.is_empty(), "step {i}: {said}");
            }
            assert_eq!(file.logged != before, logged_again, "step {i}");
            // The list served after steps 5 to 7 is the one that refused `y!`.
            let entries = usize::from((5..=7).contains(&i));
            assert_eq!(
                file.refused(),
                Refused {
                    file: !fresh,
                    entries
                },
                "step {i}"
            );
        }
    }
}
