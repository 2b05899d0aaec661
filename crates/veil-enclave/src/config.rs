//! Configuration of one simulation: the machine, the execution model, the exit policy and the
//! Server workload's size. Every default and its source is listed in `docs/enclave-model.md`.

use serde::{Deserialize, Serialize};

/// How a worker reaches system-level software.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Model {
    /// Baseline: system calls run directly on the worker, no enclave, no memory encryption.
    Bl,
    /// Exit-based: every exiting call is an ocall out and an ecall back in.
    ExB,
    /// Exitless: worker-responder threads on enclave cores, shared buffer in untrusted memory.
    ExL,
    /// SSE, no hardware penalty: responders on SSEs, L2 slice shrunk to pay for them.
    SseNhp,
    /// SSE, hardware penalty: responders on SSEs, full L2 slice.
    SseHp,
}

impl Model {
    pub const ALL: [Model; 5] = [Model::Bl, Model::ExB, Model::ExL, Model::SseNhp, Model::SseHp];

    pub fn name(self) -> &'static str {
        match self {
            Model::Bl => "bl",
            Model::ExB => "ex-b",
            Model::ExL => "ex-l",
            Model::SseNhp => "sse-nhp",
            Model::SseHp => "sse-hp",
        }
    }

    /// Models where the enclave is protected: memory encryption and integrity apply.
    pub fn secure(self) -> bool {
        self != Model::Bl
    }

    /// Models where a responder thread executes the exiting calls.
    pub fn exitless(self) -> bool {
        matches!(self, Model::ExL | Model::SseNhp | Model::SseHp)
    }

    pub fn sse(self) -> bool {
        matches!(self, Model::SseNhp | Model::SseHp)
    }
}

/// Which calls leave the enclave (the paper's two configurations of Server).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// User-level enclave: the OS is untrusted, every system call exits.
    Sgx,
    /// VM-based enclave: the guest OS is trusted, only device calls (send, recv) exit as
    /// hypercalls; the other system calls run in the guest kernel on the worker's core.
    Sev,
}

impl Placement {
    pub fn name(self) -> &'static str {
        match self {
            Placement::ServerOnly => "server-only",
            Placement::WakeAffine => "wake-affine",
        }
    }
}

impl Policy {
    pub fn name(self) -> &'static str {
        match self {
            Policy::Sgx => "sgx",
            Policy::Sev => "sev",
        }
    }
}

/// Which threads live on the tiles and how they are placed (`place.rs`, docs/enclave-model.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// Only the server's threads (workers, responders) run on the chip; the clients that issue
    /// the requests are outside it (the model before clients were placed).
    ServerOnly,
    /// Every thread of the setup runs on the chip, clients included (the paper's Server issues
    /// its requests from clients, one per worker). Server threads are placed as the paper
    /// describes; each client goes to an idle enclave core if one is left, else to the core of
    /// the thread that wakes it (the one running its worker's page `send`), as Linux's
    /// `select_task_rq_fair` does (`select_idle_sibling`, then `wake_affine`). A woken client
    /// preempts the running worker (CFS wake-up preemption: a sleeper is placed half a
    /// scheduling latency behind the run queue's minimum virtual runtime).
    WakeAffine,
}

/// One simulation. Costs are cycles at `clock_ghz` unless the name says otherwise.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub model: Model,
    pub policy: Policy,
    /// Placement of threads on tiles (clients off or on the chip).
    pub placement: Placement,
    /// Client compute per request besides its system calls (build the next GET, parse the
    /// response header); its kernel work is the step table's `send` (header) and two `recv`s.
    pub client_work_cycles: f64,
    /// Worker threads N.
    pub workers: u32,
    /// Total requests M, split as evenly as possible over the workers.
    pub requests: u32,
    /// Tiles T on the mesh (one enclave core and one L2 slice each).
    pub tiles: u32,
    /// Enclave cores served by one SSE (SSE models).
    pub cores_per_sse: u32,
    /// Number of SSEs; 0 means tiles / cores_per_sse (rounded up).
    pub sses: u32,
    pub clock_ghz: f64,
    /// Web page (file) size served per request.
    pub page_bytes: u64,
    /// The enclave serves every page from a copy in its own memory: no file calls (open,
    /// fstat, lseek, read, close), only ioctl, recv and the two sends (a cache hit).
    pub cached_pages: bool,
    /// HTTP request size received per request.
    pub http_request_bytes: u64,
    /// HTTP response header size.
    pub header_bytes: u64,
    pub ecall_cycles: f64,
    pub ocall_cycles: f64,
    pub ctx_switch_ns: f64,
    pub responder_sleep_us: f64,
    /// Round-robin quantum when several workers share one core.
    pub sched_quantum_us: f64,
    /// Extra latency per DRAM access for encryption and integrity (all models but BL).
    pub mem_crypto_cycles: f64,
    pub dram_cycles: f64,
    /// Memory controllers on the mesh; 0 puts one on every tile, serving the lines homed
    /// there (Graphite's `num_controllers = ALL`). Fewer are spread evenly over the tile ids
    /// and lines are interleaved over them.
    pub mem_controllers: u32,
    /// Bandwidth of each memory controller, GB/s (Graphite's `per_controller_bandwidth`);
    /// 0 turns controller queueing off.
    pub controller_gbps: f64,
    /// Mesh link width, bytes (a flit per cycle per link; Graphite's 64-bit `flit_width`); 0
    /// turns link contention off (latency only, the model before contention).
    pub flit_bytes: u32,
    /// L2 slice access latency, before mesh hops.
    pub l2_hit_cycles: f64,
    /// One mesh hop, one way.
    pub hop_cycles: f64,
    /// Extra latency when another private cache supplies or must give up the line.
    pub remote_l1_cycles: f64,
    /// Memory-level parallelism of the out-of-order enclave core: its miss stalls are divided
    /// by this; the in-order SSE always has 1.
    pub core_mlp: f64,
    /// Overlap of the misses of a sequential copy stream (a next-line stream prefetcher, on
    /// enclave cores and SSEs alike).
    pub copy_mlp: f64,
    /// Cycles an SSE needs per cycle of work an enclave core needs (in-order penalty).
    pub sse_cpi_factor: f64,
    pub l1d_kb: u32,
    pub l1d_ways: u32,
    pub l2_slice_kb: u32,
    /// L2 slice under SSE-NHP (the SSE's area comes out of the slice).
    pub l2_slice_nhp_kb: u32,
    pub l2_ways: u32,
    pub sse_l1d_kb: u32,
    pub sse_l1d_ways: u32,
    /// The worker's application working set (lighttpd code data, heap, connection state).
    pub app_ws_kb: u32,
    /// Its hot part, which takes `app_hot_fraction` of the application's accesses.
    pub app_hot_kb: u32,
    pub app_hot_fraction: f64,
    /// Kernel scheduler state a context switch touches (run queue, task structs, stacks).
    pub ctx_switch_kb: u32,
    /// Kernel state per connection (socket, file table, inode) the calls touch.
    pub kernel_state_kb: u32,
    /// Lines of the responder runtime's own data (loop state, stack) touched on every pass.
    pub responder_ws_lines: u32,
    /// Compute per 64-byte line copied by pack, unpack or the kernel.
    pub copy_cycles_per_line: f64,
    /// Scales every workload (non-system-call) compute cost of the Server step table. This and
    /// the next four multiply the table's first estimates (workload.rs); calibrated.
    pub work_scale: f64,
    /// Scales every system-call compute cost of the Server step table.
    pub syscall_scale: f64,
    /// Scales the application lines each step touches.
    pub work_lines_scale: f64,
    /// Scales the kernel lines each system call touches.
    pub syscall_lines_scale: f64,
    /// Scales the kernel-global lines (shared by every tile) each system call touches.
    pub global_lines_scale: f64,
    pub seed: u64,
}

/// The calibrated constants (`core_mlp`, `copy_mlp`, `ctx_switch_kb`, `kernel_state_kb`,
/// `responder_ws_lines` and the five `*_scale` multipliers over the step table) are the fit of
/// `python -m veil.enclave.calibrate` on the SGX-like half of the paper's numbers, recorded in
/// `configs/enclave/calibration.json`; a test checks the two agree.
impl Default for Config {
    fn default() -> Self {
        Self {
            model: Model::Bl,
            policy: Policy::Sgx,
            placement: Placement::ServerOnly,
            client_work_cycles: 2000.0,
            workers: 64,
            requests: 1000,
            tiles: 64,
            cores_per_sse: 1,
            sses: 0,
            clock_ghz: 1.0,
            page_bytes: 16 * 1024,
            cached_pages: false,
            http_request_bytes: 512,
            header_bytes: 256,
            ecall_cycles: 9000.0,
            ocall_cycles: 9000.0,
            ctx_switch_ns: 500.0,
            responder_sleep_us: 10.0,
            sched_quantum_us: 1000.0,
            mem_crypto_cycles: 10.0,
            dram_cycles: 100.0,
            mem_controllers: 0,
            controller_gbps: 5.0,
            flit_bytes: 8,
            l2_hit_cycles: 8.0,
            hop_cycles: 2.0,
            remote_l1_cycles: 10.0,
            core_mlp: 2.0,
            copy_mlp: 2.0,
            sse_cpi_factor: 1.0,
            l1d_kb: 32,
            l1d_ways: 8,
            l2_slice_kb: 256,
            l2_slice_nhp_kb: 224,
            l2_ways: 8,
            sse_l1d_kb: 1,
            sse_l1d_ways: 2,
            app_ws_kb: 192,
            app_hot_kb: 16,
            app_hot_fraction: 0.7,
            ctx_switch_kb: 4,
            kernel_state_kb: 8,
            responder_ws_lines: 16,
            copy_cycles_per_line: 8.0,
            work_scale: 1.0,
            syscall_scale: 1.0,
            work_lines_scale: 8.0,
            syscall_lines_scale: 1.0,
            global_lines_scale: 8.0,
            seed: 1,
        }
    }
}

impl Config {
    /// Number of SSEs actually built (SSE models only).
    pub fn sse_count(&self) -> u32 {
        if self.sses > 0 {
            self.sses
        } else {
            self.tiles.div_ceil(self.cores_per_sse.max(1))
        }
    }

    /// Cores each SSE serves, derived from `sses` when that is given.
    pub fn cores_per_sse_eff(&self) -> u32 {
        self.tiles.div_ceil(self.sse_count())
    }

    pub fn cycles_per_ns(&self) -> f64 {
        self.clock_ghz
    }

    /// Checks every field; the message names the first bad one.
    pub fn validate(&self) -> Result<(), String> {
        let non_neg = [
            ("ecall_cycles", self.ecall_cycles),
            ("ocall_cycles", self.ocall_cycles),
            ("ctx_switch_ns", self.ctx_switch_ns),
            ("responder_sleep_us", self.responder_sleep_us),
            ("sched_quantum_us", self.sched_quantum_us),
            ("mem_crypto_cycles", self.mem_crypto_cycles),
            ("dram_cycles", self.dram_cycles),
            ("controller_gbps", self.controller_gbps),
            ("l2_hit_cycles", self.l2_hit_cycles),
            ("hop_cycles", self.hop_cycles),
            ("remote_l1_cycles", self.remote_l1_cycles),
            ("copy_cycles_per_line", self.copy_cycles_per_line),
            ("client_work_cycles", self.client_work_cycles),
            ("work_scale", self.work_scale),
            ("syscall_scale", self.syscall_scale),
            ("work_lines_scale", self.work_lines_scale),
            ("syscall_lines_scale", self.syscall_lines_scale),
            ("global_lines_scale", self.global_lines_scale),
        ];
        for (name, v) in non_neg {
            if !v.is_finite() || v < 0.0 {
                return Err(format!("{name} must be a finite number >= 0, got {v}"));
            }
        }
        let positive = [
            ("clock_ghz", self.clock_ghz),
            ("core_mlp", self.core_mlp),
            ("copy_mlp", self.copy_mlp),
            ("sse_cpi_factor", self.sse_cpi_factor),
        ];
        for (name, v) in positive {
            if !v.is_finite() || v <= 0.0 {
                return Err(format!("{name} must be a finite number > 0, got {v}"));
            }
        }
        if self.responder_sleep_us * 1000.0 <= self.ctx_switch_ns || self.responder_sleep_us < 0.1 {
            return Err(format!(
                "responder_sleep_us ({} us) must be at least 0.1 us and longer than a context switch ({} ns): \
                 a worker sharing a core with its responder runs only in between",
                self.responder_sleep_us, self.ctx_switch_ns
            ));
        }
        if self.sched_quantum_us <= 0.0 {
            return Err("sched_quantum_us must be > 0".into());
        }
        if self.workers == 0 {
            return Err("workers must be >= 1".into());
        }
        if self.requests == 0 {
            return Err("requests must be >= 1".into());
        }
        if self.tiles == 0 {
            return Err("tiles must be >= 1 (zero cores)".into());
        }
        if self.tiles > 4096 {
            return Err(format!("tiles must be <= 4096, got {}", self.tiles));
        }
        if self.workers > 16 * self.tiles.max(1) {
            return Err(format!("workers ({}) must be <= 16 x tiles ({})", self.workers, self.tiles));
        }
        if self.mem_controllers > self.tiles {
            return Err(format!("mem_controllers ({}) must be <= tiles ({}); 0 = one per tile", self.mem_controllers, self.tiles));
        }
        if self.flit_bytes > 64 {
            return Err(format!("flit_bytes must be in 0..=64 (0 = no link contention), got {}", self.flit_bytes));
        }
        if self.cores_per_sse == 0 {
            return Err("cores_per_sse must be >= 1".into());
        }
        if self.cores_per_sse > self.tiles {
            return Err(format!("cores_per_sse ({}) must be <= tiles ({})", self.cores_per_sse, self.tiles));
        }
        if self.sses > self.tiles {
            return Err(format!("sses ({}) must be <= tiles ({}): one SSE per tile at most", self.sses, self.tiles));
        }
        if self.page_bytes == 0 || self.page_bytes > (64 << 20) {
            return Err(format!("page_bytes must be in 1..=67108864, got {}", self.page_bytes));
        }
        if self.http_request_bytes == 0 || self.http_request_bytes > (1 << 20) {
            return Err(format!("http_request_bytes must be in 1..=1048576, got {}", self.http_request_bytes));
        }
        if self.header_bytes == 0 || self.header_bytes > (1 << 20) {
            return Err(format!("header_bytes must be in 1..=1048576, got {}", self.header_bytes));
        }
        if !(0.0..=1.0).contains(&self.app_hot_fraction) {
            return Err(format!("app_hot_fraction must be in [0, 1], got {}", self.app_hot_fraction));
        }
        if self.app_ws_kb == 0 || self.app_hot_kb == 0 || self.app_hot_kb > self.app_ws_kb || self.app_ws_kb > 1 << 20 {
            return Err("app_hot_kb and app_ws_kb must satisfy 1 <= app_hot_kb <= app_ws_kb <= 1048576".into());
        }
        if self.ctx_switch_kb > 1024 || self.responder_ws_lines == 0 || self.responder_ws_lines > 16384 {
            return Err("ctx_switch_kb must be in 0..=1024 and responder_ws_lines in 1..=16384".into());
        }
        if self.kernel_state_kb == 0 || self.kernel_state_kb > 1024 {
            return Err(format!("kernel_state_kb must be in 1..=1024, got {}", self.kernel_state_kb));
        }
        let caches = [
            ("l1d", self.l1d_kb, self.l1d_ways),
            ("l2_slice", self.l2_slice_kb, self.l2_ways),
            ("l2_slice_nhp", self.l2_slice_nhp_kb, self.l2_ways),
            ("sse_l1d", self.sse_l1d_kb, self.sse_l1d_ways),
        ];
        for (name, kb, ways) in caches {
            if kb == 0 || ways == 0 {
                return Err(format!("{name}: size and ways must be >= 1"));
            }
            if kb > 1 << 20 {
                return Err(format!("{name}_kb must be <= 1048576, got {kb}"));
            }
            let lines = kb as u64 * 1024 / 64;
            if lines % ways as u64 != 0 || lines < ways as u64 {
                return Err(format!("{name}: {kb} KB of 64-byte lines is not a multiple of {ways} ways"));
            }
        }
        Ok(())
    }
}
