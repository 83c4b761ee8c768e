//! Network and console capture, response bodies and cookies (SPEC §6). Being built.

use tabwire_protocol::{ErrorCode, OpError, OpResult, TabId, TabOp};

/// Runs a capture or cookie operation on `tab`.
pub async fn run(_tab: TabId, _op: TabOp) -> Result<OpResult, OpError> {
    Err(OpError::new(ErrorCode::Internal, "capture is not built yet"))
}
