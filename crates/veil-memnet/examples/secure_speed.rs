//! How long one adversary run (`veil memnet leak`'s unit: a traced program under a secure
//! algorithm, observation on) takes: writes a veil-trace synthetic trace, runs it with each
//! algorithm as `veil memnet leak` does (one CPU per thread, `source_otp`) and prints
//! simulated cycles, packets, a digest of everything the adversary saw, and the wall time.
//! `cargo run --release -p veil-memnet --example secure_speed -- [records] [threads] [alg ...]`
//! (defaults: 4,000 records, 4 threads, minimal constant_rate broadcast; `INSTS=k`: at most k
//! instructions between misses; `SEEDS=a,b,..`: network seeds, the config's default by
//! default; `KEEP=path`: keep the trace there). The digest is FNV-1a over every recorded event and the whole result's
//! JSON (less its wall time), so two builds whose lines are equal saw and reported exactly the
//! same run.

/// FNV-1a over every event the adversary recorded and the result's JSON.
fn digest(o: &veil_memnet::memsys::observed::Observed) -> u64 {
    use veil_memnet::observe::fnv1a_more;
    let h = fnv1a_more(o.obs.fnv1a(), &o.obs.complete_until.to_le_bytes());
    // The wall time and the speed it implies are the only fields that may differ.
    let mut r = o.result.clone();
    r.wall_seconds = 0.0;
    r.cycles_per_second = 0.0;
    fnv1a_more(h, serde_json::to_string(&r).expect("result json").as_bytes())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let records: usize = args.first().map_or(4_000, |s| s.parse().expect("records"));
    let threads: u32 = args.get(1).map_or(4, |s| s.parse().expect("threads"));
    let algs: Vec<String> = if args.len() > 2 { args[2..].to_vec() } else { ["minimal", "constant_rate", "broadcast"].map(String::from).to_vec() };
    let keep = std::env::var("KEEP").ok();
    let path = keep.clone().map_or_else(
        || std::env::temp_dir().join(format!("veil-secure-speed-{records}-{threads}-{}.vtrace", std::process::id())),
        std::path::PathBuf::from,
    );
    let seeds: Vec<u64> = std::env::var("SEEDS").map_or(vec![veil_memnet::memsys::MemSysConfig::default().network.seed], |s| s.split(',').map(|x| x.parse().expect("SEEDS")).collect());
    let p = path.to_str().expect("utf-8 temp path");
    // INSTS=k: at most k instructions between misses (the generator's default is 5,000; a
    // memory-bound program has far fewer).
    let insts: u64 = std::env::var("INSTS").map_or(5_000, |s| s.parse().expect("INSTS"));
    let h = veil_trace::synthetic::header(threads, 64);
    let mut w = veil_trace::TraceWriter::create(p, &h).expect("trace");
    for mut r in veil_trace::synthetic::records(1, records, threads, 64) {
        r.insts %= insts;
        w.write(&r).expect("trace");
    }
    w.finish().expect("trace");
    for alg in &algs {
        for &seed in &seeds {
            let mut c = veil_memnet::memsys::MemSysConfig::default();
            c.workload.kind = "trace".into();
            c.workload.trace = p.into();
            c.cpu.count = threads as usize;
            c.encryption.uarch = "source_otp".into();
            c.injection = alg.clone();
            c.network.seed = seed;
            c.threads = Some(std::env::var("THREADS").map_or(1, |s| s.parse().expect("THREADS")));
            let t = std::time::Instant::now();
            let o = veil_memnet::memsys::observed::memsys_observed(&c).expect("simulation");
            let wall = t.elapsed().as_secs_f64();
            let r = &o.result;
            println!(
                "{alg:>16} seed {seed}: {} cycles, {} packets ({} dummies), {} channel events, digest {:016x}, wall {wall:.2} s",
                r.runtime_cycles,
                o.obs.inj_cycle.len(),
                r.dummies,
                o.obs.ch_cycle.len(),
                digest(&o)
            );
        }
    }
    if keep.is_some() {
        return;
    }
    let _ = std::fs::remove_file(&path);
}
