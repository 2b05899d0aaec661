/*
 * A qemu TCG plugin (qemu 7.2, plugin API version 1) that counts every executed guest
 * instruction by class, for Veil's ARMv7 client counts (python/veil/he/taco/armv7.py):
 *
 *   mul     integer multiplies: MUL/MLA/MLS and the long and halfword forms (UMULL, UMLAL,
 *           SMULL, SMLAL, UMAAL, SMULxy, SMLAxy, SMMUL, ...)
 *   ldst    loads and stores: LDR/STR and their byte, halfword, doubleword and exclusive forms,
 *           LDM/STM, PUSH/POP, VFP/NEON loads and stores (VLDR/VSTR/VLDM/VSTM/VPUSH/VPOP,
 *           VLDn/VSTn)
 *   branch  B, BL, BX, BLX, CBZ/CBNZ, TBB/TBH (a write to PC by another instruction counts in
 *           that instruction's class)
 *   alu     everything else, VFP/NEON arithmetic included
 *
 * Classes come from the mnemonic of qemu's own disassembly (capstone), so A32 and the
 * Thumb-2 code of a Debian armhf libc are classified alike. Each instruction gets an inline
 * counter increment at translation, so an instruction is counted each time it is executed
 * (a conditional instruction whose condition fails is still counted, as the CPU issues it).
 *
 * Usage: qemu-arm -plugin ./libinsn_count.so,out=FILE prog args...
 * FILE gets one line: alu mul ldst branch total.
 *
 * The few API functions used are declared here (qemu's C ABI for plugin API version 1, as in
 * qemu 7.2's include/qemu/qemu-plugin.h), so building needs no qemu source.
 *
 * Copyright Veil contributors. Licensed under the Apache License, Version 2.0.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
                                           void (*cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb));
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, void (*cb)(qemu_plugin_id_t id, void *userdata),
                                    void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
char *qemu_plugin_insn_disas(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_vcpu_insn_exec_inline(struct qemu_plugin_insn *insn, enum qemu_plugin_op op,
                                                void *ptr, uint64_t imm);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

enum { ALU, MUL, LDST, BRANCH, NCLASS };
static uint64_t counts[NCLASS];
static char out_path[4096];

static const char *const MUL_PREFIX[] = {"mul", "mla", "mls", "umull", "umlal", "umaal", "smul", "smla",
                                         "smls", "smmul", "smmla", "smmls", "smuad", "smusd", NULL};
static const char *const LDST_PREFIX[] = {"ldr", "str", "ldm", "stm", "push", "pop", "vldr", "vstr", "vldm",
                                          "vstm", "vpush", "vpop", "vld1", "vld2", "vld3", "vld4", "vst1",
                                          "vst2", "vst3", "vst4", "swp", NULL};
static const char *const BRANCH_NAME[] = {"b", "bl", "bx", "blx", "bxj", "cbz", "cbnz", "tbb", "tbh", NULL};
static const char *const COND[] = {"eq", "ne", "cs", "hs", "cc", "lo", "mi", "pl", "vs",
                                   "vc", "hi", "ls", "ge", "lt", "gt", "le", "al", NULL};

static int has_prefix(const char *s, const char *const *list)
{
    for (; *list; list++) {
        if (strncmp(s, *list, strlen(*list)) == 0) {
            return 1;
        }
    }
    return 0;
}

static int in_list(const char *s, size_t len, const char *const *list)
{
    for (; *list; list++) {
        if (strlen(*list) == len && strncmp(s, *list, len) == 0) {
            return 1;
        }
    }
    return 0;
}

/* "b", "beq", "bleq", "b.w", "bxne": a branch name, optionally followed by a condition */
static int is_branch(const char *m)
{
    size_t n = strlen(m);
    if (in_list(m, n, BRANCH_NAME)) {
        return 1;
    }
    return n > 2 && in_list(m + n - 2, 2, COND) && in_list(m, n - 2, BRANCH_NAME);
}

static int classify(const char *disas)
{
    char m[32];
    size_t i = 0;
    if (!disas) {
        return ALU;
    }
    while (*disas && isspace((unsigned char)*disas)) {
        disas++;
    }
    /* the mnemonic, lower case, without a ".w"/".n"/".f64"/".32" qualifier */
    while (disas[i] && !isspace((unsigned char)disas[i]) && disas[i] != '.' && i + 1 < sizeof m) {
        m[i] = (char)tolower((unsigned char)disas[i]);
        i++;
    }
    m[i] = 0;
    if (is_branch(m)) {
        return BRANCH;
    }
    if (has_prefix(m, MUL_PREFIX)) {
        return MUL;
    }
    if (has_prefix(m, LDST_PREFIX)) {
        return LDST;
    }
    return ALU;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb);
    (void)id;
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        char *d = qemu_plugin_insn_disas(insn);
        int c = classify(d);
        free(d);
        qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &counts[c], 1);
    }
}

static void at_exit(qemu_plugin_id_t id, void *userdata)
{
    FILE *f = out_path[0] ? fopen(out_path, "w") : stderr;
    (void)id;
    (void)userdata;
    if (!f) {
        perror(out_path);
        return;
    }
    fprintf(f, "%llu %llu %llu %llu %llu\n", (unsigned long long)counts[ALU], (unsigned long long)counts[MUL],
            (unsigned long long)counts[LDST], (unsigned long long)counts[BRANCH],
            (unsigned long long)(counts[ALU] + counts[MUL] + counts[LDST] + counts[BRANCH]));
    if (f != stderr) {
        fclose(f);
    }
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const void *info, int argc,
                                                               char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0) {
            snprintf(out_path, sizeof out_path, "%s", argv[i] + 4);
        } else {
            fprintf(stderr, "insn_count: unknown argument %s (only out=FILE)\n", argv[i]);
            return -1;
        }
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
