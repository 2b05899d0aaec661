"""trace: memory and value traces of real programs (foundation shared by memcrypt and memnet).

- `TraceReader` / `TraceWriter` / `read_trace`: the trace format (docs/trace.md) with numpy.
- `ensure_trace(workload, llc_bytes=..., ...) -> Path`: a suite workload's trace, cached.
- `run_trace(program, args, out, Geometry(...))`: any program under the veiltrace tool.
- `WORKLOADS`: the workload suite.
"""

from . import cli  # noqa: F401  (registers the CLI; the reproducer loads on demand)
from .format import (LOAD_FILL, STORE_FILL, WRITEBACK, TraceFormatError, TraceReader, TraceWriter, read_trace,
                     record_dtype)
from .runner import Geometry, ensure_trace, ensure_traces, run_trace, tool_version
from .stats import trace_stats
from .workloads import WORKLOADS, Workload, get_workload

__all__ = ["LOAD_FILL", "STORE_FILL", "WRITEBACK", "TraceFormatError", "TraceReader", "TraceWriter", "read_trace",
           "record_dtype", "Geometry", "ensure_trace", "ensure_traces", "run_trace", "tool_version", "trace_stats", "WORKLOADS",
           "Workload", "get_workload"]
