//! Errors are values: every failure the library can meet has a variant with a message that
//! names the problem. Nothing in the library panics on user input.

use cudarc::driver::{DriverError, sys::cudaError_enum as Cu};

/// Result alias of the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything the library can fail with; each message names the problem.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The NVIDIA driver library (libcuda) could not be loaded.
    #[error(
        "no CUDA driver: libcuda could not be loaded (install the NVIDIA driver, or run on a \
         machine with a GPU)"
    )]
    NoDriver,
    /// The driver is there but found no GPU.
    #[error("the CUDA driver found no GPU")]
    NoDevice,
    /// A device ordinal past the devices present.
    #[error("device ordinal {ordinal} is out of range: {count} CUDA device(s) present")]
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
    /// A kernel failed to launch or faulted while running.
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
    /// A bad argument (lengths, ranges, a buffer of another backend, an operator a type
    /// lacks, ...); the message says which.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The ranks of a multi-GPU job could not exchange what they must (a rank gone, a
    /// communicator error, or ranks that made different calls); the message says which.
    #[error("multi-GPU exchange failed: {0}")]
    Collective(String),
    /// A fault of a kernel on the CPU simulator (naming kernel, block and thread).
    #[error("{0}")]
    Sim(kernels::gpu::sim::SimError),
}

impl Error {
    /// Wrap a driver error met while doing `op`, keeping out-of-memory distinct.
    pub(crate) fn driver(op: &'static str, bytes: usize) -> impl FnOnce(DriverError) -> Error {
        move |e| match e.0 {
            Cu::CUDA_ERROR_OUT_OF_MEMORY => Error::OutOfMemory { bytes },
            _ => Error::Driver { op, source: e },
        }
    }

    pub(crate) fn wrong_backend() -> Error {
        Error::InvalidArgument(
            "a buffer from one backend (CUDA or simulator) was passed to a context of the other"
                .into(),
        )
    }

    pub(crate) fn launch(kernel: &str) -> impl FnOnce(DriverError) -> Error + '_ {
        move |source| Error::Launch {
            kernel: kernel.to_string(),
            source,
        }
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
        let l = Error::launch("reduce_sum_f32")(DriverError(Cu::CUDA_ERROR_LAUNCH_FAILED));
        assert!(matches!(l, Error::Launch { kernel, .. } if kernel == "reduce_sum_f32"));
    }
}
