//! Bad input on the simulator (CI): typed errors, never a panic.

use integration_tests::bad_input::{check_bad_input_everywhere, check_out_of_memory};
use integration_tests::sim;

#[test]
fn every_entry_point_refuses_bad_input() {
    check_bad_input_everywhere(&sim());
}

#[test]
fn out_of_memory_is_an_error_and_earlier_buffers_survive() {
    // More than any machine's address space can hold.
    check_out_of_memory(&sim(), usize::MAX / 8);
}
