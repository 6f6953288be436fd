//! Plain types, no I/O: the declaration, the events received and the rows
//! the store keeps, and the pure reduction of a round of events to what the
//! store must apply.

pub mod consumers;
pub mod declaration;
pub mod history;
pub mod received;
pub mod recoveries;
pub mod reduce;
pub mod row;
pub mod text;

pub use declaration::{Declaration, DeclarationError, ParsedDeclaration};
pub use received::Received;
pub use row::{
    AckRow, AliveRow, ControllerRecord, FailingRow, GrantRow, GrantsReadRow, Instance, InstanceRow,
    NoteRow, RepairRow, RetiredRow,
};
