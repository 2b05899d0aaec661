//! `cargo run --release -p veil-trace --example read_speed -- FILE [THREADS [MODE]]`: reads every
//! record of a trace (MODE `next_into`, `next_ref` or `for_each`) and prints records per second of
//! wall time and of this process's CPU time. Small enough to run under
//! `valgrind --tool=callgrind`.
use veil_trace::{ReadOptions, Record, TraceReader};

fn cpu_seconds() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: read_speed FILE [THREADS [MODE]]");
    let threads: usize = args.next().map_or(1, |s| s.parse().expect("THREADS is a number"));
    let mode = args.next().unwrap_or_else(|| "next_into".into());
    let (c0, t0) = (cpu_seconds(), std::time::Instant::now());
    let mut r = TraceReader::open_with(&path, ReadOptions { threads, read_ahead: 0 }).unwrap_or_else(|e| fail(e));
    let mut sink = 0u64;
    let n = match mode.as_str() {
        "next_into" => {
            let mut rec = Record::default();
            let mut n = 0u64;
            while r.next_into(&mut rec).unwrap_or_else(|e| fail(e)) {
                sink = sink.wrapping_add(rec.addr ^ rec.data[7] as u64);
                n += 1;
            }
            n
        }
        "next_ref" => {
            let mut n = 0u64;
            while let Some(rec) = r.next_ref().unwrap_or_else(|e| fail(e)) {
                sink = sink.wrapping_add(rec.addr ^ rec.data[7] as u64);
                n += 1;
            }
            n
        }
        "for_each" => r.for_each_record(|rec| sink = sink.wrapping_add(rec.addr ^ rec.data[7] as u64)).unwrap_or_else(|e| fail(e)),
        other => panic!("unknown mode {other}"),
    };
    let (cpu, wall) = (cpu_seconds() - c0, t0.elapsed().as_secs_f64());
    std::hint::black_box(sink);
    println!(
        "{n} records, {mode}, {threads} thread(s): {:.1} M records/s wall, {:.1} M records per CPU second",
        n as f64 / wall / 1e6,
        n as f64 / cpu / 1e6
    );
}

fn fail(e: veil_trace::TraceError) -> ! {
    eprintln!("{e}");
    std::process::exit(1)
}
