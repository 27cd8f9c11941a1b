#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| tiny_harness::fuzz::provider_stream(input));
