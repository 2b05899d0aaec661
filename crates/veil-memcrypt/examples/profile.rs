//! Runs the timing model over a trace file, for profiling and timing by hand:
//! `profile PATH|synth|dense [SCHEME] [max_records] [model|reference]` (`synth` (= `runs`) and
//! `dense`: the streams `veil bench memcrypt` writes to its trace files; SCHEME: a cipher
//! (`aes256`, `tdes`, ...), `plain` (unprotected) or `nospec` (AES-256 without speculation or
//! re-ordering), as the benchmark's schemes; `reference`: model only, booking the engines as
//! before the speed work). With `model` it only reads the records
//! into memory and runs the model over them once (what callgrind should see); otherwise it
//! times reading alone, the model alone and both together. `MC_CONFIG='{"reorder": false}'` sets
//! any other config fields (JSON, over the scheme's).

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let mut cfg = veil_memcrypt::Config::default();
    match a.get(2).map(String::as_str) {
        Some("plain") => cfg.encryption = false,
        Some("nospec") => {
            cfg.ct_speculation = false;
            cfg.mac_speculation = false;
            cfg.reorder = false;
        }
        Some(c) => cfg.cipher = c.into(),
        None => {}
    }
    if let Ok(j) = std::env::var("MC_CONFIG") {
        let mut v = serde_json::to_value(&cfg).unwrap();
        let over: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&j).expect("MC_CONFIG: a JSON object");
        for (k, x) in over {
            v[k] = x;
        }
        cfg = serde_json::from_value(v).expect("MC_CONFIG: config fields");
    }
    let max_records = a.get(3).map_or(0, |s| s.parse().expect("max_records: a number"));
    let reference = a.get(4).is_some_and(|s| s == "reference");
    let model_only = reference || a.get(4).is_some_and(|s| s == "model");
    let records = if max_records == 0 { 2_000_000 } else { max_records };
    let (trace, synth) = if a[1] == "synth" || a[1] == "runs" {
        let s = veil_memcrypt::synth::SynthConfig {
            records,
            footprint_lines: 1 << 16,
            cache_lines: 4096,
            run_lines: 8,
            seed: 1,
            ..Default::default()
        };
        (None, Some(s))
    } else if a[1] == "dense" {
        let s = veil_memcrypt::synth::SynthConfig {
            records,
            footprint_lines: 1 << 15,
            cache_lines: 2048,
            insts_per_access: 8,
            p_zero: 0.5,
            seed: 7,
            ..Default::default()
        };
        (None, Some(s))
    } else {
        (Some(a[1].clone()), None)
    };
    let run = veil_memcrypt::input::Run { config: cfg, trace, synth, max_records, skip_records: 0, sampling: None };
    let mut recs = Vec::new();
    let t = std::time::Instant::now();
    veil_memcrypt::input::for_each(&run, &|| false, |r| {
        recs.push(*r);
        Ok(())
    })
    .unwrap();
    let read = t.elapsed().as_secs_f64();
    let t = std::time::Instant::now();
    let c = cpu_seconds();
    let res = run_model(&run.config, &recs, reference);
    let model = t.elapsed().as_secs_f64();
    let model_cpu = cpu_seconds() - c;
    println!("{} records; read {:.2} M/s; model only {:.2} M/s, {:.2} M per CPU-second (ipc {:.6})", recs.len(),
             recs.len() as f64 / read / 1e6, recs.len() as f64 / model / 1e6, recs.len() as f64 / model_cpu / 1e6, res.ipc);
    if model_only {
        return;
    }
    let t = std::time::Instant::now();
    let r = veil_memcrypt::input::simulate_run(&run, &|| false).unwrap();
    let s = t.elapsed().as_secs_f64();
    println!("end to end {} records in {s:.3} s: {:.2} M/s", r.records, r.records as f64 / s / 1e6);
}

/// CPU seconds of this thread (what "records/s on one core" means on a shared machine).
fn cpu_seconds() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// The model alone (callgrind: `--toggle-collect='*run_model*'` counts only this).
#[inline(never)]
fn run_model(cfg: &veil_memcrypt::Config, recs: &[veil_memcrypt::Record], reference: bool) -> veil_memcrypt::Results {
    let mut sim = veil_memcrypt::Sim::new(cfg).unwrap();
    if reference {
        sim.use_reference_booking();
    }
    for r in recs {
        sim.step(r);
    }
    sim.finish()
}
