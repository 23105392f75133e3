//! Which backend runs the kernels: a leaf module (the runtime and the errors both name it).

/// Which backend runs the kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// A CUDA GPU through the driver.
    Cuda,
    /// The CPU SIMT simulator running the same kernel source.
    Sim,
}
