//! Plugin files as a careless or hostile local user leaves them.

use super::*;
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, Instant};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wink-pf-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn a_fifo_is_refused_at_once_not_read() {
    let dir = scratch("fifo");
    let component = dir.join("p.wasm");
    std::fs::write(&component, b"\0asm").unwrap();
    mkfifo(&dir.join("p.json"));
    let started = Instant::now();
    let err = read_config(&component).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2), "did not block");
    assert!(
        err.to_string().ends_with("p.json: is a FIFO, not a regular file"),
        "{err}"
    );
    mkfifo(&dir.join("q.wasm"));
    let err = read_plugin(&dir.join("q.wasm")).err().unwrap();
    assert!(
        matches!(
            err,
            FileError::File(wink_input::FileError::NotAFile { what: "a FIFO", .. })
        ),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_directory_named_like_a_component_is_refused() {
    let dir = scratch("dir");
    std::fs::create_dir(dir.join("x.wasm")).unwrap();
    let err = read_plugin(&dir.join("x.wasm")).err().unwrap();
    assert!(
        err.to_string()
            .ends_with("x.wasm: is a directory, not a regular file"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_oversized_file_is_refused_before_it_is_read() {
    let dir = scratch("large");
    let path = dir.join("x.wasm");
    // Sparse: 200 MB that take no disk and would take memory if read.
    std::fs::File::create(&path).unwrap().set_len(200 << 20).unwrap();
    let err = read_plugin(&path).err().unwrap();
    assert!(
        matches!(err, FileError::File(wink_input::FileError::TooLarge { size, limit: MAX_COMPONENT_BYTES, .. }) if size == 200 << 20),
        "{err}"
    );
    std::fs::write(dir.join("x.json"), vec![b' '; (MAX_CONFIG_BYTES + 1) as usize]).unwrap();
    assert!(matches!(
        read_config(&path),
        Err(FileError::File(wink_input::FileError::TooLarge { .. }))
    ));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_symlink_is_followed_and_its_target_checked() {
    let dir = scratch("link");
    std::fs::write(dir.join("real.wasm"), b"\0asm-bytes").unwrap();
    std::os::unix::fs::symlink(dir.join("real.wasm"), dir.join("y.wasm")).unwrap();
    assert_eq!(
        read_plugin(&dir.join("y.wasm")).unwrap().component,
        b"\0asm-bytes"
    );
    std::os::unix::fs::symlink(&dir, dir.join("z.wasm")).unwrap();
    assert!(matches!(
        read_plugin(&dir.join("z.wasm")),
        Err(FileError::File(wink_input::FileError::NotAFile {
            what: "a directory",
            ..
        }))
    ));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn names_that_could_forge_logs_or_alias_others_are_refused_escaped() {
    let refused: &[&[u8]] = &[
        b"evil\nERROR forged line.wasm",
        b"esc\x1b[31m.wasm",
        b"\xff\xfe.wasm",
        b"\xff\xfd.wasm",
        b"..wasm",
        b".wasm",
        b"-dash.wasm",
        b"with space.wasm",
    ];
    for raw in refused {
        let path = Path::new("/plugins").join(OsStr::from_bytes(raw));
        let err = plugin_name(&path).unwrap_err().to_string();
        assert!(!err.contains('\n') && !err.contains('\x1b'), "{err:?}");
        assert!(err.contains("not a valid plugin name"), "{err:?}");
    }
    let err = plugin_name(Path::new("/p/\u{ff}\n.wasm"))
        .unwrap_err()
        .to_string();
    assert!(err.starts_with(r#""ÿ\n.wasm""#), "escaped: {err}");
    for (file, name) in [
        ("pod_logger", "pod-logger"),
        ("app-index", "app-index"),
        ("v1", "v1"),
        ("a_b_c", "a-b-c"),
    ] {
        assert_eq!(plugin_name(Path::new(&format!("/p/{file}.wasm"))).unwrap(), name);
        assert_eq!(plugin_name(Path::new(&format!("/p/{file}.json"))).unwrap(), name);
    }
    assert!(plugin_name(Path::new(&format!("/p/{}.wasm", "a".repeat(MAX_NAME_LEN)))).is_ok());
    assert!(plugin_name(Path::new(&format!("/p/{}.wasm", "a".repeat(MAX_NAME_LEN + 1)))).is_err());
}

#[test]
fn names_kubernetes_would_refuse_in_a_webhook_or_lease_name_are_refused_naming_the_file() {
    // Each would make a webhook name (`<plugin>.validate.wink.dev`) the API
    // server refuses: uppercase, a dot (an extra DNS label), a trailing
    // `-` (also a trailing `_`), or a name longer than a DNS label.
    for file in [
        "Pod.wasm",
        "v1.2.wasm",
        "trailing_.wasm",
        "trailing-.wasm",
        "_lead.wasm",
    ] {
        let err = plugin_name(&Path::new("/p").join(file)).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("{file:?}: not a valid plugin name")),
            "{err}"
        );
        assert!(err.contains("each '_' read as '-'"), "{err}");
    }
}

#[test]
fn every_name_ending_in_wasm_is_listed_so_each_gets_its_error() {
    let dir = scratch("list");
    for name in ["b.wasm", "a.wasm", ".wasm", "..wasm", "x.json", "notes.txt"] {
        std::fs::write(dir.join(name), b"").unwrap();
    }
    let names: Vec<String> = component_files(&dir)
        .unwrap()
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["..wasm", ".wasm", "a.wasm", "b.wasm"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_file_of_a_plugin_is_found_under_either_spelling() {
    let dir = scratch("file_of");
    std::fs::write(dir.join("pod_security.wasm"), b"").unwrap();
    std::fs::write(dir.join("app-index.wasm"), b"").unwrap();
    assert_eq!(file_of(&dir, "pod-security"), Some(dir.join("pod_security.wasm")));
    assert_eq!(file_of(&dir, "app-index"), Some(dir.join("app-index.wasm")));
    assert_eq!(file_of(&dir, "pod_security"), None, "a plugin name has no '_'");
    assert_eq!(file_of(&dir, "other"), None);
}
