use super::*;
use chrono::TimeZone;

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn backup_names_are_lumberjacks() {
    let t = Utc.with_ymd_and_hms(2026, 11, 21, 10, 0, 0).unwrap();
    assert_eq!(
        backup_name(Path::new("/var/log/kapi/audit.log"), t),
        PathBuf::from("/var/log/kapi/audit-2026-11-21T10-00-00.000.log")
    );
    assert_eq!(
        backup_name(Path::new("audit"), t),
        PathBuf::from("audit-2026-11-21T10-00-00.000")
    );
}

#[test]
fn rotates_past_the_size_and_keeps_max_backups() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("logs/audit.log");
    // A backup far older than any max age, and one that is not ours.
    std::fs::create_dir_all(dir.path().join("logs")).unwrap();
    std::fs::write(
        dir.path().join("logs/audit-2001-01-01T00-00-00.000.log"),
        "old\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("logs/other.log"), "x\n").unwrap();

    let mut f = RotatingFile::open(&path, 20, 2, Some(Duration::from_secs(86400))).unwrap();
    let line = b"0123456789\n"; // 11 bytes: one fits in 20, two do not
    for _ in 0..2 {
        f.write_line(line).unwrap();
        f.flush().unwrap();
        // Backup names carry milliseconds; keep rotations apart.
        std::thread::sleep(Duration::from_millis(5));
    }
    let after_one = names(&dir.path().join("logs"));
    assert_eq!(after_one.len(), 3, "{after_one:?}");
    assert!(
        !after_one.contains(&"audit-2001-01-01T00-00-00.000.log".to_string()),
        "the backup older than max age is removed: {after_one:?}"
    );
    for _ in 0..3 {
        f.write_line(line).unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
    f.flush().unwrap();
    let all = names(&dir.path().join("logs"));
    let backups: Vec<_> = all
        .iter()
        .filter(|n| n.starts_with("audit-") && n.ends_with(".log"))
        .collect();
    assert_eq!(backups.len(), 2, "max backups: {all:?}");
    assert!(all.contains(&"audit.log".to_string()));
    assert!(all.contains(&"other.log".to_string()));
    for b in &backups {
        let stamp = &b["audit-".len()..b.len() - ".log".len()];
        NaiveDateTime::parse_from_str(stamp, BACKUP_TIME_FORMAT).unwrap();
        assert_eq!(
            std::fs::read(dir.path().join("logs").join(b)).unwrap(),
            line
        );
    }
    assert_eq!(std::fs::read(&path).unwrap(), line);
}

#[test]
fn a_line_larger_than_the_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = RotatingFile::open(&dir.path().join("a.log"), 4, 0, None).unwrap();
    let e = f.write_line(b"too long\n").unwrap_err();
    assert_eq!(e.to_string(), "write length 9 exceeds maximum file size 4");
    f.write_line(b"ok\n").unwrap();
}

#[test]
fn an_existing_log_is_appended_to() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    std::fs::write(&path, "first\n").unwrap();
    let mut f = RotatingFile::open(&path, 1024, 0, None).unwrap();
    f.write_line(b"second\n").unwrap();
    f.flush().unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "first\nsecond\n");
}

#[test]
fn an_unwritable_path_fails_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    // A directory cannot be created under a regular file.
    assert!(LogBackend::open(&LogOptions::new(file.join("audit.log"))).is_err());
}
