//! Every crash the fuzzer found, as a test named after it: the input, fed to the same target.
