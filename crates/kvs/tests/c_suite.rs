//! The C suite (tests/c/*.c) and the sample program (examples/sample.c), compiled with the
//! system's C compiler against include/ and libcerberus_kvs.so, run against a device this
//! test starts: over the native wire and over NVMe/TCP.

#[path = "shared/wire.rs"]
mod wire;

use cerberus_device::DeviceHandle;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use wire::{host_secret, start, Wire, HOSTNQN, SUBNQN};

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The directory holding libcerberus_kvs.so: cargo builds the cdylib beside this test's
/// executable (target/<profile>/deps) when it builds the library for the test.
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    let deps = exe.parent().expect("deps dir").to_path_buf();
    for dir in [
        deps.clone(),
        deps.parent().map(Path::to_path_buf).unwrap_or_default(),
    ] {
        if dir.join("libcerberus_kvs.so").exists() {
            return dir;
        }
    }
    panic!("libcerberus_kvs.so is not beside {}", exe.display());
}

/// Compiles `sources` into `out` with `compiler`; panics with its output on failure.
fn compile(compiler: &str, extra: &[&str], sources: &[PathBuf], out: &Path) {
    let lib = lib_dir();
    let status = Command::new(compiler)
        .args(extra)
        .arg("-Wall")
        .arg("-Werror")
        .arg("-I")
        .arg(crate_dir().join("include"))
        .arg("-I")
        .arg(crate_dir().join("tests/c"))
        .args(sources)
        .arg("-o")
        .arg(out)
        .arg("-L")
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-lcerberus_kvs", "-lpthread"])
        .output()
        .expect("run the C compiler");
    assert!(
        status.status.success(),
        "{compiler} failed:\n{}",
        String::from_utf8_lossy(&status.stderr)
    );
}

/// The suite and the sample, compiled once for every test of this binary.
fn programs() -> (&'static Path, &'static Path) {
    static BUILT: OnceLock<(tempfile::TempDir, PathBuf, PathBuf)> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let c = crate_dir().join("tests/c");
        let suite = dir.path().join("suite");
        let sources: Vec<PathBuf> = [
            "suite.c",
            "suite_kvp.c",
            "suite_iter.c",
            "suite_async.c",
            "suite_tenant.c",
        ]
        .iter()
        .map(|f| c.join(f))
        .collect();
        compile("cc", &["-std=gnu11", "-Wextra"], &sources, &suite);
        let sample = dir.path().join("sample");
        compile(
            "cc",
            &["-std=c11"],
            &[crate_dir().join("examples/sample.c")],
            &sample,
        );
        (dir, suite, sample)
    });
    (&built.1, &built.2)
}

/// The URI of `dev` on `wire`.
fn uri(dev: &DeviceHandle, wire: Wire) -> String {
    match wire {
        Wire::Native => dev.local_addr().to_string(),
        Wire::Nvme => format!(
            "nvme-tcp://{}?hostnqn={HOSTNQN}&subnqn={SUBNQN}",
            dev.nvme_addr().expect("NVMe/TCP on")
        ),
    }
}

/// Runs `program` against a new device on `wire`; its stdout.
fn run(program: &Path, wire: Wire) -> String {
    run_at(program, wire, |dev| uri(dev, wire))
}

/// Runs `program` with the URI `uri_of` gives for a new device on `wire`; its stdout.
fn run_at(program: &Path, wire: Wire, uri_of: impl Fn(&DeviceHandle) -> String) -> String {
    let data = tempfile::tempdir().expect("tempdir");
    let secrets = tempfile::tempdir().expect("tempdir");
    let dev = start(data.path(), wire, 4 << 20);
    let uri = uri_of(&dev);
    let addr = match wire {
        Wire::Native => dev.local_addr().to_string(),
        Wire::Nvme => dev.nvme_addr().expect("nvme").to_string(),
    };
    let mut cmd = Command::new(program);
    cmd.arg(&uri)
        .env_clear()
        .env("CERBERUS_ADMIN_SECRET", dev.admin_secret())
        .env("CERBERUS_KVS_SECRETS", secrets.path())
        .env(
            "KVS_SUITE_SECRETS",
            cerberus_kvs::secrets_dir(secrets.path(), &addr),
        );
    if wire == Wire::Nvme {
        cmd.env("CERBERUS_DHCHAP_SECRET", host_secret());
    }
    let out = cmd.output().expect("run the C program");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{} over {wire:?} failed ({}):\n{stdout}\n{}",
        program.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn suite(wire: Wire) {
    let out = run(programs().0, wire);
    assert!(!out.contains("FAILED"), "{out}");
    let last = out.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("all ") && last.ends_with(" checks passed"),
        "{out}"
    );
    println!("{wire:?}: {last}");
}

fn sample(wire: Wire) {
    let out = run(programs().1, wire);
    assert!(out.contains("retrieved key0003: value of key0003"), "{out}");
    assert!(out.contains("after delete, key0003 exists: 0"), "{out}");
    assert!(out.contains("iterated 10 keys"), "{out}");
}

#[test]
fn c_suite_over_the_native_wire() {
    suite(Wire::Native);
}

#[test]
fn c_suite_over_nvme_tcp() {
    suite(Wire::Nvme);
}

#[test]
fn sample_program_over_the_native_wire() {
    sample(Wire::Native);
}

#[test]
fn sample_program_over_nvme_tcp() {
    sample(Wire::Nvme);
}

/// The headers compile as C++ too (the kit's programs are C++), with the sample.
#[test]
fn headers_compile_as_cpp() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("sample_cpp");
    compile(
        "c++",
        &["-x", "c++"],
        &[crate_dir().join("examples/sample.c")],
        &out,
    );
}

/// The README's five lines of C compile, and run against a device.
#[test]
fn readme_snippet_runs() {
    let readme = std::fs::read_to_string(crate_dir().join("../../README.md")).expect("README");
    let start = readme.find("```c\n").expect("a C block in the README") + 5;
    let len = readme[start..].find("```").expect("its end");
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("demo.c");
    // The device this test starts listens on a port of its own: the URI is argv[1].
    let snippet = &readme[start..start + len];
    assert!(snippet.contains("\"127.0.0.1:9420\""), "{snippet}");
    let body = snippet.replace("\"127.0.0.1:9420\"", "argv[1]");
    let program = format!(
        "#include \"kvs_api.h\"\nint main(int argc, char **argv) {{\n  (void)argc;\n{body}\n  \
         return kvs_close_device(dev);\n}}\n"
    );
    std::fs::write(&src, program).expect("write demo.c");
    let exe = dir.path().join("demo");
    compile("cc", &["-std=c11"], &[src], &exe);
    let out = run_at(&exe, Wire::Native, |dev| dev.local_addr().to_string());
    assert!(out.is_empty(), "{out}");
}
