//! Errors are values: every failure the library can meet has a variant with a message that
//! names the problem. Nothing in the library panics on user input.

use cudarc::driver::{DriverError, sys::cudaError_enum as Cu};

/// Result alias of the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything the library can fail with; each message names the problem.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The NVIDIA driver library (libcuda) could not be loaded (from
    /// [`Context::new`](crate::Context::new); [`device_count`](crate::device_count) counts 0
    /// devices then).
    #[error(
        "no CUDA driver: libcuda could not be loaded (install the NVIDIA driver, or run on a \
         machine with a GPU)"
    )]
    NoDriver,
    /// The driver is there but found no GPU.
    #[error("the CUDA driver found no GPU")]
    NoDevice,
    /// A device ordinal past the devices present.
    #[error(
        "device ordinal {ordinal} is out of range: {} present",
        plural(*count as u64, "CUDA device")
    )]
    BadOrdinal {
        /// The ordinal asked for.
        ordinal: usize,
        /// Devices present.
        count: usize,
    },
    /// A kernel's module could not be loaded (or the kernel is not in its library).
    #[error("loading the embedded PTX failed for kernel `{kernel}`: {source}")]
    PtxLoad {
        /// The kernel.
        kernel: String,
        /// The driver's error.
        source: DriverError,
    },
    /// An allocation failed.
    #[error("out of device memory: could not allocate {bytes} bytes")]
    OutOfMemory {
        /// Bytes asked for.
        bytes: usize,
    },
    /// A kernel trapped or faulted on the GPU (a `panic!` or failed `assert!` in a user's
    /// operator traps; so does an out-of-bounds access), reported by the first call that
    /// synchronised after it. The driver makes such a fault sticky: the device's CUDA context
    /// (shared by every [`Context`](crate::Context) of that device in the process) runs nothing
    /// more, and every later call on that device returns this error again; other devices, and
    /// the simulator, are unaffected. Use the device again from a new process. (On the
    /// simulator the same fault is an [`Error::Sim`] naming the block and thread, and the
    /// context stays usable.)
    #[error(
        "a kernel faulted on the GPU ({source}), reported while {during}: a trap (a panic or \
         failed assertion in an operator) or an illegal memory access. The device's CUDA \
         context is lost for this process: every later call on this GPU fails"
    )]
    KernelFault {
        /// What the library was doing when the driver reported the fault.
        during: String,
        /// The driver's error.
        source: DriverError,
    },
    /// A kernel failed to launch.
    #[error("kernel `{kernel}` failed: {source}")]
    Launch {
        /// The kernel.
        kernel: String,
        /// The driver's error.
        source: DriverError,
    },
    /// Any other driver error.
    #[error("CUDA driver error while {op}: {source}")]
    Driver {
        /// What the library was doing.
        op: &'static str,
        /// The driver's error.
        source: DriverError,
    },
    /// Two lengths that must agree differ (two inputs, keys and values, offsets and outputs,
    /// shards and their data): `what` names both sides, `got` is the one at fault.
    #[error("{what}: expected {expected}, got {got}")]
    LengthMismatch {
        /// The two lengths and the rule that ties them.
        what: String,
        /// The length the rule asks for.
        expected: u64,
        /// The length given.
        got: u64,
    },
    /// An output has no room for the whole result (a scan's output, a reduction's slot, the
    /// run outputs of a reduce by key, the destination of a copy).
    #[error("{what} has room for {}, {needed} needed", plural(*got, "element"))]
    OutputTooSmall {
        /// The output.
        what: String,
        /// Elements the result needs.
        needed: u64,
        /// Elements the output holds.
        got: u64,
    },
    /// A range of elements outside the buffer it is taken from (a view, a copy at an offset).
    #[error(
        "{what}: range {start}..{end} is outside a buffer of {}",
        plural(*len, "element")
    )]
    OutOfRange {
        /// What asked for the range.
        what: String,
        /// First element of the range.
        start: u64,
        /// One past its last element.
        end: u64,
        /// Elements in the buffer.
        len: u64,
    },
    /// A segment whose device offsets are bad (found by the kernel's check): the first such
    /// segment, what is wrong, and its offsets and the input length when they were read back.
    #[error("{}", bad_segment_message(*segment, *fault, *offsets, *input_len))]
    BadSegment {
        /// The lowest bad segment.
        segment: u64,
        /// What is wrong with it.
        fault: SegmentFault,
        /// Its begin and end offsets, when read back (`None` for a check taken later).
        offsets: Option<(u64, u64)>,
        /// The input's length, when known.
        input_len: Option<u64>,
    },
    /// Histogram bins that cannot be: none, or an empty (or NaN) range.
    #[error("{call}: {reason}")]
    BadBins {
        /// The call.
        call: &'static str,
        /// What is wrong with its bins.
        reason: String,
    },
    /// An operation an element type lacks (a bitwise reduction of floats, a product of
    /// 16-bit floats, ...).
    #[error("{op} of {dtype} is not supported: {reason}")]
    Unsupported {
        /// The operation.
        op: String,
        /// The element type.
        dtype: &'static str,
        /// Why, and what to call instead if anything.
        reason: &'static str,
    },
    /// A call the context's backend lacks (something CUDA-only on the simulator).
    #[error("{op} is not available on {}", backend_name(*backend))]
    UnsupportedOnBackend {
        /// The call.
        op: &'static str,
        /// The backend that lacks it.
        backend: crate::backend::BackendKind,
    },
    /// A call that reads a result back to the host, made while the stream is captured into a
    /// CUDA graph.
    #[error("{call} cannot be captured into a CUDA graph: {hint}")]
    NotCapturable {
        /// The call.
        call: &'static str,
        /// Why, and what to capture instead.
        hint: &'static str,
    },
    /// A buffer of one backend (CUDA or simulator) passed to a context of the other.
    #[error("a buffer from one backend (CUDA or simulator) was passed to a context of the other")]
    WrongBackend,
    /// Memory of another device (or another CUDA context) passed to a context.
    #[error("{memory} was passed to a context on {context}")]
    WrongDevice {
        /// The memory and whose it is.
        memory: String,
        /// The context's device.
        context: String,
    },
    /// A raw device pointer that cannot be a view (null, misaligned, not device memory, or
    /// running past its allocation).
    #[error("raw pointer {addr:#x}: {reason}")]
    BadPointer {
        /// The address given.
        addr: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// A size past a limit of the library (the address space, a launch's grid, a 32-bit
    /// count or index).
    #[error("{what}: {size} is over the limit of {limit}")]
    TooLarge {
        /// What is too large, and the limit's origin.
        what: String,
        /// The size asked for.
        size: u64,
        /// The largest size that works.
        limit: u64,
    },
    /// A bad configuration of a multi-GPU job (no contexts, a GPU twice, a rank past the
    /// job, a buffer of another handle, a call that needs every rank, an NCCL id's text).
    #[error("multi-GPU: {0}")]
    MultiGpu(String),
    /// An error of the caller's own code passed through a library call (a closure given to
    /// [`Context::time_ms`](crate::Context::time_ms), a tool or extension on top of the
    /// library); made with [`Error::external`].
    #[error("{0}")]
    External(Box<dyn std::error::Error + Send + Sync>),
    /// A state the library should never reach (a bug); the message says which.
    #[error("internal error (a bug of gpu-reduce): {0}")]
    Internal(String),
    /// The ranks of a multi-GPU job could not exchange what they must (a rank gone, a
    /// communicator error, or ranks that made different calls); the message says which.
    #[error("multi-GPU exchange failed: {0}")]
    Collective(String),
    /// A fault of a kernel on the CPU simulator (naming kernel, block and thread).
    #[error("{0}")]
    Sim(kernels::gpu::sim::SimError),
}

impl Error {
    /// Wrap a driver error met while doing `op`, keeping out-of-memory and kernel faults
    /// distinct.
    pub(crate) fn driver(op: &'static str, bytes: usize) -> impl FnOnce(DriverError) -> Error {
        move |e| match e.0 {
            Cu::CUDA_ERROR_OUT_OF_MEMORY => Error::OutOfMemory { bytes },
            _ if is_kernel_fault(e.0) => Error::KernelFault {
                during: op.to_string(),
                source: e,
            },
            _ => Error::Driver { op, source: e },
        }
    }

    /// An [`Error::External`] from the caller's own error (or message).
    pub fn external(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Error {
        Error::External(e.into())
    }

    pub(crate) fn launch(kernel: &str) -> impl FnOnce(DriverError) -> Error + '_ {
        move |source| {
            if is_kernel_fault(source.0) {
                // An earlier kernel's fault, reported at this launch.
                Error::KernelFault {
                    during: format!("launching kernel `{kernel}`"),
                    source,
                }
            } else {
                Error::Launch {
                    kernel: kernel.to_string(),
                    source,
                }
            }
        }
    }
}

/// The driver's codes for a fault of a running kernel: sticky, the context is lost.
pub(crate) fn is_kernel_fault(e: Cu) -> bool {
    matches!(
        e,
        Cu::CUDA_ERROR_LAUNCH_FAILED
            | Cu::CUDA_ERROR_ILLEGAL_INSTRUCTION
            | Cu::CUDA_ERROR_ILLEGAL_ADDRESS
            | Cu::CUDA_ERROR_MISALIGNED_ADDRESS
            | Cu::CUDA_ERROR_INVALID_ADDRESS_SPACE
            | Cu::CUDA_ERROR_INVALID_PC
            | Cu::CUDA_ERROR_HARDWARE_STACK_ERROR
            | Cu::CUDA_ERROR_ASSERT
            | Cu::CUDA_ERROR_LAUNCH_TIMEOUT
    )
}

/// What is wrong with a segment's device offsets ([`Error::BadSegment`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SegmentFault {
    /// Its end offset is before its begin offset.
    Decreasing,
    /// Its offsets reach past the end of the input.
    PastEnd,
}

fn bad_segment_message(
    s: u64,
    fault: SegmentFault,
    offsets: Option<(u64, u64)>,
    n: Option<u64>,
) -> String {
    match (fault, offsets) {
        (SegmentFault::Decreasing, Some((b, e))) => {
            format!(
                "segment {s}: end offset {e} is before its begin offset {b} (decreasing offsets)"
            )
        }
        (SegmentFault::Decreasing, None) => {
            format!("segment {s}: its end offset is before its begin offset (decreasing offsets)")
        }
        (SegmentFault::PastEnd, Some((b, e))) => {
            let n = n.map_or(String::new(), |n| format!(" ({})", plural(n, "element")));
            format!("segment {s}: offsets {b}..{e} reach past the end of the input{n}")
        }
        (SegmentFault::PastEnd, None) => {
            format!("segment {s}: its offsets reach past the end of the input")
        }
    }
}

/// `n` and `noun`, the noun in the plural (an added `s`) unless `n` is 1: "1 element",
/// "0 elements", "3 segments". For every count a message prints with its noun.
pub(crate) fn plural(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn backend_name(b: crate::backend::BackendKind) -> &'static str {
    match b {
        crate::backend::BackendKind::Cuda => "the CUDA backend",
        crate::backend::BackendKind::Sim => "the simulator",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_problem() {
        assert!(Error::NoDriver.to_string().contains("no CUDA driver"));
        let e = Error::BadOrdinal {
            ordinal: 3,
            count: 1,
        };
        assert!(e.to_string().contains("ordinal 3") && e.to_string().contains("1 CUDA device"));
        let oom = Error::driver("allocating", 1 << 40)(DriverError(Cu::CUDA_ERROR_OUT_OF_MEMORY));
        assert!(matches!(oom, Error::OutOfMemory { bytes } if bytes == 1 << 40));
        let other = Error::driver("copying", 8)(DriverError(Cu::CUDA_ERROR_INVALID_VALUE));
        assert!(matches!(other, Error::Driver { op: "copying", .. }));
        // (Formatting a DriverError asks the driver for its text, so only the kernel is checked.)
        let l = Error::launch("reduce_sum_f32")(DriverError(Cu::CUDA_ERROR_INVALID_VALUE));
        assert!(matches!(l, Error::Launch { kernel, .. } if kernel == "reduce_sum_f32"));
        // A trap or illegal access, wherever the driver reports it: the sticky fault.
        for code in [
            Cu::CUDA_ERROR_LAUNCH_FAILED,
            Cu::CUDA_ERROR_ILLEGAL_ADDRESS,
            Cu::CUDA_ERROR_ILLEGAL_INSTRUCTION,
        ] {
            let at_copy = Error::driver("copying to the host", 8)(DriverError(code));
            assert!(
                matches!(&at_copy, Error::KernelFault { during, .. } if during == "copying to the host")
            );
            let at_launch = Error::launch("scan_sum_f32")(DriverError(code));
            assert!(
                matches!(&at_launch, Error::KernelFault { during, .. } if during.contains("scan_sum_f32"))
            );
        }
    }

    #[test]
    fn counts_of_one_are_singular() {
        assert_eq!(plural(1, "segment"), "1 segment");
        assert_eq!(plural(0, "segment"), "0 segments");
        assert_eq!(plural(2, "CUDA device"), "2 CUDA devices");
        let one = |e: Error, singular: &str, plural: &str| {
            let m = e.to_string();
            assert!(m.contains(singular) && !m.contains(plural), "{m}");
        };
        one(
            Error::BadOrdinal {
                ordinal: 1,
                count: 1,
            },
            "1 CUDA device present",
            "devices",
        );
        one(
            Error::OutputTooSmall {
                what: "the scan output".into(),
                needed: 2,
                got: 1,
            },
            "room for 1 element,",
            "elements",
        );
        one(
            Error::OutOfRange {
                what: "a view".into(),
                start: 0,
                end: 2,
                len: 1,
            },
            "buffer of 1 element",
            "elements",
        );
        one(
            Error::BadSegment {
                segment: 0,
                fault: SegmentFault::PastEnd,
                offsets: Some((0, 2)),
                input_len: Some(1),
            },
            "(1 element)",
            "elements",
        );
    }

    /// The message of `e` holds every one of `parts`.
    fn names(e: Error, parts: &[&str]) {
        let m = e.to_string();
        for p in parts {
            assert!(m.contains(p), "message `{m}` lacks `{p}`");
        }
    }

    #[test]
    fn argument_errors_name_the_argument_and_the_numbers() {
        names(
            Error::LengthMismatch {
                what: "reduce by key: the keys (one per value)".into(),
                expected: 7,
                got: 5,
            },
            &["keys (one per value)", "expected 7", "got 5"],
        );
        names(
            Error::OutputTooSmall {
                what: "the scan output".into(),
                needed: 10,
                got: 9,
            },
            &["the scan output", "room for 9 elements", "10 needed"],
        );
        names(
            Error::OutOfRange {
                what: "a view".into(),
                start: 2,
                end: 9,
                len: 5,
            },
            &["a view", "range 2..9", "buffer of 5 elements"],
        );
        names(
            Error::BadSegment {
                segment: 3,
                fault: SegmentFault::Decreasing,
                offsets: Some((8, 4)),
                input_len: Some(100),
            },
            &["segment 3", "end offset 4", "begin offset 8", "decreasing"],
        );
        names(
            Error::BadSegment {
                segment: 4,
                fault: SegmentFault::PastEnd,
                offsets: Some((90, 120)),
                input_len: Some(100),
            },
            &[
                "segment 4",
                "90..120",
                "past the end of the input",
                "100 elements",
            ],
        );
        names(
            Error::BadSegment {
                segment: 5,
                fault: SegmentFault::Decreasing,
                offsets: None,
                input_len: None,
            },
            &["segment 5", "end offset is before its begin offset"],
        );
        names(
            Error::BadSegment {
                segment: 6,
                fault: SegmentFault::PastEnd,
                offsets: None,
                input_len: None,
            },
            &["segment 6", "past the end of the input"],
        );
        names(
            Error::Unsupported {
                op: "the xor reduction".into(),
                dtype: "f32",
                reason: "the reduction is defined for integers",
            },
            &["xor reduction", "f32", "not supported", "integers"],
        );
        names(
            Error::UnsupportedOnBackend {
                op: "NCCL (it needs a CUDA context)",
                backend: crate::backend::BackendKind::Sim,
            },
            &["NCCL", "not available on the simulator"],
        );
        names(
            Error::NotCapturable {
                call: "reduce_by_key",
                hint: "use reduce_by_key_into",
            },
            &[
                "reduce_by_key",
                "captured into a CUDA graph",
                "reduce_by_key_into",
            ],
        );
        names(Error::WrongBackend, &["backend", "CUDA or simulator"]);
        names(
            Error::WrongDevice {
                memory: "memory of CUDA device 1".into(),
                context: "CUDA device 0".into(),
            },
            &["memory of CUDA device 1", "context on CUDA device 0"],
        );
        names(
            Error::BadPointer {
                addr: 0x1003,
                reason: "not aligned to 4 bytes".into(),
            },
            &["0x1003", "not aligned to 4 bytes"],
        );
        names(
            Error::TooLarge {
                what: "the elements of mean_var (a 32-bit count)".into(),
                size: 1 << 33,
                limit: u32::MAX as u64,
            },
            &["mean_var", "8589934592", "limit of 4294967295"],
        );
        names(
            Error::MultiGpu("rank 3 of a job of 2 ranks".into()),
            &["multi-GPU", "rank 3 of a job of 2 ranks"],
        );
        names(
            Error::external("cannot write sweep.json: permission denied"),
            &["cannot write sweep.json: permission denied"],
        );
        names(
            Error::Internal("the simulator loads no PTX".into()),
            &["internal", "the simulator loads no PTX"],
        );
    }
}
