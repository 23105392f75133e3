//! Device offsets checked later: [`OffsetCheck`], the calls that make and read one, and the
//! fault a bad segment's check code names.

use kernels::reduce::segmented::BAD_DECREASING;

use crate::error::{Error, Result, SegmentFault};
use crate::runtime::{Context, DeviceBuffer, DeviceView};
// Named by the docs here.
#[cfg(doc)]
use super::Segments;

/// A device flag that segmented reductions over device offsets report bad offsets into when
/// called with [`Segments::check_later`], instead of reading their check back (which blocks).
/// It keeps the lowest bad segment of any launch since it was last taken;
/// [`Context::take_offset_check`] reads it (blocking), clears it and turns it into an error.
/// Made by [`Context::offset_check`]; usable by the context that made it.
#[derive(Debug)]
pub struct OffsetCheck {
    pub(super) flag: DeviceBuffer<u64>,
}

/// The fault of a bad segment from the kernel's (inverted) check code.
pub(super) fn segment_fault(code: u64) -> SegmentFault {
    if code & 1 == BAD_DECREASING {
        SegmentFault::Decreasing
    } else {
        SegmentFault::PastEnd
    }
}

impl Context {
    /// A cleared [`OffsetCheck`] for segmented reductions on this context that should not
    /// block on their offsets' check ([`Segments::check_later`]).
    pub fn offset_check(&self) -> Result<OffsetCheck> {
        Ok(OffsetCheck {
            flag: self.alloc_zeros::<u64>(1)?,
        })
    }

    /// Read `check` (this waits for the work queued before it), clear it, and return the
    /// lowest bad segment any launch reported into it since it was last taken, as
    /// [`Error::BadSegment`] naming the segment and what is wrong; `Ok` when there was
    /// none. The offsets themselves are not read again (they may have changed since).
    pub fn take_offset_check(&self, check: &OffsetCheck) -> Result<()> {
        self.check_owner(DeviceView::from(&check.flag).owner())?;
        let code = self.dtoh(&check.flag)?[0];
        if code == 0 {
            return Ok(());
        }
        self.memset_raw(self.scratch_addr(&check.flag), 8)?;
        let code = !code;
        let s = code >> 1;
        Err(Error::BadSegment {
            segment: s,
            fault: segment_fault(code),
            offsets: None,
            input_len: None,
        })
    }
}
