//! Plain types, no I/O: the declaration, module ids, the words providers
//! say and the rows the store keeps, and the pure reduction of a round of
//! words to what the store must apply.

pub mod declaration;
pub mod reduce;
pub mod text;
pub mod word;

pub use declaration::{Declaration, DeclarationError, Parsed};
pub use word::{AliveRow, FailingRow, GrantRow, RepairRow, Word};
