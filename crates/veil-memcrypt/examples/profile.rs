//! Runs the timing model over a trace file (for profiling): `profile PATH [cipher|plain]`.

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let mut cfg = veil_memcrypt::Config::default();
    match a.get(2).map(String::as_str) {
        Some("plain") => cfg.encryption = false,
        Some(c) => cfg.cipher = c.into(),
        None => {}
    }
    let run = veil_memcrypt::input::Run { config: cfg, trace: Some(a[1].clone()), synth: None, max_records: 0 };
    let t = std::time::Instant::now();
    let mut n = 0u64;
    veil_memcrypt::input::for_each(&run, &|| false, |_| {
        n += 1;
        Ok(())
    })
    .unwrap();
    println!("read only: {n} records in {:.3} s", t.elapsed().as_secs_f64());
    let mut recs = Vec::new();
    veil_memcrypt::input::for_each(&run, &|| false, |r| {
        recs.push(*r);
        Ok(())
    })
    .unwrap();
    let t = std::time::Instant::now();
    let mut sim = veil_memcrypt::Sim::new(&run.config).unwrap();
    for r in &recs {
        sim.step(r);
    }
    let res = sim.finish();
    println!("model only: {:.2} M/s (ipc {:.3})", recs.len() as f64 / t.elapsed().as_secs_f64() / 1e6, res.ipc);
    let t = std::time::Instant::now();
    let r = veil_memcrypt::input::simulate_run(&run, &|| false).unwrap();
    println!("{} records in {:.3} s: {:.2} M/s", r.records, t.elapsed().as_secs_f64(), r.records as f64 / t.elapsed().as_secs_f64() / 1e6);
}
