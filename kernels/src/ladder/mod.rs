//! The seeds' reduction ladder: teaching and benchmark variants, kept apart from the
//! production path (`crate::reduce`).

/// PTX entry points of the ladder, for the host's kernel registry.
pub const KERNEL_NAMES: &[&str] = &[];
