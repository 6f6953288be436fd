//! Why a process of a serve-mode hook went down: the brake's reason and
//! the label of `mesh_hook_restarts_total{cause}`.

/// Why a process of the hook went down (`mesh_hook_restarts_total{cause}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DownCause {
    /// It exited, or closed its stdout.
    Exited,
    /// It wrote a line that is no reply (not JSON, no id, too long, an id
    /// no call has).
    BadLine,
    /// A call went unanswered past twice the timeout: it was killed.
    Stuck,
    /// It was started, but its hello failed.
    Hello,
    /// It could not be started at all.
    Spawn,
    /// Its stdin or stdout broke.
    Pipe,
    /// It was killed from outside its life: ended by a signal (`kill -9`,
    /// the OOM killer), or conform's call cut off mid-way.
    Killed,
}

impl DownCause {
    /// Every cause, for the metric's series.
    pub const ALL: [DownCause; 7] = [
        DownCause::Exited,
        DownCause::BadLine,
        DownCause::Stuck,
        DownCause::Hello,
        DownCause::Spawn,
        DownCause::Pipe,
        DownCause::Killed,
    ];

    /// The cause as the metric's label says it.
    pub fn as_str(self) -> &'static str {
        match self {
            DownCause::Exited => "exited",
            DownCause::BadLine => "bad-line",
            DownCause::Stuck => "stuck",
            DownCause::Hello => "hello",
            DownCause::Spawn => "spawn",
            DownCause::Pipe => "pipe",
            DownCause::Killed => "killed",
        }
    }
}
