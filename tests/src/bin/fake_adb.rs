//! `fake-adb`: the scripted stand-in for `adb` that the device backend's end-to-end tests and
//! `bench-mobile` run (see `tabwire_e2e::fake_adb`).

fn main() {
    std::process::exit(tabwire_e2e::fake_adb::main());
}
