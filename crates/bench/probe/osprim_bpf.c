// SPDX-License-Identifier: MIT OR GPL-2.0
//
// osprim's BPF programs for `interpose.ebpf`: two raw-tracepoint programs for the `sys_enter`
// tracepoint, which the kernel fires at the entry of every system call of every task while a
// program is attached (include/trace/events/syscalls.h; its arguments are the entry's
// `struct pt_regs *` and the call's number).
//
// - `osprim_empty` returns 0 at once: what attaching anything at system-call entry costs.
// - `osprim_count` does what an observability agent does for each event: it reads the call's
//   number and the calling process, and counts, in a per-CPU array, the calls whose number is
//   `config[1]` made by the process whose tgid is `config[0]` (0: count nothing yet). Where
//   osprim runs in a PID namespace other than the initial one, `config[2]` and `config[3]`
//   hold the device and inode of that namespace, and the tgid is the one it sees
//   (`bpf_get_ns_current_pid_tgid`); otherwise they are 0 and the kernel's own tgid is used
//   (`bpf_get_current_pid_tgid`).
//
// Built by crates/bench/build.rs with `clang -O2 -g -target bpf -c` (the `-g` gives the BTF the
// map definitions need) and loaded by crates/bench/src/ebpf.rs through aya. It uses no header:
// the few definitions it needs are those of include/uapi/linux/bpf.h, written out below.

typedef unsigned int u32;
typedef unsigned long long u64;

#define SEC(name) __attribute__((section(name), used))
// BTF-defined maps, as libbpf's bpf_helpers.h spells them.
#define __uint(name, val) int (*name)[val]
#define __type(name, val) __typeof__(val) *name

// enum bpf_map_type
#define BPF_MAP_TYPE_ARRAY 2
#define BPF_MAP_TYPE_PERCPU_ARRAY 6

// The context of a raw tracepoint program: the tracepoint's arguments, as u64s.
struct bpf_raw_tracepoint_args {
    u64 args[0];
};

struct bpf_pidns_info {
    u32 pid;
    u32 tgid;
};

// Helpers, by their numbers in enum bpf_func_id.
static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static u64 (*bpf_get_current_pid_tgid)(void) = (void *)14;
static long (*bpf_get_ns_current_pid_tgid)(u64 dev, u64 ino, struct bpf_pidns_info *nsdata,
                                           u32 size) = (void *)120;

// What `osprim_count` counts: [tgid, system call number, PID namespace device, its inode].
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, u32);
    __type(value, u64[4]);
} osprim_config SEC(".maps");

// The calls counted, one u64 per CPU.
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, u32);
    __type(value, u64);
} osprim_counts SEC(".maps");

SEC("raw_tracepoint/sys_enter")
int osprim_empty(struct bpf_raw_tracepoint_args *ctx)
{
    return 0;
}

SEC("raw_tracepoint/sys_enter")
int osprim_count(struct bpf_raw_tracepoint_args *ctx)
{
    u32 zero = 0;
    u64 *cfg = bpf_map_lookup_elem(&osprim_config, &zero);
    if (!cfg || cfg[0] == 0 || ctx->args[1] != cfg[1])
        return 0;
    u64 tgid;
    if (cfg[3] == 0) {
        tgid = bpf_get_current_pid_tgid() >> 32;
    } else {
        struct bpf_pidns_info ns = {};
        if (bpf_get_ns_current_pid_tgid(cfg[2], cfg[3], &ns, sizeof(ns)))
            return 0;
        tgid = ns.tgid;
    }
    if (tgid != cfg[0])
        return 0;
    u64 *count = bpf_map_lookup_elem(&osprim_counts, &zero);
    if (count)
        *count += 1;
    return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
