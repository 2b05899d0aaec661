/* veiltrace: a Valgrind tool that runs every instruction fetch and data access of a program
   through a cache model (a private L1I and L1D per thread, one shared LLC; write-back,
   write-allocate, LRU) and writes each LLC fill and dirty writeback, with the line's bytes, as a
   Veil trace (format version 1, raw blocks; see docs/trace.md).

   Copyright (C) 2026 the Veil authors.

   This program is free software; you can redistribute it and/or modify it under the terms of
   the GNU General Public License as published by the Free Software Foundation; either version 2
   of the License, or (at your option) any later version. See tracer/LICENSE.

   Modelling choices (why, not what):
   - The LLC's LRU order changes only on L1 misses, exactly as in cachegrind (which has no
     write-back): an L1 dirty victim marks the line dirty in the LLC if it is there and otherwise
     goes straight to memory (a writeback record). So the LLC fills are the same lines as
     cachegrind's LL misses, which is what the cross-check test relies on.
   - Line contents are read from the program's memory at the moment of the event: before the
     access for a fill (so a store fill carries the line as fetched), at eviction for a
     writeback (the latest stores, which is what a write-back cache holds).
   - Threads run one at a time under Valgrind, so the model needs no locks; the current thread
     is switched in the start_client_code callback, not looked up per access.
   - Instruction fetches are modelled once per straight-line run of instructions in one line
     (no side exit in between): the repeated fetches would be MRU hits that change nothing.
   - Multi-threaded programs (--stream=l1): which thread Valgrind runs after a futex wake-up
     depends on the host's timing, so the order in which threads reach a shared LLC here varies
     from run to run. In this mode the tool models only the private L1s (each thread's own
     instruction stream, hence its L1 misses, does not depend on that order) and streams each
     L1 miss and dirty L1 victim with the line's bytes; Veil's Rust side replays the shared LLC
     offline in a fixed interleaving by instruction count (docs/trace.md). */

#include "config.h"          /* VERSION: the valgrind package this tool is built against */
#include "pub_tool_basics.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_options.h"
#include "pub_tool_machine.h"
#include "pub_tool_aspacemgr.h"
#include "pub_tool_clientstate.h"
#include "pub_tool_xarray.h"
#include "pub_tool_vki.h"
#include "pub_tool_threadstate.h"
#include "pub_tool_debuginfo.h"
#include "pub_tool_vkiscnums.h"
#include "pub_tool_hashtable.h"
#include "libvex_guest_offsets.h"

/* Moves a descriptor into Valgrind's own range, out of the client's reach (coregrind). */
extern Int VG_(safe_fd)(Int oldfd);
/* The client's auxiliary vector, set up before the tool's post_clo_init (coregrind). */
extern UWord* VG_(client_auxv);
#define AUXV_AT_NULL 0
#define AUXV_AT_RANDOM 25

#define TOOL_VERSION "veiltrace 1.1 (valgrind " VERSION ")"
#define BLOCK_RECORDS 16384
#define MAX_LINE 64
#define MAX_THREADS 1024
#define EMPTY (~(UWord)0)
#define NO_VICTIM (~(UWord)0)

enum { K_LOAD_FILL = 0, K_STORE_FILL = 1, K_WRITEBACK = 2 };

/* ---------------------------------------------------------------- options */

static Long clo_l1_size = 8192, clo_l1_assoc = 1;
static Long clo_l1i_size = -1, clo_l1i_assoc = -1; /* default: as L1D */
static Long clo_llc_size = 262144, clo_llc_assoc = 4;
static Long clo_line = 64;
static Bool clo_ifetch = True;
static const HChar* clo_out = NULL;
static Long clo_out_fd = -1;
static Bool clo_l1_stream = False;   /* --stream=l1: L1 events for the offline LLC replay */
static Bool clo_skip_sync = False;   /* leave synchronisation calls out (on with --stream=l1) */

static Bool vt_process_cmd_line_option(const HChar* arg)
{
   const HChar* stream;
   if VG_BINT_CLO(arg, "--l1-size", clo_l1_size, 64, 1LL << 30) {}
   else if VG_BINT_CLO(arg, "--l1-assoc", clo_l1_assoc, 1, 1024) {}
   else if VG_BINT_CLO(arg, "--l1i-size", clo_l1i_size, 64, 1LL << 30) {}
   else if VG_BINT_CLO(arg, "--l1i-assoc", clo_l1i_assoc, 1, 1024) {}
   else if VG_BINT_CLO(arg, "--llc-size", clo_llc_size, 64, 1LL << 36) {}
   else if VG_BINT_CLO(arg, "--llc-assoc", clo_llc_assoc, 1, 1024) {}
   else if VG_BINT_CLO(arg, "--line-size", clo_line, 8, MAX_LINE) {}
   else if VG_BOOL_CLO(arg, "--ifetch", clo_ifetch) {}
   else if VG_STR_CLO(arg, "--out", clo_out) {}
   else if VG_BINT_CLO(arg, "--out-fd", clo_out_fd, 0, 1 << 20) {}
   else if VG_BOOL_CLO(arg, "--skip-sync", clo_skip_sync) {}
   else if VG_STR_CLO(arg, "--stream", stream) {
      if (VG_(strcmp)(stream, "l1") == 0) clo_l1_stream = clo_skip_sync = True;
      else if (VG_(strcmp)(stream, "llc") == 0) clo_l1_stream = False;
      else VG_(fmsg_bad_option)(arg, "--stream is llc or l1\n");
   }
   else return False;
   return True;
}

static void vt_print_usage(void)
{
   VG_(printf)(
"    --out=FILE              write the trace here (raw blocks; Veil packs it)\n"
"    --out-fd=N              or to this inherited descriptor\n"
"    --l1-size=B --l1-assoc=W       each thread's L1D [8192, 1]\n"
"    --l1i-size=B --l1i-assoc=W     each thread's L1I [as L1D]\n"
"    --llc-size=B --llc-assoc=W     the shared LLC [262144, 4]\n"
"    --line-size=B           line size at every level, 8..64, power of two [64]\n"
"    --ifetch=yes|no         model instruction fetches (they share the LLC) [yes]\n"
"    --stream=llc|l1         records: LLC fills/writebacks, or each thread's L1 misses and\n"
"                            dirty victims for Veil's offline LLC replay [llc]\n"
"    --skip-sync=yes|no      leave pthread synchronisation calls out [yes with --stream=l1]\n");
}

static void vt_print_debug_usage(void) {}

/* ---------------------------------------------------------------- caches */

typedef struct {
   UWord* tags;        /* sets x assoc entries, MRU first: (line << 1) | dirty, or EMPTY */
   UWord  sets_mask;
   UInt   assoc;
} Cache;

static UInt line_bits;

static void cache_init(Cache* c, Long size, Long assoc, const HChar* name)
{
   Long sets = size / (assoc * clo_line);
   if (sets < 1 || sets * assoc * clo_line != size || (sets & (sets - 1)))
      VG_(fmsg_bad_option)(name, "%s: %lld bytes, %lld ways, %lld-byte lines do not give a "
                           "power-of-two number of sets\n", name, size, assoc, clo_line);
   c->sets_mask = (UWord)sets - 1;
   c->assoc = (UInt)assoc;
   c->tags = VG_(malloc)("veiltrace.cache", sizeof(UWord) * sets * assoc);
   for (Long i = 0; i < sets * assoc; i++) c->tags[i] = EMPTY;
}

/* Looks `line` up; on a miss inserts it and returns the dirty victim's line (or NO_VICTIM). */
static __inline__ Bool cache_ref(Cache* c, UWord line, UWord dirty, UWord* victim)
{
   UWord* set = c->tags + (line & c->sets_mask) * c->assoc;
   UWord key = line << 1;
   if ((set[0] | 1) == (key | 1)) {
      set[0] |= dirty;
      return True;
   }
   UInt a = c->assoc;
   for (UInt i = 1; i < a; i++) {
      if ((set[i] | 1) == (key | 1)) {
         UWord t = set[i] | dirty;
         for (UInt j = i; j > 0; j--) set[j] = set[j - 1];
         set[0] = t;
         return True;
      }
   }
   UWord ev = set[a - 1];
   for (UInt j = a - 1; j > 0; j--) set[j] = set[j - 1];
   set[0] = key | dirty;
   *victim = (ev != EMPTY && (ev & 1)) ? (ev >> 1) : NO_VICTIM;
   return False;
}

/* Marks a present line dirty without touching the LRU order; False if absent. */
static __inline__ Bool cache_mark_dirty(Cache* c, UWord line)
{
   UWord* set = c->tags + (line & c->sets_mask) * c->assoc;
   UWord key = line << 1;
   for (UInt i = 0; i < c->assoc; i++)
      if ((set[i] | 1) == (key | 1)) {
         set[i] |= 1;
         return True;
      }
   return False;
}

typedef struct {
   Cache l1d, l1i;
   UInt* l1d_mask;         /* --stream=l1: per L1D entry, the granules this thread stored to */
   UChar* l1d_own;         /* ... and the bytes it stored there (only those granules count) */
   UChar victim[MAX_LINE];
   UInt  index;            /* thread number in the trace: creation order */
   ULong start;            /* its creator's instructions (own + start) when it was created */
   Addr  sync_ret;         /* inside a synchronisation call: where it returns to; else 0 */
   ULong random_state;     /* this thread's getrandom() bytes (see on_post_syscall) */
   ULong insts, insts_at_record;
   UInt  hits_since;       /* L1 misses that hit the LLC since the last record */
   ULong loads, stores, l1d_misses, l1i_misses, llc_hits;
   ULong straddles;        /* loads and stores whose bytes span two lines: each line is filled */
   ULong load_fills, store_fills, ifetch_fills, writebacks, l1_writebacks, l1_to_memory;
} Thread;

static Cache llc;
static Thread* threads[MAX_THREADS];
static UInt n_threads;
static UInt* tid_index;   /* Valgrind ThreadId -> trace thread number (ids are reused) */
static Thread* cur;

static Thread* new_thread(void)
{
   if (n_threads == MAX_THREADS) VG_(tool_panic)("veiltrace: more than 1024 threads");
   Thread* t = VG_(calloc)("veiltrace.thread", 1, sizeof(Thread));
   t->index = n_threads;
   cache_init(&t->l1d, clo_l1_size, clo_l1_assoc, "--l1-size");
   cache_init(&t->l1i, clo_l1i_size, clo_l1i_assoc, "--l1i-size");
   if (clo_l1_stream) {
      SizeT entries = (t->l1d.sets_mask + 1) * t->l1d.assoc;
      t->l1d_mask = VG_(calloc)("veiltrace.mask", entries, sizeof(UInt));
      t->l1d_own = VG_(calloc)("veiltrace.own", entries, clo_line);
   }
   threads[n_threads++] = t;
   return t;
}

/* ---------------------------------------------------------------- output */

static Int out_fd = -1;
static ULong out_offset, n_records, n_blocks, unreadable_lines;
static UInt blk_n, max_thread_plus1;
static UInt   col_thread[BLOCK_RECORDS];
static UChar  col_kind[BLOCK_RECORDS];
static UInt   col_hits[BLOCK_RECORDS];
static ULong  col_addr[BLOCK_RECORDS];
static ULong  col_insts[BLOCK_RECORDS];
static UChar  col_data[BLOCK_RECORDS * MAX_LINE];

static void put(const void* buf, SizeT len)
{
   const UChar* p = buf;
   while (len > 0) {
      Int k = VG_(write)(out_fd, p, len > (1 << 30) ? (1 << 30) : (Int)len);
      if (k <= 0) {
         VG_(umsg)("veiltrace: writing the trace failed (reader gone?); stopping\n");
         VG_(exit)(1);
      }
      p += k;
      len -= k;
      out_offset += k;
   }
}

static void put_u32(UInt v) { put(&v, 4); }   /* x86-64: already little-endian */
static void put_u64(ULong v) { put(&v, 8); }

static void flush_block(void)
{
   if (blk_n == 0) return;
   UInt n = blk_n, raw = n * (25 + (UInt)clo_line);
   put("BLK ", 4);
   put_u32(0); /* raw codec: Valgrind's tool runtime has no zstd; Veil recompresses */
   put_u32(n);
   put_u32(raw);
   put_u32(raw);
   put(col_thread, 4 * n);
   put(col_kind, n);
   put(col_hits, 4 * n);
   put(col_addr, 8 * n);
   put(col_insts, 8 * n);
   put(col_data, (SizeT)clo_line * n);
   n_blocks++;
   blk_n = 0;
}

/* One page known readable, so most records skip the address-space lookup; forgotten whenever
   the client unmaps or re-protects memory. */
static Addr readable_page = 1;

static void forget_readable(Addr a, SizeT len)
{
   readable_page = 1;
}
static void forget_readable_prot(Addr a, SizeT len, Bool rr, Bool ww, Bool xx)
{
   readable_page = 1;
}

/* A record whose bytes are `data` (line_size of them), or the line in memory now if NULL. */
static void emit_bytes(Thread* t, UChar kind, UWord line, const UChar* data)
{
   UInt n = blk_n;
   Addr addr = line << line_bits;
   col_thread[n] = t->index;
   col_kind[n] = kind;
   col_hits[n] = t->hits_since;
   col_addr[n] = addr;
   col_insts[n] = t->insts - t->insts_at_record;
   t->hits_since = 0;
   t->insts_at_record = t->insts;
   if (t->index + 1 > max_thread_plus1) max_thread_plus1 = t->index + 1;
   UChar* d = col_data + (SizeT)n * clo_line;
   Addr page = addr & ~(Addr)4095;
   if (data) {
      VG_(memcpy)(d, data, clo_line);
   } else if (page == readable_page || VG_(am_is_valid_for_client)(addr, clo_line, VKI_PROT_READ)) {
      readable_page = page;
      VG_(memcpy)(d, (void*)addr, clo_line);
   } else {
      VG_(memset)(d, 0, clo_line);
      unreadable_lines++;
   }
   n_records++;
   if (++blk_n == BLOCK_RECORDS) flush_block();
}

static void emit(Thread* t, UChar kind, UWord line)
{
   emit_bytes(t, kind, line, NULL);
}

/* ---------------------------------------------------------------- the model */

static __inline__ void llc_ref(Thread* t, UWord line, UChar kind)
{
   UWord v;
   if (cache_ref(&llc, line, 0, &v)) {
      t->llc_hits++;
      t->hits_since++;
      return;
   }
   if (kind == K_STORE_FILL) t->store_fills++;
   else t->load_fills++;
   /* The fill first: memory serves the demand read before the buffered writeback. */
   emit(t, kind, line);
   if (v != NO_VICTIM) {
      t->writebacks++;
      emit(t, K_WRITEBACK, v);
   }
}

/* --stream=l1: an L1 event. `kind` is that of the LLC request (load, store, or a dirty victim
   as a writeback); the llc_hits column carries 1 for an instruction-fetch miss (the replay counts
   those fills apart), 0 for a data miss, and for a victim its stored-granule mask. */
static void emit_l1(Thread* t, UChar kind, UWord line, UInt aux)
{
   t->hits_since = aux;
   emit(t, kind, line);
}

/* --stream=l1: the L1D with, beside each line, the granules (line/32 bytes each) this thread
   stored to while holding it and the values it stored, copied right after each store (no other
   thread runs in between). A victim carries those, so the replay applies only this thread's own
   stores to its copy of memory: what other threads stored to the line meanwhile, which the
   line in memory would show depending on the host's order, is theirs to write back. */
static UInt granule_bits;

static __inline__ void own_move(Thread* t, UWord base, UInt to, UInt from)
{
   VG_(memcpy)(t->l1d_own + (base + to) * clo_line, t->l1d_own + (base + from) * clo_line, clo_line);
}

static __inline__ Bool l1d_ref_masked(Thread* t, UWord line, UWord dirty, UInt wmask, UWord* victim,
                                      UInt* vmask)
{
   Cache* c = &t->l1d;
   UWord base = (line & c->sets_mask) * c->assoc;
   UWord* set = c->tags + base;
   UInt* ms = t->l1d_mask + base;
   UWord key = line << 1;
   UInt a = c->assoc;
   for (UInt i = 0; i < a; i++) {
      if ((set[i] | 1) == (key | 1)) {
         UWord tg = set[i] | dirty;
         UInt m = ms[i] | wmask;
         if (i > 0) VG_(memcpy)(t->victim, t->l1d_own + (base + i) * clo_line, clo_line);
         for (UInt j = i; j > 0; j--) { set[j] = set[j - 1]; ms[j] = ms[j - 1]; own_move(t, base, j, j - 1); }
         if (i > 0) VG_(memcpy)(t->l1d_own + base * clo_line, t->victim, clo_line);
         set[0] = tg;
         ms[0] = m;
         return True;
      }
   }
   UWord ev = set[a - 1];
   *vmask = ms[a - 1];
   if (ev != EMPTY && (ev & 1)) VG_(memcpy)(t->victim, t->l1d_own + (base + a - 1) * clo_line, clo_line);
   for (UInt j = a - 1; j > 0; j--) { set[j] = set[j - 1]; ms[j] = ms[j - 1]; own_move(t, base, j, j - 1); }
   VG_(memset)(t->l1d_own + base * clo_line, 0, clo_line);
   set[0] = key | dirty;
   ms[0] = wmask;
   *victim = (ev != EMPTY && (ev & 1)) ? (ev >> 1) : NO_VICTIM;
   return False;
}

/* Granules written by atomics or inside synchronisation calls, whoever wrote them: their value
   at any moment depends on the host's order, including in the snapshot of a line's first touch.
   The summary lists them ("volatile": [[address, mask], ...]) and the replay zeroes them in its
   copy of memory. */
typedef struct { struct _VgHashNode* next; UWord key; UInt mask; } VolatileLine;
static VgHashTable* volatile_lines;

static UInt granules(Addr lo, Addr from, Addr to)
{
   UInt g0 = (from - lo) >> granule_bits, g1 = (to - 1 - lo) >> granule_bits;
   return (g1 >= 31 ? ~0u : ((1u << (g1 + 1)) - 1)) & ~((1u << g0) - 1);
}

static void mark_volatile(Addr a, UWord size)
{
   UWord l = a >> line_bits, e = (a + size - 1) >> line_bits;
   for (; l <= e; l++) {
      Addr lo = l << line_bits, hi = lo + clo_line;
      Addr from = a > lo ? a : lo, to = a + size < hi ? a + size : hi;
      VolatileLine* v = VG_(HT_lookup)(volatile_lines, l);
      if (!v) {
         v = VG_(malloc)("veiltrace.volatile", sizeof(VolatileLine));
         v->key = l;
         v->mask = 0;
         VG_(HT_add_node)(volatile_lines, v);
      }
      v->mask |= granules(lo, from, to);
   }
}

/* `write`: 0 a load, 1 a store, 2 an atomic read-modify-write. An atomic's result depends on
   the other threads' atomics on the same bytes, hence on the host's order: it dirties the line
   but does not count as the thread's own bytes (the replay's memory keeps what it had). */
static void dref_l1(Thread* t, Addr a, UWord size, UWord write)
{
   UWord l = a >> line_bits, e = (a + size - 1) >> line_bits;
   for (; l <= e; l++) {
      UInt wmask = 0;
      Addr lo = l << line_bits, hi = lo + clo_line;
      Addr from = a > lo ? a : lo, to = a + size < hi ? a + size : hi;
      if (write == 1) wmask = granules(lo, from, to);
      UWord v;
      UInt vmask = 0;
      if (LIKELY(l1d_ref_masked(t, l, write != 0, wmask, &v, &vmask))) continue;
      t->l1d_misses++;
      if (v != NO_VICTIM) {
         t->l1_writebacks++;
         t->hits_since = vmask;
         emit_bytes(t, K_WRITEBACK, v, t->victim);
      }
      emit_l1(t, write ? K_STORE_FILL : K_LOAD_FILL, l, 0);
   }
}

/* Right after a store (the access helper ran before it, so a store fill carries the line as it
   was): the stored bytes into the line's own-bytes copy; the line is its set's MRU entry. */
static VG_REGPARM(2) void on_stored(Addr a, UWord size)
{
   Thread* t = cur;
   if (UNLIKELY(t->sync_ret)) return;
   UWord l = a >> line_bits, e = (a + size - 1) >> line_bits;
   for (; l <= e; l++) {
      UWord base = (l & t->l1d.sets_mask) * t->l1d.assoc;
      if ((t->l1d.tags[base] | 1) != ((l << 1) | 1)) continue;
      Addr lo = l << line_bits, hi = lo + clo_line;
      Addr from = a > lo ? a : lo, to = a + size < hi ? a + size : hi;
      VG_(memcpy)(t->l1d_own + base * clo_line + (from - lo), (void*)from, to - from);
   }
}

static __inline__ void dref(Thread* t, UWord line, UWord write)
{
   UWord v;
   if (LIKELY(cache_ref(&t->l1d, line, write, &v))) return;
   t->l1d_misses++;
   if (v != NO_VICTIM) {
      t->l1_writebacks++;
      if (!cache_mark_dirty(&llc, v)) {
         t->l1_to_memory++;
         t->writebacks++;
         emit(t, K_WRITEBACK, v);
      }
   }
   llc_ref(t, line, write ? K_STORE_FILL : K_LOAD_FILL);
}

static VG_REGPARM(2) void on_load(Addr a, UWord size)
{
   Thread* t = cur;
   if (UNLIKELY(t->sync_ret)) return;
   t->loads++;
   if (UNLIKELY(((a ^ (a + size - 1)) >> line_bits) != 0)) t->straddles++;
   if (clo_l1_stream) { dref_l1(t, a, size, 0); return; }
   UWord l = a >> line_bits, e = (a + size - 1) >> line_bits;
   for (; l <= e; l++) dref(t, l, 0);
}

static VG_REGPARM(2) void on_store(Addr a, UWord size)
{
   Thread* t = cur;
   if (UNLIKELY(t->sync_ret)) {
      if (clo_l1_stream) mark_volatile(a, size);
      return;
   }
   t->stores++;
   if (UNLIKELY(((a ^ (a + size - 1)) >> line_bits) != 0)) t->straddles++;
   if (clo_l1_stream) { dref_l1(t, a, size, 1); return; }
   UWord l = a >> line_bits, e = (a + size - 1) >> line_bits;
   for (; l <= e; l++) dref(t, l, 1);
}

static VG_REGPARM(2) void on_modify(Addr a, UWord size)
{
   Thread* t = cur;
   if (clo_l1_stream) mark_volatile(a, size);
   if (clo_l1_stream && LIKELY(t->sync_ret == 0)) {
      t->loads++;
      t->stores++;
      if (UNLIKELY(((a ^ (a + size - 1)) >> line_bits) != 0)) t->straddles += 2;
      dref_l1(t, a, size, 0);
      dref_l1(t, a, size, 2);
      return;
   }
   on_load(a, size);
   on_store(a, size);
}

/* Inside a synchronisation call (below) until the instruction it returns to: a fetch group
   starts there, since a return ends the superblock. */
static __inline__ Bool in_sync(Thread* t, Addr a)
{
   if (LIKELY(t->sync_ret == 0)) return False;
   if (a != t->sync_ret) return True;
   t->sync_ret = 0;
   return False;
}

static VG_REGPARM(3) void on_ifetch(Addr a, Addr last, UWord n)
{
   Thread* t = cur;
   if (in_sync(t, a)) return;
   t->insts += n;
   UWord l = a >> line_bits, e = last >> line_bits;
   for (; l <= e; l++) {
      UWord v;
      if (LIKELY(cache_ref(&t->l1i, l, 0, &v))) continue;
      t->l1i_misses++;
      if (clo_l1_stream) {
         emit_l1(t, K_LOAD_FILL, l, 1);
         continue;
      }
      t->ifetch_fills++;
      llc_ref(t, l, K_LOAD_FILL);
   }
}

/* Stands in for the CPU's time-stamp counter (glibc's loader stores one at startup): the
   reading thread's own clock in instructions (its start plus what it retired), which does not
   depend on how Valgrind interleaves threads, so runs repeat exactly. */
static ULong virtual_tsc(void)
{
   return cur ? cur->start + cur->insts : 0;
}

static VG_REGPARM(2) void on_icount(Addr a, UWord n)
{
   if (!in_sync(cur, a)) cur->insts += n;
}

/* Calls whose path depends on which thread the host ran first (the last thread at a barrier
   wakes the others, a join finds the thread finished or waits, a lock is free or contended;
   thread creation takes locks the threads already running may hold):
   their instructions and memory accesses are left out of every thread's trace, so that each
   thread's own stream repeats run to run. Valgrind's scheduler, not the program, decides them. */
static const HChar* const sync_calls[] = {
   "pthread_create", "pthread_exit", "pthread_barrier_wait", "pthread_join", "pthread_clockjoin_np",
   "pthread_timedjoin_np", "pthread_tryjoin_np", "pthread_mutex_lock", "pthread_mutex_trylock", "pthread_mutex_timedlock",
   "pthread_mutex_clocklock", "pthread_mutex_unlock", "pthread_cond_wait", "pthread_cond_timedwait",
   "pthread_cond_clockwait", "pthread_cond_signal", "pthread_cond_broadcast",
   "pthread_rwlock_rdlock", "pthread_rwlock_wrlock", "pthread_rwlock_unlock", "pthread_spin_lock",
   "pthread_spin_trylock", "pthread_spin_unlock", "pthread_once", "sem_wait", "sem_timedwait",
   "sem_trywait", "sem_post", "sched_yield", NULL };

static Bool is_sync_call(Addr a)
{
   const HChar* name;
   if (!VG_(get_fnname_if_entry)(VG_(current_DiEpoch)(), a, &name)) return False;
   SizeT k = 0;
   while (name[k] && name[k] != '@') k++;
   for (Int i = 0; sync_calls[i]; i++)
      if (VG_(strlen)(sync_calls[i]) == k && VG_(strncmp)(name, sync_calls[i], k) == 0) return True;
   return False;
}

/* At a synchronisation call's first instruction: the return address is on top of the stack. */
static VG_REGPARM(1) void on_sync_enter(Addr sp)
{
   Thread* t = cur;
   if (t->sync_ret == 0 && clo_skip_sync) t->sync_ret = *(Addr*)sp;
}

/* ---------------------------------------------------------------- threads */

static void on_thread_create(ThreadId parent, ThreadId child)
{
   Thread* t = new_thread();
   /* The creator's clock at the clone: deterministic, unlike the host time it happens at. */
   if (parent != VG_INVALID_THREADID && n_threads > 1) {
      Thread* p = threads[tid_index[parent]];
      t->start = p->start + p->insts;
   }
   tid_index[child] = t->index;
}

static void on_start_client_code(ThreadId tid, ULong blocks)
{
   cur = threads[tid_index[tid]];
}

/* ---------------------------------------------------------------- instrumentation */

static void add_call(IRSB* sb, const HChar* name, void* fn, Int regparms, IRExpr** args, IRExpr* guard)
{
   IRDirty* d = unsafeIRDirty_0_N(regparms, name, VG_(fnptr_to_fnentry)(fn), args);
   if (guard) d->guard = guard;
   addStmtToIRSB(sb, IRStmt_Dirty(d));
}

static void add_access(IRSB* sb, Int how, IRExpr* addr, Int size, IRExpr* guard)
{
   IRExpr** args = mkIRExprVec_2(addr, mkIRExpr_HWord(size));
   if (how == 0) add_call(sb, "on_load", on_load, 2, args, guard);
   else if (how == 1) add_call(sb, "on_store", on_store, 2, args, guard);
   else add_call(sb, "on_modify", on_modify, 2, args, guard);
}

/* --stream=l1: after a store, copies the bytes it wrote (see dref_l1). */
static void add_stored(IRSB* sb, IRExpr* addr, Int size, IRExpr* guard)
{
   if (clo_l1_stream)
      add_call(sb, "on_stored", on_stored, 2, mkIRExprVec_2(addr, mkIRExpr_HWord(size)), guard);
}

static Int loadg_size(IRLoadGOp op)
{
   switch (op) {
   case ILGop_IdentV128: return 16;
   case ILGop_Ident64: return 8;
   case ILGop_Ident32: return 4;
   case ILGop_16Uto32: case ILGop_16Sto32: return 2;
   case ILGop_8Uto32: case ILGop_8Sto32: return 1;
   default: VG_(tool_panic)("veiltrace: unknown guarded load");
   }
}

static IRSB* vt_instrument(VgCallbackClosure* closure, IRSB* in, const VexGuestLayout* layout,
                           const VexGuestExtents* vge, const VexArchInfo* archinfo_host,
                           IRType gWordTy, IRType hWordTy)
{
   if (gWordTy != hWordTy) VG_(tool_panic)("veiltrace: host and guest word sizes differ");
   IRSB* out = deepCopyIRSBExceptStmts(in);
   Int i = 0;
   while (i < in->stmts_used && in->stmts[i]->tag != Ist_IMark) addStmtToIRSB(out, in->stmts[i++]);

   IRDirty* group = NULL;   /* the open fetch group's call, its arguments patched as it grows */
   Addr g_line = 0, g_first = 0, g_last = 0;
   UWord g_n = 0;
#define CLOSE_GROUP()                                                        \
   do {                                                                      \
      if (group) {                                                           \
         group->args[1] = mkIRExpr_HWord(g_last);                           \
         group->args[2] = mkIRExpr_HWord(g_n);                              \
         group = NULL;                                                       \
      }                                                                      \
   } while (0)

   for (; i < in->stmts_used; i++) {
      IRStmt* st = in->stmts[i];
      if (!st || st->tag == Ist_NoOp) continue;
      switch (st->tag) {
      case Ist_IMark: {
         Addr a = st->Ist.IMark.addr;
         Addr last = a + (st->Ist.IMark.len ? st->Ist.IMark.len : 1) - 1;
         if (clo_skip_sync && is_sync_call(a)) {
            CLOSE_GROUP();
            IRTemp sp = newIRTemp(out->tyenv, Ity_I64);
            addStmtToIRSB(out, IRStmt_WrTmp(sp, IRExpr_Get(OFFSET_amd64_RSP, Ity_I64)));
            add_call(out, "on_sync_enter", on_sync_enter, 1, mkIRExprVec_1(IRExpr_RdTmp(sp)), NULL);
         }
         if (clo_ifetch) {
            Bool one_line = (a >> line_bits) == (last >> line_bits);
            if (group && one_line && (a >> line_bits) == g_line && (g_first >> line_bits) == (g_last >> line_bits)) {
               g_n++;
               g_last = last;
            } else {
               CLOSE_GROUP();
               IRExpr** args = mkIRExprVec_3(mkIRExpr_HWord(a), mkIRExpr_HWord(last), mkIRExpr_HWord(1));
               group = unsafeIRDirty_0_N(3, "on_ifetch", VG_(fnptr_to_fnentry)(on_ifetch), args);
               addStmtToIRSB(out, IRStmt_Dirty(group));
               g_line = a >> line_bits;
               g_first = a;
               g_last = last;
               g_n = 1;
            }
         } else {
            IRExpr** args = mkIRExprVec_2(mkIRExpr_HWord(a), mkIRExpr_HWord(1));
            add_call(out, "on_icount", on_icount, 2, args, NULL);
         }
         addStmtToIRSB(out, st);
         break;
      }
      case Ist_WrTmp: {
         IRExpr* e = st->Ist.WrTmp.data;
         if (e->tag == Iex_Load)
            add_access(out, 0, e->Iex.Load.addr, sizeofIRType(e->Iex.Load.ty), NULL);
         addStmtToIRSB(out, st);
         break;
      }
      case Ist_Store: {
         IRExpr* d = st->Ist.Store.data;
         Int size = sizeofIRType(typeOfIRExpr(in->tyenv, d));
         add_access(out, 1, st->Ist.Store.addr, size, NULL);
         addStmtToIRSB(out, st);
         add_stored(out, st->Ist.Store.addr, size, NULL);
         break;
      }
      case Ist_StoreG: {
         IRStoreG* sg = st->Ist.StoreG.details;
         Int size = sizeofIRType(typeOfIRExpr(in->tyenv, sg->data));
         add_access(out, 1, sg->addr, size, sg->guard);
         addStmtToIRSB(out, st);
         add_stored(out, sg->addr, size, sg->guard);
         break;
      }
      case Ist_LoadG: {
         IRLoadG* lg = st->Ist.LoadG.details;
         add_access(out, 0, lg->addr, loadg_size(lg->cvt), lg->guard);
         addStmtToIRSB(out, st);
         break;
      }
      case Ist_Dirty: {
         IRDirty* d = st->Ist.Dirty.details;
         if (d->cee && VG_(strcmp)(d->cee->name, "amd64g_dirtyhelper_RDTSC") == 0 && d->nFxState == 0)
            d->cee = mkIRCallee(0, "virtual_tsc", VG_(fnptr_to_fnentry)(virtual_tsc));
         if (d->mFx != Ifx_None) {
            Int how = d->mFx == Ifx_Read ? 0 : d->mFx == Ifx_Write ? 1 : 2;
            add_access(out, how, d->mAddr, d->mSize, NULL);
         }
         addStmtToIRSB(out, st);
         if (d->mFx == Ifx_Write) add_stored(out, d->mAddr, d->mSize, NULL);
         break;
      }
      case Ist_CAS: {
         IRCAS* cas = st->Ist.CAS.details;
         Int size = sizeofIRType(typeOfIRExpr(in->tyenv, cas->dataLo)) * (cas->dataHi ? 2 : 1);
         add_access(out, 2, cas->addr, size, NULL);
         addStmtToIRSB(out, st);
         break;
      }
      case Ist_LLSC: {
         if (st->Ist.LLSC.storedata == NULL)
            add_access(out, 0, st->Ist.LLSC.addr,
                       sizeofIRType(typeOfIRTemp(in->tyenv, st->Ist.LLSC.result)), NULL);
         else
            add_access(out, 1, st->Ist.LLSC.addr,
                       sizeofIRType(typeOfIRExpr(in->tyenv, st->Ist.LLSC.storedata)), NULL);
         addStmtToIRSB(out, st);
         if (st->Ist.LLSC.storedata != NULL)
            add_stored(out, st->Ist.LLSC.addr, sizeofIRType(typeOfIRExpr(in->tyenv, st->Ist.LLSC.storedata)), NULL);
         break;
      }
      case Ist_Exit:
         /* Instructions after a side exit may not run: they start a new fetch group. */
         CLOSE_GROUP();
         addStmtToIRSB(out, st);
         break;
      default:
         addStmtToIRSB(out, st);
      }
   }
   CLOSE_GROUP();
#undef CLOSE_GROUP
   return out;
}

/* ---------------------------------------------------------------- JSON */

typedef struct { HChar* p; SizeT n, cap; } Buf;

static void buf_add(Buf* b, const HChar* s, SizeT k)
{
   if (b->n + k + 1 > b->cap) {
      b->cap = (b->n + k + 1) * 2;
      b->p = VG_(realloc)("veiltrace.json", b->p, b->cap);
   }
   VG_(memcpy)(b->p + b->n, s, k);
   b->n += k;
   b->p[b->n] = 0;
}

static void buf_fmt(Buf* b, const HChar* fmt, ...) PRINTF_CHECK(2, 3);
static void buf_fmt(Buf* b, const HChar* fmt, ...)
{
   HChar tmp[512];
   va_list vargs;
   va_start(vargs, fmt);
   UInt k = VG_(vsnprintf)(tmp, sizeof tmp, fmt, vargs);
   va_end(vargs);
   buf_add(b, tmp, k < sizeof tmp ? k : sizeof tmp - 1);
}

static void buf_str(Buf* b, const HChar* s)
{
   buf_add(b, "\"", 1);
   for (; *s; s++) {
      UChar c = (UChar)*s;
      if (c == '"' || c == '\\') { buf_add(b, "\\", 1); buf_add(b, s, 1); }
      else if (c < 0x20) buf_fmt(b, "\\u%04x", c);
      else buf_add(b, s, 1);
   }
   buf_add(b, "\"", 1);
}

static void write_header(void)
{
   Buf b = { 0 };
   buf_add(&b, "{\"workload\":\"\",\"program\":", 25);
   buf_str(&b, VG_(args_the_exename) ? VG_(args_the_exename) : "");
   buf_add(&b, ",\"args\":[", 9);
   for (Word i = 0; i < VG_(sizeXA)(VG_(args_for_client)); i++) {
      if (i) buf_add(&b, ",", 1);
      buf_str(&b, *(HChar**)VG_(indexXA)(VG_(args_for_client), i));
   }
   buf_fmt(&b, "],\"input_hash\":\"\",\"l1\":{\"size\":%lld,\"assoc\":%lld},"
               "\"llc\":{\"size\":%lld,\"assoc\":%lld},\"line_size\":%lld,",
           clo_l1_size, clo_l1_assoc, clo_llc_size, clo_llc_assoc, clo_line);
   buf_fmt(&b, "\"tool_version\":\"%s\",\"threads\":0,\"extra\":{\"stream\":\"%s\",\"l1i\":{\"size\":%lld,\"assoc\":%lld},"
               "\"ifetch\":%s,\"skip_sync\":%s,\"l1_policy\":\"private per thread, write-back, write-allocate, LRU\","
               "\"llc_policy\":\"shared, write-back, write-allocate, LRU; non-inclusive\"}}",
           TOOL_VERSION, clo_l1_stream ? "l1" : "llc", clo_l1i_size, clo_l1i_assoc, clo_ifetch ? "true" : "false", clo_skip_sync ? "true" : "false");
   put("VEILTRC\0", 8);
   put_u32(1);
   put_u32((UInt)b.n);
   put(b.p, b.n);
   VG_(free)(b.p);
}

static void write_end(void)
{
   flush_block();
   Buf b = { 0 };
   buf_fmt(&b, "{\"records\":%llu,\"blocks\":%llu,\"threads\":%u,\"stats\":{\"tool\":\"%s\","
               "\"unreadable_lines\":%llu,\"threads\":[",
           n_records, n_blocks, max_thread_plus1, TOOL_VERSION, unreadable_lines);
   for (UInt i = 0; i < n_threads; i++) {
      Thread* t = threads[i];
      buf_fmt(&b, "%s{\"start\":%llu,\"insts\":%llu,\"loads\":%llu,\"stores\":%llu,\"l1d_misses\":%llu,"
                  "\"l1i_misses\":%llu,\"llc_hits\":%llu,",
              i ? "," : "", t->start, t->insts, t->loads, t->stores, t->l1d_misses, t->l1i_misses, t->llc_hits);
      buf_fmt(&b, "\"load_fills\":%llu,\"store_fills\":%llu,\"ifetch_fills\":%llu,\"writebacks\":%llu,"
                  "\"l1_writebacks\":%llu,\"l1_writebacks_to_memory\":%llu,\"straddles\":%llu}",
              t->load_fills, t->store_fills, t->ifetch_fills, t->writebacks, t->l1_writebacks,
              t->l1_to_memory, t->straddles);
   }
   buf_add(&b, "]", 1);
   if (clo_l1_stream) {
      buf_add(&b, ",\"volatile\":[", 13);
      VG_(HT_ResetIter)(volatile_lines);
      Bool first = True;
      for (VolatileLine* v; (v = VG_(HT_Next)(volatile_lines)) != NULL; first = False)
         buf_fmt(&b, "%s[%lu,%u]", first ? "" : ",", v->key << line_bits, v->mask);
      buf_add(&b, "]", 1);
   }
   buf_add(&b, "}}", 2);
   ULong at = out_offset;
   put("END ", 4);
   put_u32((UInt)b.n);
   put(b.p, b.n);
   put_u64(at);
   put("VEILEND\0", 8);
   VG_(free)(b.p);
}

/* ---------------------------------------------------------------- setup */

/* The kernel's 16 random bytes (AT_RANDOM) seed glibc's stack canary and pointer guard, which
   then show up in memory (mangled pointers in jmp_bufs, atexit lists): fixed bytes make two runs
   of the same program leave the same line contents. */
static void fix_at_random(void)
{
   for (UWord* a = VG_(client_auxv); a && a[0] != AUXV_AT_NULL; a += 2)
      if (a[0] == AUXV_AT_RANDOM && VG_(am_is_valid_for_client)(a[1], 16, VKI_PROT_WRITE))
         for (Int i = 0; i < 16; i++) ((UChar*)a[1])[i] = (UChar)(0x5a + 17 * i);
}

/* getrandom() feeds memory with bytes that differ every run (glibc's malloc keys freed chunks
   with one, tcache_key): the tool overwrites what it returned with a fixed sequence per thread
   (splitmix64 from the thread's number), like AT_RANDOM. */
static void on_pre_syscall(ThreadId tid, UInt sysno, UWord* args, UInt nargs) {}

/* Clocks: Valgrind gives the client no vDSO, so clock_gettime() and gettimeofday() are system
   calls, and the tool overwrites what they return with the calling thread's instruction clock
   (one nanosecond per instruction, as virtual_tsc) from a fixed epoch: realtime clocks start at
   2001-09-09 01:46:40 UTC (10^9 s), CPU-time clocks at 0, the others at 1000 s. time() returns
   its value in a register the tool cannot change after the call (docs/trace.md). */
#define REALTIME_EPOCH 1000000000ULL
#define MONOTONIC_EPOCH 1000ULL

static void fixed_clock(ThreadId tid, UInt sysno, UWord* args)
{
   Thread* t = threads[tid_index[tid]];
   ULong ns = t->start + t->insts;
   UWord clk = sysno == __NR_gettimeofday ? 0 : args[0];
   ULong base = (clk == 0 || clk == 5 || clk == 8 || clk == 11) ? REALTIME_EPOCH
              : (clk == 2 || clk == 3) ? 0 : MONOTONIC_EPOCH;
   ULong sec = base + ns / 1000000000ULL, sub = ns % 1000000000ULL;
   if (sysno == __NR_clock_gettime) {
      struct vki_timespec* ts = (struct vki_timespec*)args[1];
      if (ts && VG_(am_is_valid_for_client)((Addr)ts, sizeof *ts, VKI_PROT_WRITE)) {
         ts->tv_sec = (Long)sec;
         ts->tv_nsec = (Long)sub;
      }
   } else {
      struct vki_timeval* tv = (struct vki_timeval*)args[0];
      if (tv && VG_(am_is_valid_for_client)((Addr)tv, sizeof *tv, VKI_PROT_WRITE)) {
         tv->tv_sec = (Long)sec;
         tv->tv_usec = (Long)(sub / 1000);
      }
   }
}

static void on_post_syscall(ThreadId tid, UInt sysno, UWord* args, UInt nargs, SysRes res)
{
   if ((sysno == __NR_clock_gettime || sysno == __NR_gettimeofday) && !sr_isError(res)) {
      fixed_clock(tid, sysno, args);
      return;
   }
   if (sysno != __NR_getrandom || sr_isError(res) || sr_Res(res) == 0) return;
   Thread* t = threads[tid_index[tid]];
   UChar* p = (UChar*)args[0];
   SizeT n = sr_Res(res);
   if (!VG_(am_is_valid_for_client)((Addr)p, n, VKI_PROT_WRITE)) return;
   for (SizeT i = 0; i < n; i += 8) {
      ULong z = (t->random_state += 0x9E3779B97F4A7C15ULL + t->index);
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
      z ^= z >> 31;
      for (SizeT k = 0; k < 8 && i + k < n; k++) p[i + k] = (UChar)(z >> (8 * k));
   }
}

static void vt_post_clo_init(void)
{
   if (clo_line & (clo_line - 1))
      VG_(fmsg_bad_option)("--line-size", "line size %lld is not a power of two\n", clo_line);
   for (line_bits = 0; (1LL << line_bits) < clo_line; line_bits++) {}
   granule_bits = line_bits > 5 ? line_bits - 5 : 0;
   if (clo_l1i_size < 0) clo_l1i_size = clo_l1_size;
   if (clo_l1i_assoc < 0) clo_l1i_assoc = clo_l1_assoc;
   cache_init(&llc, clo_llc_size, clo_llc_assoc, "--llc-size");
   if ((clo_out == NULL) == (clo_out_fd < 0))
      VG_(fmsg_bad_option)("--out", "give exactly one of --out=FILE and --out-fd=N\n");
   Int fd;
   if (clo_out) {
      SysRes r = VG_(open)(clo_out, VKI_O_CREAT | VKI_O_TRUNC | VKI_O_WRONLY, 0644);
      if (sr_isError(r)) VG_(fmsg_bad_option)("--out", "cannot write %s\n", clo_out);
      fd = sr_Res(r);
   } else {
      fd = (Int)clo_out_fd;
   }
   out_fd = VG_(safe_fd)(fd);
   if (out_fd < 0) VG_(fmsg_bad_option)("--out-fd", "descriptor %lld is not usable\n", clo_out_fd);
   tid_index = VG_(calloc)("veiltrace.tids", VG_N_THREADS, sizeof(UInt));
   volatile_lines = VG_(HT_construct)("veiltrace.volatile");
   /* Threads, the main one included, arrive through pre_thread_ll_create. */
   fix_at_random();
   write_header();
}

static void vt_fini(Int exitcode)
{
   write_end();
   VG_(close)(out_fd);
   if (VG_(clo_verbosity) > 1) {
      ULong acc = 0;
      for (UInt i = 0; i < n_threads; i++) acc += threads[i]->loads + threads[i]->stores;
      VG_(umsg)("veiltrace: %llu data accesses, %llu records\n", acc, n_records);
   }
}

static void vt_pre_clo_init(void)
{
   VG_(details_name)("veiltrace");
   VG_(details_version)("1.0");
   VG_(details_description)("Veil's LLC fill/writeback tracer with line contents");
   VG_(details_copyright_author)("Copyright (C) 2026 the Veil authors; GPL-2.0-or-later.");
   VG_(details_bug_reports_to)("the Veil repository");
   VG_(details_avg_translation_sizeB)(275);
   VG_(basic_tool_funcs)(vt_post_clo_init, vt_instrument, vt_fini);
   VG_(needs_command_line_options)(vt_process_cmd_line_option, vt_print_usage, vt_print_debug_usage);
   VG_(track_pre_thread_ll_create)(on_thread_create);
   VG_(track_start_client_code)(on_start_client_code);
   VG_(needs_syscall_wrapper)(on_pre_syscall, on_post_syscall);
   VG_(track_die_mem_munmap)(forget_readable);
   VG_(track_change_mem_mprotect)(forget_readable_prot);
}

VG_DETERMINE_INTERFACE_VERSION(vt_pre_clo_init)
