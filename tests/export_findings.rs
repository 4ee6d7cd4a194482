//! The analysis's findings on the Perfetto timeline, checked in the real
//! trace processor; and `-o` naming a pipe writes into it.

mod common;
use common::*;
use std::ffi::OsString;

/// The demo's findings land on a "Findings" track under its GPU, one slice
/// per piece of evidence, the top one first by rank, with hint and savings
/// as args.
#[test]
fn findings_get_their_own_track() {
    let dir = TempDir::new("export-findings");
    let src = dir.file("demo.json", &demo_json());
    let out = dir.path().join("demo.pftrace");
    let args: Vec<OsString> = vec![
        "export".into(),
        src.into(),
        "-q".into(),
        "-o".into(),
        out.clone().into(),
    ];
    gapscope(&args).expect_code(0);
    let rows = perfetto_query(
        &out,
        &[
            "select s.name, count(*) as n, min(s.dur) as min_dur from slice s join track t on s.track_id = t.id \
             where t.name = 'Findings' group by s.name order by s.name",
            "select count(*) as n from slice s join track t on s.track_id = t.id \
             join args a on a.arg_set_id = s.arg_set_id \
             where t.name = 'Findings' and a.key = 'debug.hint' and a.string_value like '%num_workers%'",
        ],
    );
    let names: Vec<&str> = rows[0].iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("#1 ") && n.contains("DataLoader")),
        "{names:?}"
    );
    assert!(names.len() >= 3, "several findings drawn: {names:?}");
    assert!(rows[0].iter().all(|r| r["min_dur"].as_i64().unwrap() >= 0));
    assert!(
        rows[1][0]["n"].as_i64().unwrap() >= 1,
        "the DataLoader hint is an arg"
    );
}

#[test]
fn output_to_a_pipe_stays_a_pipe() {
    use std::io::Read;
    use std::os::unix::fs::FileTypeExt;
    let dir = TempDir::new("export-fifo");
    let src = dir.file("demo.json", &demo_json());
    let fifo = dir.path().join("out.pftrace");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            std::fs::File::open(fifo)
                .unwrap()
                .read_to_end(&mut bytes)
                .unwrap();
            bytes.len()
        })
    };
    let args: Vec<OsString> = vec![
        "export".into(),
        src.into(),
        "-q".into(),
        "-o".into(),
        fifo.clone().into(),
    ];
    gapscope(&args).expect_code(0);
    assert!(reader.join().unwrap() > 1000);
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
}
