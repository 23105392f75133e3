//! The runtime layer: contexts, device memory, kernel loading and launching on either backend.
//! It knows no algorithm; `reduce` and `scan` are built on it.

mod buffer;
mod context;
pub(crate) mod mapped;
mod module;
mod simbuf;

pub use buffer::{DeviceBuffer, DeviceView, DeviceViewMut};
pub(crate) use context::{Access, Backend};
pub use context::{BackendKind, Context, DeviceInfo, LaunchShape, device_count};
pub use module::{
    EmbeddedEntry, EmbeddedIndex, EmbeddedModule, KernelLibrary, LoadStats, load_stats,
};
