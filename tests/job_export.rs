//! `gapscope export` of a whole job, loaded into the real Perfetto trace
//! processor: every rank on the job's aligned clock, one process group per
//! rank, and flows from the late rank's collective to the ranks that
//! waited for it.

mod common;
use common::*;
use std::ffi::OsString;

#[test]
fn planted_job_timeline_in_the_trace_processor() {
    let tmp = TempDir::new("job-export");
    let dir = tmp.path().join("ranks");
    std::fs::create_dir_all(&dir).unwrap();
    plant_job(
        &dir,
        &["--ranks", "4", "--steps", "2", "--plant", "2:11:1:5:dataloader"],
    );
    let out = tmp.path().join("job.pftrace");
    let stats = tmp.path().join("stats.json");
    let args: Vec<OsString> = vec![
        "export".into(),
        dir.clone().into(),
        "-o".into(),
        out.clone().into(),
        "--stats-json".into(),
        stats.clone().into(),
    ];
    let r = gapscope(&args).expect_code(0);
    assert!(
        r.stderr.contains("4 ranks") && r.stderr.contains("(3 between ranks)"),
        "{}",
        r.stderr
    );
    let c: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    // The process group of a slice's track: its track, or its track's parent
    // (threads and GPU groups hang under the rank's process track).
    let rank_of = |alias: &str| {
        format!(
            "(select p.name from track t left join track g on g.id = t.parent_id \
             join process_track pt on pt.id = coalesce(case when t.parent_id in (select id from process_track) \
             then t.parent_id end, g.parent_id) join process p on p.upid = pt.upid where t.id = {alias}.track_id)"
        )
    };
    let q = perfetto_query(
        &out,
        &[
            "select count(*) as n from slice",
            "select count(*) as n from flow",
            "select count(*) as n from slice where dur < 0",
            "select count(*) as n from stats where severity in ('error', 'data_loss') and value > 0",
            "select name from process where name like 'rank %' order by name",
            &format!(
                "select {} as late, {} as waiter, so.ts as late_ts, si.ts as arrived_ts, si.name as name \
                 from flow f join slice so on f.slice_out = so.id join slice si on f.slice_in = si.id \
                 where si.name like 'rank % arrived%' order by waiter",
                rank_of("so"),
                rank_of("si")
            ),
            "select name, ts, dur from slice where name like 'waiting for rank%' order by ts",
        ],
    );
    assert_eq!(q[0][0]["n"], c["slices"], "slices written vs loaded");
    assert_eq!(q[1][0]["n"], c["flows"], "flows written vs loaded");
    assert_eq!(q[2][0]["n"], 0, "every slice ended");
    assert_eq!(q[3][0]["n"], 0, "no error or data-loss stats");
    let names: Vec<&str> = q[4].iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "rank 0: rank0.pt.trace.json.gz",
            "rank 1: rank1.pt.trace.json.gz",
            "rank 2: rank2.pt.trace.json.gz",
            "rank 3: rank3.pt.trace.json.gz"
        ]
    );
    let flows = &q[5];
    assert_eq!(flows.len(), 3, "{flows:?}");
    let ts = |v: &serde_json::Value| {
        v.as_str()
            .map_or_else(|| v.as_i64().unwrap(), |s| s.parse().unwrap())
    };
    for (f, waiter) in flows.iter().zip([0, 1, 3]) {
        assert_eq!(f["late"], "rank 2: rank2.pt.trace.json.gz", "{f}");
        assert_eq!(
            f["waiter"],
            format!("rank {waiter}: rank{waiter}.pt.trace.json.gz"),
            "{f}"
        );
        assert_eq!(f["name"], "rank 2 arrived: all_to_all #1, step 11");
        // On the aligned clock the waiting rank's transfer starts right when
        // the late rank's kernel does (1 ns later, for the flow's direction).
        assert_eq!(ts(&f["arrived_ts"]) - ts(&f["late_ts"]), 1, "{f}");
    }
    let waits = &q[6];
    assert_eq!(waits.len(), 3);
    for w in waits {
        let d = w["dur"].as_i64().unwrap();
        assert!((d - 5_000_000).abs() <= 50_000, "{w}");
    }
}

#[test]
fn export_of_two_jobs_or_a_chrome_job_says_what_to_do() {
    let tmp = TempDir::new("job-export-bad");
    let a = tmp.path().join("a");
    std::fs::create_dir_all(&a).unwrap();
    plant_job(&a, &["--ranks", "2", "--steps", "1"]);
    let out = tmp.path().join("x.json");
    let r = gapscope([
        "export".as_ref(),
        a.as_os_str(),
        "--format".as_ref(),
        "chrome".as_ref(),
        "-o".as_ref(),
        out.as_os_str(),
    ])
    .expect_code(2);
    assert!(r.stderr.contains("--format perfetto"), "{}", r.stderr);
    let b = tmp.path().join("b");
    std::fs::create_dir_all(&b).unwrap();
    plant_job(&b, &["--ranks", "3", "--steps", "1"]);
    let r = gapscope([
        "export".as_ref(),
        a.as_os_str(),
        b.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ])
    .expect_code(2);
    assert!(
        r.stderr.contains("hold 2 jobs and 0 traces apart"),
        "{}",
        r.stderr
    );
    assert!(!out.exists());
}
