//! The Server workload (SSE paper, Sec. 4.2): the per-request loop of a lighttpd-like web
//! server, as a table of steps. Each step does some application work inside the enclave and
//! then, optionally, one system call. Compute costs are cycles on the out-of-order enclave core;
//! memory stalls come from the cache model, fed by the access streams listed per step.
//! `docs/enclave-model.md` gives the source of every number.

/// Which enclave buffer a call's data comes from or goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buf {
    /// Small arguments and results (path, stat structure, offsets) in the worker's heap.
    Args,
    /// The received HTTP request (malloc'd, size from ioctl).
    Request,
    /// The generated response header.
    Header,
    /// The page buffer the file is read into and sent from.
    Page,
}

/// How many bytes move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    Bytes(u64),
    HttpRequest,
    Header,
    Page,
}

/// Where the kernel reads the data a call returns, or writes the data it is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// The connection's kernel state (socket, file table, inode).
    State,
    /// Freshly DMA'd network data (never cached before).
    Nic,
    /// The file's page-cache pages (a different file per request: cold).
    PageCache,
    /// The socket's transmit ring.
    TxRing,
}

#[derive(Clone, Copy, Debug)]
pub struct Call {
    pub name: &'static str,
    /// Kernel compute for the call.
    pub sys_cycles: f64,
    /// Lines of the connection's kernel state the call touches (half of them written).
    pub kernel_lines: u32,
    /// Lines of kernel-global state (dentry cache, allocator, TCP tables, reference counts) it
    /// touches; every third is written, so these lines move between tiles as in any multicore
    /// kernel serving the same files to many workers.
    pub global_lines: u32,
    /// Data the enclave hands in: packed before an exit or exitless request.
    pub in_size: Size,
    pub in_buf: Buf,
    pub in_to: Kernel,
    /// Data the call returns: unpacked into enclave memory afterwards.
    pub out_size: Size,
    pub out_buf: Buf,
    pub out_from: Kernel,
    /// Talks to a device: a hypercall (exit) under the SEV-like policy.
    pub device: bool,
}

#[derive(Clone, Copy, Debug)]
pub struct Step {
    pub name: &'static str,
    /// Application compute before the call (or the whole step when there is none).
    pub work_cycles: f64,
    /// Lines of the worker's application working set the work touches.
    pub work_lines: u32,
    /// Enclave buffer the work reads (parse reads the request) or writes (header generation).
    pub work_reads: Option<(Buf, Size)>,
    pub work_writes: Option<(Buf, Size)>,
    pub call: Option<Call>,
}

const fn call(name: &'static str, sys_cycles: f64, kernel_lines: u32, global_lines: u32) -> Call {
    Call {
        name,
        sys_cycles,
        kernel_lines,
        global_lines,
        in_size: Size::Bytes(0),
        in_buf: Buf::Args,
        in_to: Kernel::State,
        out_size: Size::Bytes(0),
        out_buf: Buf::Args,
        out_from: Kernel::State,
        device: false,
    }
}

const fn step(name: &'static str, work_cycles: f64, work_lines: u32, call: Option<Call>) -> Step {
    Step { name, work_cycles, work_lines, work_reads: None, work_writes: None, call }
}

/// One request of Server, in program order, at the first estimates (the values of the model's
/// first version, before any constant was tuned against the paper). The calibrated multipliers `work_scale`, `syscall_scale`,
/// `work_lines_scale`, `syscall_lines_scale` and `global_lines_scale` (config.rs, fitted by
/// `python -m veil.enclave.calibrate`) scale these columns; the table itself is never tuned.
/// Calls whose name is shared with a paper step are system calls; `malloc` and `parse` stay inside the enclave (the paper lists them as steps,
/// not calls: the enclave runtime allocates from its own heap).
pub fn server_steps() -> Vec<Step> {
    let ioctl = Call { in_size: Size::Bytes(16), out_size: Size::Bytes(8), ..call("ioctl", 1500.0, 8, 2) };
    let recv = Call {
        out_size: Size::HttpRequest,
        out_buf: Buf::Request,
        out_from: Kernel::Nic,
        in_size: Size::Bytes(16),
        device: true,
        ..call("recv", 6000.0, 16, 2)
    };
    let open = Call { in_size: Size::Bytes(64), out_size: Size::Bytes(8), ..call("open", 7000.0, 12, 6) };
    let fstat = Call { in_size: Size::Bytes(8), out_size: Size::Bytes(144), ..call("fstat", 1200.0, 6, 1) };
    let send_hdr = Call {
        in_size: Size::Header,
        in_buf: Buf::Header,
        in_to: Kernel::TxRing,
        out_size: Size::Bytes(8),
        device: true,
        ..call("send", 9000.0, 16, 2)
    };
    let lseek = Call { in_size: Size::Bytes(16), out_size: Size::Bytes(8), ..call("lseek", 600.0, 4, 0) };
    let read = Call {
        in_size: Size::Bytes(16),
        out_size: Size::Page,
        out_buf: Buf::Page,
        out_from: Kernel::PageCache,
        ..call("read", 3000.0, 12, 2)
    };
    let send_page = Call {
        in_size: Size::Page,
        in_buf: Buf::Page,
        in_to: Kernel::TxRing,
        out_size: Size::Bytes(8),
        device: true,
        ..call("send", 12000.0, 16, 2)
    };
    let close = Call { in_size: Size::Bytes(8), out_size: Size::Bytes(8), ..call("close", 2500.0, 8, 4) };
    vec![
        step("ioctl", 3000.0, 40, Some(ioctl)),
        step("malloc", 400.0, 6, None),
        step("recv", 500.0, 8, Some(recv)),
        Step { work_reads: Some((Buf::Request, Size::HttpRequest)), ..step("parse", 12000.0, 120, None) },
        step("open", 1500.0, 20, Some(open)),
        step("fstat", 500.0, 8, Some(fstat)),
        Step { work_writes: Some((Buf::Header, Size::Header)), ..step("send", 8000.0, 80, Some(send_hdr)) },
        step("fstat", 500.0, 8, Some(fstat)),
        step("lseek", 300.0, 4, Some(lseek)),
        step("malloc", 400.0, 6, None),
        step("read", 500.0, 8, Some(read)),
        step("send", 500.0, 8, Some(send_page)),
        step("close", 1500.0, 30, Some(close)),
    ]
}

/// The steps of a request whose page the enclave holds in its own memory (a cache hit): those
/// of the file (open, fstat, lseek, read, close) are skipped, so which requests hit a cache
/// shows in the calls the OS carries out.
pub fn server_steps_cached() -> Vec<Step> {
    const FILE: [&str; 5] = ["open", "fstat", "lseek", "read", "close"];
    server_steps().into_iter().filter(|s| !FILE.contains(&s.name)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cached_page_makes_four_calls() {
        let calls: Vec<_> = server_steps_cached().iter().filter_map(|s| s.call).map(|c| c.name).collect();
        assert_eq!(calls, ["ioctl", "recv", "send", "send"]);
    }

    #[test]
    fn step_order_matches_the_paper() {
        let names: Vec<_> = server_steps().iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            ["ioctl", "malloc", "recv", "parse", "open", "fstat", "send", "fstat", "lseek", "malloc", "read", "send", "close"]
        );
    }

    #[test]
    fn ten_system_calls_three_of_them_device_calls() {
        let steps = server_steps();
        let calls: Vec<_> = steps.iter().filter_map(|s| s.call).collect();
        assert_eq!(calls.len(), 10);
        let dev: Vec<_> = calls.iter().filter(|c| c.device).map(|c| c.name).collect();
        assert_eq!(dev, ["recv", "send", "send"]);
        for s in &steps {
            if let Some(c) = s.call {
                assert_eq!(c.name, s.name, "a call step is named after its call");
            }
        }
    }
}
