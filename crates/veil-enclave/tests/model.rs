//! Mechanism and target tests of the enclave model. Targets are the SSE paper's stated numbers
//! (Sec. 5.1): the SGX-like ones are *calibrated* (the constants were fitted on them by
//! `python -m veil.enclave.calibrate`), the SEV-like ones *predicted*; mechanisms are checked on
//! their own counters.

use std::sync::OnceLock;

use veil_enclave::{simulate, simulate_many, Config, Model, Policy, SimResult};

fn cfg(model: Model, policy: Policy, workers: u32) -> Config {
    Config { model, policy, workers, ..Config::default() }
}

/// The 64-worker points every target test needs, run once per test binary.
struct At64 {
    bl: SimResult,
    exb: [SimResult; 2],
    exl: [SimResult; 2],
    exl0: [SimResult; 2],
    nhp: [SimResult; 2],
    hp: [SimResult; 2],
}

/// The 64-worker points of every model and policy, each config passed through `f`.
fn points(f: fn(Config) -> Config) -> At64 {
    let mut cfgs = vec![f(cfg(Model::Bl, Policy::Sgx, 64))];
    for p in [Policy::Sgx, Policy::Sev] {
        cfgs.push(f(cfg(Model::ExB, p, 64)));
        cfgs.push(f(cfg(Model::ExL, p, 64)));
        cfgs.push(f(Config { ctx_switch_ns: 0.0, ..cfg(Model::ExL, p, 64) }));
        cfgs.push(f(cfg(Model::SseNhp, p, 64)));
        cfgs.push(f(cfg(Model::SseHp, p, 64)));
    }
    let r: Vec<SimResult> = simulate_many(&cfgs).into_iter().map(|r| r.unwrap()).collect();
    let take = |i: usize| [r[1 + i].clone(), r[6 + i].clone()];
    At64 { bl: r[0].clone(), exb: take(0), exl: take(1), exl0: take(2), nhp: take(3), hp: take(4) }
}

fn at64() -> &'static At64 {
    static CELL: OnceLock<At64> = OnceLock::new();
    CELL.get_or_init(|| points(|c| c))
}

fn slowdown(r: &SimResult, bl: &SimResult) -> f64 {
    r.completion_cycles as f64 / bl.completion_cycles as f64
}

fn within(name: &str, got: f64, want: f64, tol: f64) {
    assert!((got - want).abs() <= tol, "{name}: {got:.3}, paper {want} +- {tol}");
}

#[test]
fn calibrated_sgx_like_slowdowns_within_tolerance() {
    let a = at64();
    within("EX-B SGX-like", slowdown(&a.exb[0], &a.bl), 2.2, 0.2);
    within("EX-L SGX-like", slowdown(&a.exl[0], &a.bl), 1.7, 0.15);
    within("EX-L 0-cycle switch SGX-like", slowdown(&a.exl0[0], &a.bl), 1.6, 0.15);
    let sharing = |r: &SimResult| r.sharing_misses as f64 / a.bl.sharing_misses as f64;
    within("SSE-NHP sharing ratio SGX-like", sharing(&a.nhp[0]), 4.8, 0.5 * 4.8);
    within("SSE-HP sharing ratio SGX-like", sharing(&a.hp[0]), 4.4, 0.5 * 4.4);
}

/// Predictions: no constant was fitted on a SEV-like number. The slowdowns come out within the
/// paper's band; the sharing ratios do not (5.4x against 2.4x and 1.4x; docs/enclave.md).
#[test]
fn predicted_sev_like_slowdowns_within_tolerance() {
    let a = at64();
    within("EX-B SEV-like", slowdown(&a.exb[1], &a.bl), 1.5, 0.15);
    within("EX-L SEV-like", slowdown(&a.exl[1], &a.bl), 1.4, 0.1);
    within("EX-L 0-cycle switch SEV-like", slowdown(&a.exl0[1], &a.bl), 1.3, 0.1);
    // Shapes the paper states between the two policies: fewer exits, smaller slowdowns.
    for (x, name) in [(&a.exb, "EX-B"), (&a.exl, "EX-L"), (&a.hp, "SSE-HP")] {
        assert!(slowdown(&x[1], &a.bl) < slowdown(&x[0], &a.bl), "{name}: SEV-like below SGX-like");
    }
}

/// The committed calibration (configs/enclave/calibration.json) is what the model runs: its
/// constants are the defaults, and on the default machine (links and memory controllers with
/// contention, the machine it was fitted on) its recorded slowdowns are reproduced exactly.
#[test]
fn committed_calibration_is_the_default() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/enclave/calibration.json");
    let fit: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(fit["half"], "sgx");
    let d = serde_json::to_value(Config::default()).unwrap();
    let consts = fit["constants"].as_object().unwrap();
    assert_eq!(consts.len(), 10);
    for (k, v) in consts {
        assert_eq!(d[k].as_f64(), v.as_f64(), "default {k} differs from the calibration");
    }
    assert_eq!(fit["requests"], 1000);
    let a = at64();
    let cal = &fit["calibrated_values"];
    let pred = &fit["predicted_values"];
    for (p, key) in [(0, "sgx"), (1, "sev")] {
        let vals = if p == 0 { cal } else { pred };
        for (name, r) in [("ex-b", &a.exb[p]), ("ex-l", &a.exl[p]), ("ex-l0", &a.exl0[p])] {
            let want = vals[format!("{key}/{name}/slowdown")].as_f64().unwrap();
            within(&format!("recorded {key} {name}"), slowdown(r, &a.bl), want, 1e-9);
        }
    }
}

#[test]
fn exitless_switch_cost_and_swaps() {
    let a = at64();
    for p in 0..2 {
        assert!(a.exl0[p].completion_cycles < a.exl[p].completion_cycles, "free switches help");
        assert_eq!(a.exl0[p].breakdown["ctx_switch"], 0.0);
        assert!(a.exl0[p].counters.ctx_switches > 0, "the swaps still happen");
    }
}

#[test]
fn sse_beats_exitless_at_64_but_stays_short_of_bl() {
    let a = at64();
    for p in 0..2 {
        let (hp, nhp, exl) = (&a.hp[p], &a.nhp[p], &a.exl[p]);
        assert!(hp.throughput_krps > 1.1 * exl.throughput_krps, "SSE-HP well above EX-L");
        assert!(hp.throughput_krps < a.bl.throughput_krps, "SSE short of BL");
        assert!(hp.throughput_krps >= nhp.throughput_krps, "HP at least as fast as NHP");
        // The mechanisms behind it: no ecalls, no swaps, data moving between core and SSE.
        assert_eq!(hp.counters.ecalls + hp.counters.ctx_switches + hp.counters.responder_sleeps, 0);
        assert!(hp.sharing_misses > 3 * a.bl.sharing_misses, "core-SSE data movement shows as sharing misses");
        assert!(nhp.l2_misses > hp.l2_misses, "the smaller L2 slice costs SSE-NHP misses");
    }
}

#[test]
fn exitless_at_64_swaps_on_the_timer_and_thrashes_the_l1() {
    let a = at64();
    for p in 0..2 {
        let x = &a.exl[p];
        assert!(x.counters.responder_sleeps > 0 && x.counters.ctx_switches > 0);
        // Each wake-up is two switches (worker -> responder -> worker); at most a handful of
        // extra ones at start and end.
        let wakes = x.counters.responder_sleeps;
        assert!(x.counters.ctx_switches.abs_diff(2 * wakes) <= 2 * 64, "{} vs {}", x.counters.ctx_switches, wakes);
        assert!(x.l1d_misses as f64 > 1.2 * a.bl.l1d_misses as f64, "swaps thrash the L1D");
        assert!(x.breakdown["polling"] > 0.1 * a.bl.mean_worker_cycles, "polling is the big exitless cost");
    }
}

#[test]
fn bl_and_exit_based_have_no_exitless_machinery() {
    let a = at64();
    let bl = &a.bl;
    for k in ["pack", "unpack", "polling", "ecall", "ocall", "ctx_switch"] {
        assert_eq!(bl.breakdown[k], 0.0, "BL has no {k} time");
    }
    assert_eq!(bl.counters.ecalls + bl.counters.ocalls + bl.counters.calls_posted + bl.counters.ctx_switches, 0);
    assert_eq!(bl.counters.calls_local, 10 * 1000, "ten system calls per request, all local");
    // EX-B: one ocall and one ecall per exiting call; SGX-like exits on all ten calls, SEV-like
    // on recv and the two sends.
    for (p, per_req) in [(0, 10u64), (1, 3)] {
        let x = &a.exb[p];
        assert_eq!(x.counters.ocalls, per_req * 1000);
        assert_eq!(x.counters.ecalls, per_req * 1000);
        assert_eq!(x.breakdown["polling"], 0.0);
        // Ecall time per worker is exactly 9,000 cycles times its calls.
        let calls_per_worker = per_req as f64 * 1000.0 / 64.0;
        within("ecall cycles per worker", x.breakdown["ecall"], 9000.0 * calls_per_worker, 1e-6);
    }
}

#[test]
fn every_request_completes_exactly_once_and_every_call_is_answered() {
    let a = at64();
    let all = [&a.bl, &a.exb[0], &a.exb[1], &a.exl[0], &a.exl[1], &a.exl0[0], &a.nhp[0], &a.hp[1]];
    for r in all {
        assert!(r.each_request_once, "{} {}", r.model, r.policy);
        assert_eq!(r.requests_completed, 1000);
        assert_eq!(r.counters.calls_posted, r.counters.calls_completed, "{} {}", r.model, r.policy);
        // Breakdown categories partition each worker's time.
        let sum: f64 = r.breakdown.values().sum();
        within("breakdown total", sum, r.mean_worker_cycles, 1e-6 * r.mean_worker_cycles);
        assert!(r.mean_worker_cycles <= r.completion_cycles as f64);
    }
    // Exitless calls: SGX-like posts all ten per request, SEV-like three.
    assert_eq!(a.exl[0].counters.calls_posted, 10_000);
    assert_eq!(a.exl[1].counters.calls_posted, 3_000);
    assert_eq!(a.exl[1].counters.calls_local, 7_000);
}

#[test]
fn dedicated_responders_never_sleep_and_pick_calls_up_at_once() {
    // 32 workers on 64 cores: every responder has a core of its own and polls it.
    let r = simulate(&cfg(Model::ExL, Policy::Sgx, 32)).unwrap();
    assert_eq!(r.counters.responder_sleeps, 0);
    assert_eq!(r.counters.ctx_switches, 0);
    let per_call = r.counters.pickup_wait_cycles as f64 / r.counters.calls_posted as f64;
    assert!(per_call < 500.0, "a polling responder sees a call within a pass: {per_call}");
    assert!(r.breakdown["polling"] < 0.03 * r.mean_worker_cycles);
}

#[test]
fn no_polling_when_no_responder_waits() {
    // BL and EX-B have no responders; the exitless wait is the only source of polling time.
    let a = at64();
    assert_eq!(a.bl.breakdown["polling"], 0.0);
    assert_eq!(a.exb[0].breakdown["polling"], 0.0);
    assert_eq!(a.exb[0].counters.responder_checks, 0);
}

#[test]
fn a_longer_responder_timer_means_longer_waits_per_call() {
    let base = Config { requests: 256, ..cfg(Model::ExL, Policy::Sgx, 64) };
    let rs = simulate_many(&[
        Config { responder_sleep_us: 5.0, ..base.clone() },
        Config { responder_sleep_us: 20.0, ..base.clone() },
    ]);
    let w: Vec<f64> = rs
        .iter()
        .map(|r| {
            let r = r.as_ref().unwrap();
            r.counters.pickup_wait_cycles as f64 / r.counters.calls_posted as f64
        })
        .collect();
    // A call waits for the rest of the responder's sleep: about half of it on average, plus
    // the switch; doubling twice the timer must at least double the wait.
    assert!(w[1] > 2.0 * w[0], "waits {w:?}");
    assert!(w[0] > 1000.0 && w[1] < 20_000.0, "waits {w:?}");
}

#[test]
fn deterministic_for_a_seed() {
    let c = Config { requests: 128, ..cfg(Model::ExL, Policy::Sev, 64) };
    let a = serde_json::to_string(&simulate(&c).unwrap()).unwrap();
    let b = serde_json::to_string(&simulate(&c).unwrap()).unwrap();
    assert_eq!(a, b);
}

#[test]
fn bl_scales_linearly_with_workers_until_cores_run_out() {
    let base = Config { requests: 512, ..cfg(Model::Bl, Policy::Sgx, 8) };
    let rs: Vec<SimResult> = simulate_many(&[
        Config { workers: 8, ..base.clone() },
        Config { workers: 16, ..base.clone() },
        Config { workers: 128, ..base.clone() },
    ])
    .into_iter()
    .map(|r| r.unwrap())
    .collect();
    let s = rs[1].throughput_krps / rs[0].throughput_krps;
    assert!((1.85..=2.05).contains(&s), "8 -> 16 workers: x{s:.3}");
    // 128 workers on 64 cores time-share: no faster than 64 could be.
    let per_worker_16 = rs[1].throughput_krps / 16.0;
    assert!(rs[2].throughput_krps <= 64.0 * per_worker_16 * 1.05);
    assert!(rs[2].counters.ctx_switches > 0, "time sharing switches");
}

#[test]
fn cores_per_sse_share_responders() {
    let base = Config { requests: 256, ..cfg(Model::SseHp, Policy::Sgx, 64) };
    let rs: Vec<SimResult> = simulate_many(&[
        Config { cores_per_sse: 1, ..base.clone() },
        Config { cores_per_sse: 4, ..base.clone() },
    ])
    .into_iter()
    .map(|r| r.unwrap())
    .collect();
    assert!(rs[1].counters.pickup_wait_cycles > rs[0].counters.pickup_wait_cycles, "shared SSEs queue calls");
    assert!(rs[1].throughput_krps < rs[0].throughput_krps);
    assert!(rs[1].each_request_once);
}

#[test]
fn bad_configurations_are_one_line_errors() {
    let bad = [
        (Config { ecall_cycles: -1.0, ..Config::default() }, "ecall_cycles"),
        (Config { ctx_switch_ns: f64::NAN, ..Config::default() }, "ctx_switch_ns"),
        (Config { tiles: 0, ..Config::default() }, "tiles"),
        (Config { workers: 0, ..Config::default() }, "workers"),
        (Config { requests: 0, ..Config::default() }, "requests"),
        (Config { sses: 65, ..Config::default() }, "sses"),
        (Config { cores_per_sse: 0, ..Config::default() }, "cores_per_sse"),
        (Config { l1d_ways: 0, ..Config::default() }, "l1d"),
        (Config { l2_slice_kb: 100, l2_ways: 3, ..Config::default() }, "l2_slice"),
        (Config { clock_ghz: 0.0, ..Config::default() }, "clock_ghz"),
    ];
    for (c, field) in bad {
        let e = simulate(&c).unwrap_err();
        assert!(e.contains(field), "{e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
    let e = veil_enclave::simulate_json(r#"{"model": "sse-xl"}"#).unwrap_err();
    assert!(e.starts_with("bad enclave config") && !e.contains('\n'), "{e}");
    let e = veil_enclave::simulate_json(r#"{"tile": 4}"#).unwrap_err();
    assert!(e.contains("tile"), "{e}");
}

#[test]
fn oversubscribed_cores_still_serve_every_request() {
    // Several worker-responder pairs per core: responders and workers share by timer and quantum.
    let cases = [
        Config { requests: 300, ..cfg(Model::ExL, Policy::Sgx, 128) },
        Config { requests: 30, tiles: 1, ..cfg(Model::ExL, Policy::Sev, 3) },
        Config { requests: 200, tiles: 16, ..cfg(Model::SseHp, Policy::Sgx, 64) },
        Config { requests: 200, tiles: 16, ..cfg(Model::ExB, Policy::Sgx, 64) },
    ];
    for (c, r) in cases.iter().zip(simulate_many(&cases)) {
        let r = r.unwrap_or_else(|e| panic!("{c:?}: {e}"));
        assert!(r.each_request_once, "{} {} workers on {} tiles", r.model, r.workers, r.tiles);
        assert_eq!(r.counters.calls_posted, r.counters.calls_completed);
    }
}

#[test]
fn a_responder_timer_shorter_than_a_switch_is_rejected() {
    let e = simulate(&Config { responder_sleep_us: 0.4, ..cfg(Model::ExL, Policy::Sgx, 64) }).unwrap_err();
    assert!(e.contains("responder_sleep_us"), "{e}");
}

/// The paper's EX-L "decrease in performance at 64 workers": the responder timer is the lever
/// that makes one (a call waits for the rest of the responder's sleep), and it acts on the
/// 64-worker point alone: at 32 workers every responder has a core of its own and never sleeps.
/// So a decrease comes only with a 64-worker slowdown far above the paper's 1.7.
#[test]
fn the_timer_can_make_exl_decrease_only_with_a_much_larger_slowdown() {
    let rs: Vec<SimResult> = simulate_many(&[
        cfg(Model::ExL, Policy::Sgx, 32),
        Config { responder_sleep_us: 80.0, ..cfg(Model::ExL, Policy::Sgx, 32) },
        Config { responder_sleep_us: 80.0, ..cfg(Model::ExL, Policy::Sgx, 64) },
    ])
    .into_iter()
    .map(|r| r.unwrap())
    .collect();
    let a = at64();
    assert_eq!(rs[0].completion_cycles, rs[1].completion_cycles, "the timer does not touch 32 workers");
    let gain_default = a.exl[0].throughput_krps / rs[0].throughput_krps;
    assert!(gain_default > 1.2, "at the paper's 10 us timer EX-L still gains 32 -> 64: x{gain_default:.2}");
    let gain_80 = rs[2].throughput_krps / rs[0].throughput_krps;
    assert!(gain_80 < 1.0, "an 80 us timer turns the gain into a decrease: x{gain_80:.2}");
    assert!(slowdown(&rs[2], &a.bl) > 2.0, "and the slowdown leaves the paper's band: {:.2}", slowdown(&rs[2], &a.bl));
}

/// The paper's polling is (i) a worker waiting for its responder's timer and (ii) a responder
/// checking the buffer: SSE's responders have engines of their own and no timer, so SSE workers
/// never poll (the paper: SSE "eliminates ... polling overheads"), while EX-L's workers at 64
/// workers do.
#[test]
fn sse_workers_never_wait_for_a_timer() {
    let a = at64();
    for p in 0..2 {
        assert_eq!(a.hp[p].breakdown["polling"], 0.0);
        assert_eq!(a.nhp[p].breakdown["polling"], 0.0);
        assert!(a.hp[p].counters.responder_checks > 0, "the engines still check the buffer");
        assert!(a.exl[p].breakdown["polling"] > 0.05 * a.bl.mean_worker_cycles);
    }
}

/// Contention outside the caches: with fewer memory controllers BL's requests queue at them
/// and at the links around them, so BL gains less from 32 to 64 workers; turning links and
/// controllers off (the ablation) gives the latency-only machine, whose links carry nothing.
#[test]
fn fewer_controllers_and_busy_links_cut_bl_scaling() {
    let base = Config { requests: 256, ..cfg(Model::Bl, Policy::Sgx, 32) };
    let off = Config { flit_bytes: 0, controller_gbps: 0.0, ..base.clone() };
    let two = Config { mem_controllers: 2, ..base.clone() };
    let mut cfgs = Vec::new();
    for c in [&off, &base, &two] {
        cfgs.push(c.clone());
        cfgs.push(Config { workers: 64, ..c.clone() });
    }
    let r: Vec<SimResult> = simulate_many(&cfgs).into_iter().map(|r| r.unwrap()).collect();
    let gain = |i: usize| r[i + 1].throughput_krps / r[i].throughput_krps;
    assert_eq!(r[1].link_utilization, 0.0);
    assert_eq!(r[1].dram_queue_cycles, 0.0);
    assert!(r[3].link_utilization > 0.05 && r[3].link_wait_per_miss > 0.0, "links carry and queue: {}", r[3].link_utilization);
    assert!(r[3].link_wait_per_miss > r[2].link_wait_per_miss, "more workers, longer link queues");
    // Two controllers at 5 GB/s: 10 GB/s for the whole chip, which BL at 64 workers exceeds.
    assert!(r[5].dram_gbps < 10.0 * 1.05, "served {} GB/s through 10 GB/s of controllers", r[5].dram_gbps);
    assert!(r[5].dram_queue_cycles > 10.0 * r[3].dram_queue_cycles.max(0.1));
    assert!(gain(4) < gain(2) - 0.2 && gain(2) <= gain(0) + 0.02, "gains {:.3} {:.3} {:.3}", gain(0), gain(2), gain(4));
}
