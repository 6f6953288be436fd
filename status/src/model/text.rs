//! Untrusted text (every string field of an event, and what is reported of a
//! malformed one) cut to its start before it is stored, logged or
//! printed, so one provider cannot fill the store, a log line or a status
//! listing with a field of megabytes.

use std::borrow::Cow;

use mesh_protocol::event::ContributionsRead;
use mesh_protocol::Event;

/// The most bytes of untrusted text kept, `…` included.
pub const MAX_TEXT_BYTES: usize = 1024;

/// `text` when it fits in [`MAX_TEXT_BYTES`]; else its start, cut on
/// a character boundary and ended with `…`, within the bound.
pub fn cut_text(text: &str) -> Cow<'_, str> {
    if text.len() <= MAX_TEXT_BYTES {
        return Cow::Borrowed(text);
    }
    let mut end = MAX_TEXT_BYTES - '…'.len_utf8();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}…", &text[..end]))
}

fn cut_in_place(text: &mut String) {
    if let Cow::Owned(cut) = cut_text(text) {
        *text = cut;
    }
}

/// Every free-text field of `event` cut to its start (names are
/// bounded already: they are validated).
pub fn cut_event(event: &mut Event) {
    match event {
        Event::Failing(b) => {
            cut_in_place(&mut b.error);
            if let Some(p) = &mut b.provision {
                cut_in_place(p);
            }
        }
        Event::Recovered(b) => {
            if let Some(p) = &mut b.provision {
                cut_in_place(p);
            }
        }
        Event::Retirement(b) => cut_in_place(&mut b.detail),
        Event::Repair(b) => cut_in_place(&mut b.detail),
        Event::Alive(b) => {
            if let Some(fault) = &mut b.fault {
                cut_in_place(&mut fault.error);
            }
            if let Some(read) = b.contributions.take() {
                b.contributions = Some(cut_read(read));
            }
        }
        Event::GrantsRead(b) => {
            cut_in_place(&mut b.file);
            let read = std::mem::replace(&mut b.read, ContributionsRead::good());
            b.read = cut_read(read);
        }
        Event::Unreachable(b) => {
            for t in [&mut b.provision, &mut b.from, &mut b.address, &mut b.error] {
                cut_in_place(t);
            }
        }
        Event::Reachable(b) => {
            for t in [&mut b.provision, &mut b.from, &mut b.address] {
                cut_in_place(t);
            }
        }
        Event::Unchecked(b) => {
            for t in [&mut b.provision, &mut b.from, &mut b.reason] {
                cut_in_place(t);
            }
        }
    }
}

/// What a read refused, capped to
/// [`MAX_REFUSED_LISTED`](mesh_protocol::event::MAX_REFUSED_LISTED) entries and its
/// texts cut.
fn cut_read(read: ContributionsRead) -> ContributionsRead {
    let mut read = read.capped();
    if let Some(problem) = &mut read.problem {
        cut_in_place(problem);
    }
    read.refused
        .iter_mut()
        .for_each(|r| cut_in_place(&mut r.reason));
    read
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_on_a_character_boundary_within_the_bound() {
        for unit in ["a", "é", "✓", "𝄞"] {
            for extra in 0..8 {
                let len = MAX_TEXT_BYTES + extra;
                let text: String = unit.repeat(len.div_ceil(unit.len()));
                let text = &text[..text.floor_char_boundary_compat(len)];
                let cut = cut_text(text);
                assert!(cut.len() <= MAX_TEXT_BYTES, "{unit} {extra}: {}", cut.len());
                if text.len() <= MAX_TEXT_BYTES {
                    assert_eq!(cut, text);
                } else {
                    assert!(cut.ends_with('…'));
                    assert!(text.starts_with(cut.trim_end_matches('…')));
                    assert!(cut.len() > MAX_TEXT_BYTES - 8, "keeps nearly all it may");
                }
            }
        }
        assert_eq!(cut_text("short"), "short");
    }

    /// `str::floor_char_boundary` is not stable yet.
    trait Floor {
        fn floor_char_boundary_compat(&self, at: usize) -> usize;
    }

    impl Floor for String {
        fn floor_char_boundary_compat(&self, mut at: usize) -> usize {
            at = at.min(self.len());
            while !self.is_char_boundary(at) {
                at -= 1;
            }
            at
        }
    }
}
